// A service config delivered by the resolver (issue 13, part 1; gRFC A21)
// against grpc++ servers: it replaces the channel's default, a later one
// replaces it again (method timeouts, retries, the LB policy, health
// checks), an invalid one is reported and the last valid one kept, an
// invalid first one falls back to the default or fails calls naming the
// problem, and grpc.service_config_disable_resolution ignores them all.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/channel.h"
#include "ringrpc/client/resolver.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/server_fixture.h"

namespace ringrpc {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using test::EchoRequest;
using test::EchoResponse;
using test::ring::TestService;
using ::testing::HasSubstr;

// A method config for every method with this timeout.
std::string Timeout(const std::string& t) {
  return absl::StrCat(R"({"methodConfig": [{"name": [{}], "timeout": ")", t, R"("}]})");
}

class ResolverConfigTest : public testing::ServerTest {
 protected:
  AddressList Addresses(const testing::ServerProcess& server) {
    return {*transport::Address::Parse(absl::StrCat("127.0.0.1:", server.port()))};
  }
  std::shared_ptr<Channel> Make(ChannelArguments args = {}) {
    resolver_ = std::make_shared<ManualResolver>();
    return CreateChannelWithResolver("backend", resolver_, args);
  }
  // A call that sleeps `sleep_ms` on the server.
  Status Sleep(Channel& ch, int sleep_ms, ClientContext* ctx = nullptr) {
    ClientContext local;
    if (ctx == nullptr) ctx = &local;
    if (!ctx->deadline()) {
      ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    }
    EchoRequest req;
    req.set_sleep_ms(sleep_ms);
    EchoResponse resp;
    return TestService::NewStub(std::shared_ptr<Channel>(&ch, [](Channel*) {}))
        ->Unary(ctx, req, &resp);
  }
  std::shared_ptr<ManualResolver> resolver_;
};

TEST_F(ResolverConfigTest, TheResolversConfigReplacesTheDefaultAndALaterOneReplacesIt) {
  ChannelArguments args;
  args.SetServiceConfigJSON(Timeout("30s"));  // the default
  auto ch = Make(args);
  resolver_->PushResult(ResolverResult{Addresses(*server_), Timeout("0.1s")});
  Status s = Sleep(*ch, 2000);
  EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  // A result without a config: the default again.
  resolver_->PushResult(ResolverResult{Addresses(*server_), std::nullopt});
  s = Sleep(*ch, 300);
  EXPECT_TRUE(s.ok()) << s.error_message();
  resolver_->PushResult(ResolverResult{Addresses(*server_), Timeout("0.05s")});
  s = Sleep(*ch, 2000);
  EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  EXPECT_TRUE(ch->resolver_service_config_status().ok());
}

TEST_F(ResolverConfigTest, AnInvalidConfigIsReportedAndTheLastValidOneKept) {
  auto ch = Make();
  resolver_->PushResult(ResolverResult{Addresses(*server_), Timeout("0.1s")});
  resolver_->PushResult(
      ResolverResult{Addresses(*server_), R"({"methodConfig": [{"timeout": "soon"}]})"});
  Status st = ch->resolver_service_config_status();
  EXPECT_EQ(st.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(st.error_message(), HasSubstr("methodConfig[0].timeout"));
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_resolver_service_config_errors_total 1\n"));
  // Still the last valid one: its 0.1 s timeout.
  Status s = Sleep(*ch, 2000);
  EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  // A valid one clears the error.
  resolver_->PushResult(ResolverResult{Addresses(*server_), Timeout("30s")});
  EXPECT_TRUE(ch->resolver_service_config_status().ok());
  s = Sleep(*ch, 300);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST_F(ResolverConfigTest, AnInvalidFirstConfigFallsBackToTheDefaultOrFailsCalls) {
  const std::string bad = R"({"loadBalancingConfig": [{"weighted": {}}]})";
  // With a default: the default applies.
  {
    ChannelArguments args;
    args.SetServiceConfigJSON(Timeout("0.1s"));
    auto ch = Make(args);
    resolver_->PushResult(ResolverResult{Addresses(*server_), bad});
    Status s = Sleep(*ch, 2000);
    EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED) << s.error_message();
    EXPECT_THAT(ch->resolver_service_config_status().error_message(),
                HasSubstr("loadBalancingConfig"));
  }
  // Without one: calls fail UNAVAILABLE naming the problem, until a valid
  // config comes.
  auto ch = Make();
  resolver_->PushResult(ResolverResult{Addresses(*server_), bad});
  Status s = Sleep(*ch, 0);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("the resolver's service config is invalid"));
  EXPECT_THAT(s.error_message(), HasSubstr("loadBalancingConfig"));
  resolver_->PushResult(ResolverResult{Addresses(*server_), "{}"});
  s = Sleep(*ch, 0);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST_F(ResolverConfigTest, DisableResolutionIgnoresTheResolversConfig) {
  ChannelArguments args;
  args.SetInt("grpc.service_config_disable_resolution", 1);
  auto ch = Make(args);
  resolver_->PushResult(ResolverResult{Addresses(*server_), Timeout("0.05s")});
  Status s = Sleep(*ch, 300);
  EXPECT_TRUE(s.ok()) << s.error_message();
  // Not even checked.
  resolver_->PushResult(ResolverResult{Addresses(*server_), "not json"});
  EXPECT_TRUE(ch->resolver_service_config_status().ok());
}

TEST_F(ResolverConfigTest, RetriesAndTheLbPolicyFollowTheResolversConfig) {
  auto other = testing::ServerProcess::Start();
  ASSERT_TRUE(other.ok()) << other.status();
  auto ch = Make();
  AddressList both = Addresses(*server_);
  both.push_back(Addresses(**other).front());
  // pick_first (the default): every call to the first address.
  resolver_->PushResult(ResolverResult{both, std::nullopt});
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Sleep(*ch, 0).ok());
  auto calls = [](const testing::ServerProcess& s) {
    auto stub = TestService::NewStub(CreateChannel(s.address(), InsecureChannelCredentials()));
    ClientContext ctx;
    test::StatsResponse stats;
    EXPECT_TRUE(stub->Stats(&ctx, test::StatsRequest(), &stats).ok());
    return stats.calls();
  };
  EXPECT_EQ(calls(**other), 0);
  // round_robin with a retry policy, from the resolver.
  resolver_->PushResult(ResolverResult{both, R"({"loadBalancingConfig": [{"round_robin": {}}],
      "methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3,
          "initialBackoff": "0.01s", "maxBackoff": "0.01s", "backoffMultiplier": 1,
          "retryableStatusCodes": ["UNAVAILABLE"]}}]})"});
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(Sleep(*ch, 0).ok());
  EXPECT_GE(calls(**other), 4);
  ClientContext ctx;
  ctx.AddMetadata("x-call-key", "resolver-retry");
  ctx.AddMetadata("x-fail-attempts", "1");
  Status s = Sleep(*ch, 0, &ctx);
  EXPECT_TRUE(s.ok()) << s.error_message();
  // Each backend fails its own first attempt of the key, and round_robin
  // alternates them: fail, fail, then the first one answers.
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_retries_total 2\n"));
}

TEST_F(ResolverConfigTest, HealthChecksFollowTheResolversConfig) {
  // The server knows no "svc": SERVICE_UNKNOWN, unhealthy once checked.
  auto checked =
      testing::ServerProcess::Start("127.0.0.1:0", "tests/server/test_server", {"--health"});
  ASSERT_TRUE(checked.ok()) << checked.status();
  auto ch = Make();
  resolver_->PushResult(ResolverResult{Addresses(**checked), std::nullopt});
  EXPECT_TRUE(Sleep(*ch, 0).ok());
  resolver_->PushResult(ResolverResult{Addresses(**checked),
                                       R"({"loadBalancingConfig": [{"round_robin": {}}],
                                           "healthCheckConfig": {"serviceName": "svc"}})"});
  // Once the check has answered, fail-fast calls find no healthy address.
  Status s;
  for (auto until = steady_clock::now() + std::chrono::seconds(10); steady_clock::now() < until;) {
    s = Sleep(*ch, 0);
    if (!s.ok()) break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("no healthy address"));
  // Checks off again: the address takes calls.
  resolver_->PushResult(ResolverResult{Addresses(**checked), std::nullopt});
  s = Sleep(*ch, 0);
  EXPECT_TRUE(s.ok()) << s.error_message();
}

// Routes by a metadata value: "group: x" goes to group x, no header to
// group "main"; "fail" fails the call.
class HeaderRouter final : public CallRouter {
 public:
  absl::StatusOr<CallRoute> Route(const CallRouteInfo& call) const override {
    for (const auto& [k, v] : call.metadata) {
      if (k != "group") continue;
      if (v == "fail") return absl::UnavailableError("routed nowhere");
      return CallRoute{.group = v};
    }
    return CallRoute{.group = "main"};
  }
};

TEST_F(ResolverConfigTest, ARouterSendsEachCallToItsGroupOfAddresses) {
  auto second = testing::ServerProcess::Start();
  ASSERT_TRUE(second.ok()) << second.status();
  auto ch = Make();
  AddressList both = Addresses(*server_);
  both.push_back(Addresses(**second)[0]);
  auto router = std::make_shared<HeaderRouter>();
  resolver_->PushResult(
      ResolverResult{.addresses = both,
                     .service_config = R"({"loadBalancingConfig": [{"round_robin": {}}]})",
                     .router = router,
                     .groups = {{"main", {0}}, {"two", {1}}, {"both", {0, 1}}, {"none", {}}}});
  auto stub = TestService::NewStub(ch);
  auto call = [&](const std::string& group, std::string* peer) {
    ClientContext ctx;
    if (!group.empty()) ctx.AddMetadata("group", group);
    EchoRequest req;
    EchoResponse resp;
    Status s = stub->Unary(&ctx, req, &resp);
    *peer = ctx.peer();
    return s;
  };
  const std::string one = server_->address(), two = (*second)->address();
  std::map<std::string, int> on_both;
  for (int i = 0; i < 20; ++i) {
    std::string peer;
    ASSERT_TRUE(call("", &peer).ok());
    EXPECT_EQ(peer, one);
    ASSERT_TRUE(call("two", &peer).ok());
    EXPECT_EQ(peer, two);
    ASSERT_TRUE(call("both", &peer).ok());
    ++on_both[peer];
  }
  // round_robin within the group.
  EXPECT_EQ(on_both[one], 10);
  EXPECT_EQ(on_both[two], 10);
  std::string peer;
  Status s = call("fail", &peer);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_EQ(s.error_message(), "routed nowhere");
  s = call("none", &peer);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("routed the call to \"none\", which has no addresses"));
  s = call("unknown", &peer);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("\"unknown\""));
  // The same addresses, the groups swapped: the routing follows at once.
  resolver_->PushResult(
      ResolverResult{.addresses = both,
                     .service_config = R"({"loadBalancingConfig": [{"round_robin": {}}]})",
                     .router = router,
                     .groups = {{"main", {1}}, {"two", {0}}}});
  ASSERT_TRUE(call("", &peer).ok());
  EXPECT_EQ(peer, two);
  ASSERT_TRUE(call("two", &peer).ok());
  EXPECT_EQ(peer, one);
  // No router any more: every call to the whole list.
  resolver_->PushResult(ResolverResult{
      .addresses = both, .service_config = R"({"loadBalancingConfig": [{"round_robin": {}}]})"});
  std::map<std::string, int> unrouted;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(call("fail", &peer).ok());
    ++unrouted[peer];
  }
  EXPECT_EQ(unrouted[one], 5);
  EXPECT_EQ(unrouted[two], 5);
}

TEST(ResolverListener, TakesAddressOnlyFunctionsAndWholeResults) {
  int lists = 0, results = 0;
  ResolverListener addresses_only([&](absl::StatusOr<AddressList> l) { lists += l.ok() ? 1 : 10; });
  addresses_only(AddressList{});
  addresses_only.Update(ResolverResult{AddressList{}, "{}"});  // the config is dropped
  addresses_only(absl::UnavailableError("down"));
  EXPECT_EQ(lists, 12);
  std::optional<std::string> seen;
  ResolverListener whole([&](absl::StatusOr<ResolverResult> r) {
    ++results;
    seen = r->service_config;
  });
  whole(AddressList{});
  EXPECT_EQ(seen, std::nullopt);
  whole.Update(ResolverResult{AddressList{}, "{}"});
  EXPECT_EQ(seen, "{}");
  EXPECT_EQ(results, 2);
  ResolverListener none;
  EXPECT_FALSE(none);
  EXPECT_TRUE(whole);
}

}  // namespace
}  // namespace ringrpc
