// A program's own LB policy and resolver scheme, registered through the
// public API alone (no ringrpc-internal header), and used by channels to
// two real grpc++ backends: the policy's picks and call tracking, its
// config errors, the scheme's target parts and its typed policy.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ringrpc/ringrpc.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/server_process.h"

namespace {

using ringrpc::ConnectivityState;
using ringrpc::LbAddressList;
using ringrpc::LbPick;
using ringrpc::test::ring::TestService;
namespace test = ringrpc::test;

// "last_ready": the last READY address, else the last one; each call it
// picks is counted when it starts and when it ends. Config:
// {"skipFailing": bool}, anything else is an error.
struct Counts {
  std::atomic<int> picks{0}, started{0}, finished{0};
};
Counts& TheCounts() {
  static Counts c;
  return c;
}

class LastReadyTracker final : public ringrpc::LbCallTracker {
 public:
  void Start() override { ++TheCounts().started; }
  void Finish() override { ++TheCounts().finished; }
};

class LastReadyPicker final : public ringrpc::LbPicker {
 public:
  std::optional<LbPick> Pick(const LbAddressList& a) override {
    ++TheCounts().picks;
    size_t pick = a.size() - 1;
    for (size_t i = a.size(); i-- > 0;) {
      if (a.state(i) == GRPC_CHANNEL_READY) {
        pick = i;
        break;
      }
    }
    return LbPick{.index = pick, .tracker = std::make_unique<LastReadyTracker>()};
  }
};

class LastReadyConfig final : public ringrpc::LbConfig {
 public:
  std::string_view name() const override { return "last_ready"; }
  std::string ToJson() const override { return "{}"; }
  std::shared_ptr<ringrpc::LbBalancer> NewBalancer(const ringrpc::LbBalancerArgs&) const override {
    struct Balancer final : ringrpc::LbBalancer {
      std::unique_ptr<ringrpc::LbPicker> NewPicker(const ringrpc::LbPickerArgs&) override {
        return std::make_unique<LastReadyPicker>();
      }
    };
    return std::make_shared<Balancer>();
  }
};

class LastReadyFactory final : public ringrpc::LbPolicyFactory {
 public:
  std::string_view name() const override { return "last_ready"; }
  absl::StatusOr<std::shared_ptr<const ringrpc::LbConfig>> ParseConfig(
      std::string_view json) const override {
    if (json != "{}") {
      return absl::InvalidArgumentError("last_ready takes no settings, got " + std::string(json));
    }
    return std::make_shared<LastReadyConfig>();
  }
};

// "testlist:///NAME": the addresses a test filed under NAME, delivered
// once, optionally with last_ready as a typed policy.
struct Filed {
  std::mutex mu;
  std::map<std::string, ringrpc::AddressList> lists;
  std::vector<ringrpc::ResolverArgs> seen;  // channel_args cleared
  bool with_policy = false;
};
Filed& TheFiled() {
  static Filed f;
  return f;
}

class ListResolver final : public ringrpc::Resolver {
 public:
  ListResolver(absl::StatusOr<ringrpc::AddressList> list, bool with_policy)
      : list_(std::move(list)), with_policy_(with_policy) {}
  void Start(ringrpc::ResolverListener listener) override {
    if (!list_.ok()) return listener.Update(list_.status());
    ringrpc::ResolverResult r;
    r.addresses = *list_;
    if (with_policy_) r.lb_config = std::make_shared<LastReadyConfig>();
    listener.Update(std::move(r));
  }
  void Shutdown() override {}

 private:
  absl::StatusOr<ringrpc::AddressList> list_;
  bool with_policy_;
};

class Plugins : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ringrpc::RegisterLbPolicy(std::make_shared<LastReadyFactory>());
    ringrpc::RegisterResolverFactory(
        "testlist",
        [](const ringrpc::ResolverArgs& a) -> absl::StatusOr<std::shared_ptr<ringrpc::Resolver>> {
          Filed& f = TheFiled();
          std::lock_guard<std::mutex> lock(f.mu);
          ringrpc::ResolverArgs copy = a;
          copy.channel_args = nullptr;
          f.seen.push_back(copy);
          auto it = f.lists.find(a.endpoint);
          if (it == f.lists.end()) {
            return std::make_shared<ListResolver>(
                absl::NotFoundError("no list filed as " + a.endpoint), false);
          }
          return std::make_shared<ListResolver>(it->second, f.with_policy);
        });
  }

  void SetUp() override {
    for (auto* b : {&first_, &second_}) {
      auto s =
          ringrpc::testing::ServerProcess::Start("127.0.0.1:0", "tests/server/test_server", {});
      ASSERT_TRUE(s.ok()) << s.status();
      *b = std::move(*s);
    }
  }

  static int64_t Calls(const ringrpc::testing::ServerProcess& server) {
    auto stub = TestService::NewStub(
        ringrpc::CreateChannel(server.address(), ringrpc::InsecureChannelCredentials()));
    ringrpc::ClientContext ctx;
    test::StatsResponse stats;
    EXPECT_TRUE(stub->Stats(&ctx, test::StatsRequest(), &stats).ok());
    return stats.calls();
  }

  // `n` unary calls on `channel`, each checked OK.
  static void Call(const std::shared_ptr<ringrpc::Channel>& channel, int n) {
    auto stub = TestService::NewStub(channel);
    for (int i = 0; i < n; ++i) {
      ringrpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      test::EchoRequest req;
      req.set_payload("p");
      test::EchoResponse resp;
      ringrpc::Status s = stub->Unary(&ctx, req, &resp);
      ASSERT_TRUE(s.ok()) << s.error_message();
      EXPECT_EQ(resp.payload(), "p");
    }
  }

  std::unique_ptr<ringrpc::testing::ServerProcess> first_, second_;
};

TEST_F(Plugins, AServiceConfigNamesAPolicyTheProgramRegistered) {
  ringrpc::ChannelArguments args;
  // An unknown policy first: the first registered one is taken (gRPC's rule).
  args.SetServiceConfigJSON(R"({"loadBalancingConfig": [{"no_such": {}}, {"last_ready": {}}]})");
  auto channel =
      ringrpc::CreateCustomChannel("ipv4:" + first_->address() + "," + second_->address(),
                                   ringrpc::InsecureChannelCredentials(), args);
  ASSERT_TRUE(channel->configuration_status().ok())
      << channel->configuration_status().error_message();
  Counts& c = TheCounts();
  const int picks_before = c.picks, started_before = c.started;
  Call(channel, 20);
  EXPECT_EQ(Calls(*first_), 0);
  EXPECT_EQ(Calls(*second_), 20);
  EXPECT_GE(c.picks - picks_before, 20);
  EXPECT_EQ(c.started - started_before, 20);
  // Every started call finishes (on its CQ thread, as the call is
  // destroyed: maybe just after the caller has its answer).
  channel.reset();
  for (int i = 0; i < 500 && c.started.load() != c.finished.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(c.started.load(), c.finished.load());
}

TEST_F(Plugins, ThePolicysConfigErrorIsTheChannelsError) {
  ringrpc::ChannelArguments args;
  args.SetServiceConfigJSON(R"({"loadBalancingConfig": [{"last_ready": {"weight": 2}}]})");
  auto channel =
      ringrpc::CreateCustomChannel(first_->address(), ringrpc::InsecureChannelCredentials(), args);
  EXPECT_EQ(channel->configuration_status().error_message(),
            "grpc.service_config: loadBalancingConfig[0]: last_ready takes no settings, got "
            "{\"weight\":2}");
  args = ringrpc::ChannelArguments();
  args.SetLoadBalancingPolicyName("no_such");
  channel =
      ringrpc::CreateCustomChannel(first_->address(), ringrpc::InsecureChannelCredentials(), args);
  EXPECT_EQ(channel->configuration_status().error_message(),
            "channel argument grpc.lb_policy_name: unknown load balancing policy \"no_such\" "
            "(registered: last_ready, least_request, least_request_experimental, pick_first, "
            "round_robin)");
}

TEST_F(Plugins, ASchemeTheProgramRegisteredResolvesItsTargets) {
  Filed& f = TheFiled();
  {
    std::lock_guard<std::mutex> lock(f.mu);
    f.lists["pair"] = {*ringrpc::transport::Address::Parse(first_->address()),
                       *ringrpc::transport::Address::Parse(second_->address())};
    f.with_policy = true;  // the resolver's typed policy: last_ready
    f.seen.clear();
  }
  auto channel =
      ringrpc::CreateChannel("testlist://registry:1/pair", ringrpc::InsecureChannelCredentials());
  ASSERT_TRUE(channel->configuration_status().ok())
      << channel->configuration_status().error_message();
  Call(channel, 10);
  EXPECT_EQ(Calls(*first_), 0);
  EXPECT_EQ(Calls(*second_), 10);
  std::lock_guard<std::mutex> lock(f.mu);
  ASSERT_EQ(f.seen.size(), 1u);
  EXPECT_EQ(f.seen[0].target, "testlist://registry:1/pair");
  EXPECT_EQ(f.seen[0].scheme, "testlist");
  EXPECT_EQ(f.seen[0].authority, "registry:1");
  EXPECT_EQ(f.seen[0].endpoint, "pair");
}

TEST_F(Plugins, ARegisteredSchemesResolverErrorFailsCallsWithIt) {
  auto channel =
      ringrpc::CreateChannel("testlist:///nothing", ringrpc::InsecureChannelCredentials());
  auto stub = TestService::NewStub(channel);
  ringrpc::ClientContext ctx;
  test::EchoRequest req;
  test::EchoResponse resp;
  ringrpc::Status s = stub->Unary(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), ringrpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(s.error_message().find("no list filed as nothing"), std::string::npos)
      << s.error_message();
}

TEST_F(Plugins, AnUnregisteredSchemeIsRefusedNamingIt) {
  auto channel = ringrpc::CreateChannel("nosuch:///x", ringrpc::InsecureChannelCredentials());
  const std::string error = channel->configuration_status().error_message();
  EXPECT_NE(error.find("unknown scheme \"nosuch\""), std::string::npos) << error;
  EXPECT_NE(error.find("RegisterResolverFactory"), std::string::npos) << error;
}

}  // namespace
