// DNS and address families end to end (issue 15, part 2): channels whose
// target is resolved by a real DNS server (dnsmasq, started by the test on
// a loopback port) calling real grpc++ servers; servers on [::1], on
// 127.0.0.2, on an abstract unix socket; and what a grpc++ server's GOAWAY
// makes the channel do (resolve again; double its keepalive time after
// "too_many_pings", gRFC A8).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ringrpc/base/mutex.h"
#include "ringrpc/client/channel.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/dns_server.h"
#include "tests/testing/server_process.h"

namespace ringrpc {
namespace {

using std::chrono::milliseconds;
using test::EchoRequest;
using test::EchoResponse;
using test::ring::TestService;
using testing::DnsServer;
using testing::ServerProcess;
using Clock = std::chrono::steady_clock;

std::unique_ptr<ServerProcess> Backend(const std::string& listen,
                                       std::vector<std::string> flags = {}) {
  auto s = ServerProcess::Start(listen, "tests/server/test_server", std::move(flags));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

int64_t Calls(const ServerProcess& server) {
  auto stub = TestService::NewStub(CreateChannel(server.address(), InsecureChannelCredentials()));
  ClientContext ctx;
  test::StatsResponse stats;
  EXPECT_TRUE(stub->Stats(&ctx, test::StatsRequest(), &stats).ok());
  return stats.calls();
}

Status Call(TestService::Stub& stub, int timeout_ms = 5000) {
  ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + milliseconds(timeout_ms));
  EchoRequest req;
  req.set_payload("x");
  EchoResponse resp;
  return stub.Unary(&ctx, req, &resp);
}

// Blocking callers on `threads` threads until Stop(); failed calls kept.
class Load {
 public:
  Load(std::shared_ptr<Channel> channel, int threads) : stub_(TestService::NewStub(channel)) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this] {
        while (!stop_.load()) {
          Status s = Call(*stub_);
          ok_.fetch_add(s.ok() ? 1 : 0);
          if (!s.ok()) {
            MutexLock lock(&mu_);
            failures_.push_back(s.error_message());
          }
        }
      });
    }
  }
  ~Load() { Stop(); }
  void Stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  int64_t ok() const { return ok_.load(); }
  std::vector<std::string> failures() {
    MutexLock lock(&mu_);
    return failures_;
  }

 private:
  std::unique_ptr<TestService::Stub> stub_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> ok_{0};
  Mutex mu_;
  std::vector<std::string> failures_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

bool WaitUntil(const std::function<bool()>& done, milliseconds within = milliseconds(20000)) {
  for (auto end = Clock::now() + within; Clock::now() < end;) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return done();
}

// Two backends on one port, at 127.0.0.1 and 127.0.0.2: a DNS name can move
// from one to the other. `a_flags` for the first.
struct TwoAddresses {
  std::unique_ptr<ServerProcess> b, a;
  explicit TwoAddresses(std::vector<std::string> a_flags) {
    for (int tries = 0; tries < 5 && a == nullptr; ++tries) {
      b = Backend("127.0.0.2:0");
      if (b == nullptr) return;
      auto s = ServerProcess::Start(absl::StrCat("127.0.0.1:", b->port()),
                                    "tests/server/test_server", a_flags);
      if (s.ok()) a = std::move(*s);  // else the port was taken at 127.0.0.1: again
    }
  }
};

TEST(Dns, RecordChangeMovesEveryNewCallToTheNewAddressWithNoFailedCall) {
  // A asks its clients to reconnect every 300 ms (GOAWAY at that age): the
  // way a server makes DNS clients look again.
  TwoAddresses backends({"--max_connection_age_ms=300"});
  ASSERT_NE(backends.a, nullptr);
  auto dns = DnsServer::Start({{"svc.ringrpc.test", "127.0.0.1"}});
  ASSERT_TRUE(dns.ok()) << dns.status();
  ChannelArguments args;
  args.SetInt("grpc.dns_min_time_between_resolutions_ms", 100);
  args.SetInt("ringrpc.cq_threads", 2);
  auto channel = CreateCustomChannel(
      absl::StrCat("dns://", (*dns)->address(), "/svc.ringrpc.test:", backends.a->port()),
      InsecureChannelCredentials(), args);
  Load load(channel, 4);
  ASSERT_TRUE(WaitUntil([&] { return load.ok() > 50; }));
  ASSERT_TRUE(
      (*dns)->SetHosts({{"svc.ringrpc.test", "127.0.0.2"}}, "svc.ringrpc.test", {"127.0.0.2"}));
  const auto moved_at = Clock::now();
  ASSERT_TRUE(WaitUntil([&] { return Calls(*backends.b) > 50; })) << "no call reached B";
  std::printf("calls reached the new address %lld ms after the record changed\n",
              static_cast<long long>(
                  std::chrono::duration_cast<milliseconds>(Clock::now() - moved_at).count()));
  // Calls that were in flight on A end there; then A hears no more.
  std::this_thread::sleep_for(milliseconds(300));
  const int64_t a_calls = Calls(*backends.a);
  const int64_t ok_before = load.ok();
  std::this_thread::sleep_for(milliseconds(500));
  load.Stop();
  EXPECT_GT(load.ok(), ok_before);
  EXPECT_EQ(Calls(*backends.a), a_calls + 0) << "a call went to the old address";
  EXPECT_TRUE(load.failures().empty())
      << load.failures().size() << " failed, first: " << load.failures().front();
}

TEST(Dns, NameThatStopsResolvingKeepsTheLastGoodAddresses) {
  auto a = Backend("127.0.0.1:0", {"--max_connection_age_ms=200"});
  ASSERT_NE(a, nullptr);
  auto dns = DnsServer::Start({{"svc.ringrpc.test", "127.0.0.1"}});
  ASSERT_TRUE(dns.ok()) << dns.status();
  ChannelArguments args;
  args.SetInt("grpc.dns_min_time_between_resolutions_ms", 100);
  auto channel = CreateCustomChannel(
      absl::StrCat("dns://", (*dns)->address(), "/svc.ringrpc.test:", a->port()),
      InsecureChannelCredentials(), args);
  Load load(channel, 2);
  ASSERT_TRUE(WaitUntil([&] { return load.ok() > 20; }));
  ASSERT_TRUE((*dns)->SetHosts({}, "svc.ringrpc.test", {}));  // NXDOMAIN from now on
  const int asked = (*dns)->QueryCount("svc.ringrpc.test");
  // Every GOAWAY asks for a resolution, which fails: the calls go on.
  ASSERT_TRUE(WaitUntil([&] { return (*dns)->QueryCount("svc.ringrpc.test") >= asked + 2; }))
      << "the channel did not resolve again after its connections were lost";
  const int64_t ok_before = load.ok();
  std::this_thread::sleep_for(milliseconds(300));
  load.Stop();
  EXPECT_GT(load.ok(), ok_before);
  EXPECT_TRUE(load.failures().empty())
      << load.failures().size() << " failed, first: " << load.failures().front();
  // Not failing: the resolver's errors did not take the addresses away.
  // (READY, or IDLE between a GOAWAY, every 200 ms, and the next call.)
  const ConnectivityState state = channel->GetState(false);
  EXPECT_TRUE(state == GRPC_CHANNEL_READY || state == GRPC_CHANNEL_IDLE) << static_cast<int>(state);
}

TEST(Dns, UnknownNameAndSilentServerFailCallsWithTheResolversError) {
  auto dns = DnsServer::Start({{"svc.ringrpc.test", "127.0.0.1"}});
  ASSERT_TRUE(dns.ok()) << dns.status();
  auto stub = TestService::NewStub(
      CreateChannel(absl::StrCat("dns://", (*dns)->address(), "/nope.ringrpc.test:50051"),
                    InsecureChannelCredentials()));
  Status s = Call(*stub);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_TRUE(absl::StrContains(s.error_message(), "DNS resolution of nope.ringrpc.test failed"))
      << s.error_message();

  testing::SilentDnsServer silent;
  ChannelArguments args;
  args.SetInt("grpc.dns_ares_query_timeout", 300);
  stub = TestService::NewStub(
      CreateCustomChannel(absl::StrCat("dns://", silent.address(), "/svc.ringrpc.test:50051"),
                          InsecureChannelCredentials(), args));
  s = Call(*stub);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_TRUE(absl::StrContains(s.error_message(), "timed out after 300 ms")) << s.error_message();

  // A dns:// authority that is not an address is the target's error.
  stub = TestService::NewStub(
      CreateChannel("dns://ns.example/svc.ringrpc.test:1", InsecureChannelCredentials()));
  s = Call(*stub);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(s.error_message(), "is not an IP address")) << s.error_message();
}

TEST(Dns, TxtServiceConfigAppliesOnlyWhenResolutionIsEnabled) {
  auto a = Backend("127.0.0.1:0");
  ASSERT_NE(a, nullptr);
  auto dns =
      DnsServer::Start({{"svc.ringrpc.test", "127.0.0.1"}},
                       {{"_grpc_config.svc.ringrpc.test",
                         {R"(grpc_config=[{"serviceConfig":{"methodConfig":[{"name":[{"service":)"
                          R"("ringrpc.test.TestService"}],"timeout":"0.1s"}]}}])"}}});
  ASSERT_TRUE(dns.ok()) << dns.status();
  const std::string target =
      absl::StrCat("dns://", (*dns)->address(), "/svc.ringrpc.test:", a->port());
  auto slow = [](TestService::Stub& stub) {
    ClientContext ctx;
    EchoRequest req;
    req.set_sleep_ms(1000);
    EchoResponse resp;
    return stub.Unary(&ctx, req, &resp);
  };
  // grpc++'s default: no TXT lookup, no timeout from DNS.
  auto plain = CreateChannel(target, InsecureChannelCredentials());
  auto stub = TestService::NewStub(plain);
  EXPECT_TRUE(slow(*stub).ok());
  EXPECT_EQ((*dns)->QueryCount("_grpc_config.svc.ringrpc.test"), 0);

  ChannelArguments args;
  args.SetInt("grpc.service_config_disable_resolution", 0);
  auto channel = CreateCustomChannel(target, InsecureChannelCredentials(), args);
  stub = TestService::NewStub(channel);
  Status s = slow(*stub);
  EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  EXPECT_TRUE(channel->resolver_service_config_status().ok())
      << channel->resolver_service_config_status().error_message();
}

TEST(Dns, LocalhostReachesAServerListeningOnOnlyOneLoopbackAddress) {
  for (const char* listen : {"127.0.0.1:0", "[::1]:0"}) {
    auto server = Backend(listen);
    ASSERT_NE(server, nullptr);
    for (const std::string& target : {absl::StrCat("localhost:", server->port()),
                                      absl::StrCat("dns:///localhost:", server->port())}) {
      auto stub = TestService::NewStub(CreateChannel(target, InsecureChannelCredentials()));
      for (int i = 0; i < 3; ++i) {
        Status s = Call(*stub);
        EXPECT_TRUE(s.ok()) << listen << " via " << target << ": " << s.error_message();
      }
    }
  }
}

// A channel per call to an IP literal asks no DNS server: before, c-ares
// sent "127.0.0.1" to the server as a name, and each query the server
// dropped held that channel's first call for c-ares' 5 s retry (a channel
// per call stalled about one call in thirty on a resolver that drops some
// queries). The server here drops them all.
TEST(Dns, IpLiteralTargetsNeverWaitForADnsServer) {
  auto v4 = Backend("127.0.0.1:0");
  auto v6 = Backend("[::1]:0");
  ASSERT_NE(v4, nullptr);
  ASSERT_NE(v6, nullptr);
  testing::SilentDnsServer silent;
  for (const std::string& target :
       {absl::StrCat("dns://", silent.address(), "/127.0.0.1:", v4->port()),
        absl::StrCat("dns://", silent.address(), "/[::1]:", v6->port()),
        absl::StrCat("dns://", silent.address(), "/localhost:", v4->port())}) {
    for (int i = 0; i < 5; ++i) {
      auto stub = TestService::NewStub(CreateChannel(target, InsecureChannelCredentials()));
      const auto start = Clock::now();
      Status s = Call(*stub, 4000);
      EXPECT_TRUE(s.ok()) << target << ": " << s.error_message();
      EXPECT_LT(Clock::now() - start, milliseconds(3000)) << target;
    }
  }
}

TEST(Dns, Ipv6AndAbstractUnixSocketsCarryCalls) {
  auto v6 = Backend("[::1]:0");
  ASSERT_NE(v6, nullptr);
  auto stub = TestService::NewStub(
      CreateChannel(absl::StrCat("ipv6:[::1]:", v6->port()), InsecureChannelCredentials()));
  Status s = Call(*stub);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(Calls(*v6), 1);

  const std::string name = absl::StrCat("unix-abstract:ringrpc-dns-test-", ::getpid());
  auto abstract = Backend(name);
  ASSERT_NE(abstract, nullptr);
  stub = TestService::NewStub(CreateChannel(name, InsecureChannelCredentials()));
  s = Call(*stub);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(Calls(*abstract), 1);
}

// Records kConnectionLost events.
struct LostEvents : SubchannelEventListener {
  void OnSubchannelEvent(const SubchannelEvent& e) override {
    if (e.kind != SubchannelEvent::Kind::kConnectionLost) return;
    MutexLock lock(&mu);
    reasons.push_back(e.reason);
  }
  std::vector<std::string> Reasons() {
    MutexLock lock(&mu);
    return reasons;
  }
  Mutex mu;
  std::vector<std::string> reasons ABSL_GUARDED_BY(mu);
};

TEST(Dns, TooManyPingsDoublesTheKeepaliveTimeForTheAddress) {
  // grpc++'s server allows no PING without calls more often than every
  // 2 h: after 2 strikes it sends GOAWAY ENHANCE_YOUR_CALM "too_many_pings".
  auto a = Backend("127.0.0.1:0");
  ASSERT_NE(a, nullptr);
  auto events = std::make_shared<LostEvents>();
  ChannelArguments args;
  args.SetInt("grpc.keepalive_time_ms", 100);
  args.SetInt("grpc.keepalive_permit_without_calls", 1);
  args.SetInt("grpc.http2.max_pings_without_data", 0);
  args.SetSubchannelEventListener(events);
  auto stub =
      TestService::NewStub(CreateCustomChannel(a->address(), InsecureChannelCredentials(), args));
  ASSERT_TRUE(Call(*stub).ok());  // connected; now idle, pinging
  ASSERT_TRUE(WaitUntil([&] { return !events->Reasons().empty(); }));
  EXPECT_TRUE(absl::StrContains(events->Reasons()[0], "too_many_pings")) << events->Reasons()[0];
  EXPECT_TRUE(absl::EndsWith(events->Reasons()[0], "keepalive time for this address now 200 ms"))
      << events->Reasons()[0];
  ASSERT_TRUE(Call(*stub).ok());  // a new connection, pinging every 200 ms
  ASSERT_TRUE(WaitUntil([&] { return events->Reasons().size() >= 2; }));
  EXPECT_TRUE(absl::EndsWith(events->Reasons()[1], "keepalive time for this address now 400 ms"))
      << events->Reasons()[1];
}

}  // namespace
}  // namespace ringrpc
