// xds:/// channels end to end (issue 18): real grpc++ backends
// (tests/server/test_server), the test control plane serving a snapshot
// this test rewrites, ringrpc's xDS resolver (linked: the "xds" scheme is
// registered) between them.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/channel.h"
#include "ringrpc/client/xds/xds_client.h"
#include "ringrpc/client/xds/xds_resolver.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/server_process.h"
#include "tests/xds/scenario_fixture.h"

namespace ringrpc {
namespace {

using namespace std::chrono_literals;
using namespace ringrpc::testing::xds;
using test::EchoRequest;
using test::EchoResponse;
using test::ring::TestService;
using testing::ServerProcess;

// One unary call: the status, and the backend that served it.
Status Call(TestService::Stub& stub, std::string* peer) {
  ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  EchoRequest req;
  req.set_payload("x");
  EchoResponse resp;
  Status s = stub.Unary(&ctx, req, &resp);
  if (peer != nullptr) *peer = ctx.peer();
  return s;
}

class XdsChannelTest : public XdsScenarioTest {
 protected:
  // A channel to `target` on an XdsClient of the test's own (short timers).
  std::shared_ptr<Channel> XdsChannel(const std::string& target, ChannelArguments args = {}) {
    absl::StatusOr<xds::XdsBootstrap> b = xds::ParseXdsBootstrap(bootstrap_);
    EXPECT_TRUE(b.ok()) << b.status();
    xds::XdsClientOptions o;
    o.resource_does_not_exist_timeout = 1s;
    o.initial_backoff = 100ms;
    o.max_backoff = 500ms;
    auto client = xds::XdsClient::Create(*b, o);
    EXPECT_TRUE(client.ok()) << client.status();
    auto resolver = xds::MakeXdsResolver(target, *client);
    EXPECT_TRUE(resolver.ok()) << resolver.status();
    args.SetInt("ringrpc.cq_threads", 2);
    return CreateChannelWithResolver(target.substr(target.rfind('/') + 1), *resolver, args);
  }
};

TEST_F(XdsChannelTest, CreateChannelWithAnXdsTargetCallsTheEdsEndpoints) {
  ASSERT_EQ(::setenv("GRPC_XDS_BOOTSTRAP_CONFIG", bootstrap_.c_str(), 1), 0);
  auto stub = TestService::NewStub(CreateChannel("xds:///greeter", InsecureChannelCredentials()));
  std::map<std::string, int> per_backend;
  for (int i = 0; i < 200; ++i) {
    std::string peer;
    Status s = Call(*stub, &peer);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ++per_backend[peer];
  }
  ::unsetenv("GRPC_XDS_BOOTSTRAP_CONFIG");
  // round_robin over both endpoints of c1, and nothing else.
  ASSERT_EQ(per_backend.size(), 2u);
  EXPECT_GT(per_backend[backends_[0]->address()], 50);
  EXPECT_GT(per_backend[backends_[1]->address()], 50);
  EXPECT_NE(Log().find("ACK ClusterLoadAssignment version=1"), std::string::npos) << Log();
}

TEST_F(XdsChannelTest, WithoutABootstrapCallsFailNamingTheVariables) {
  ::unsetenv("GRPC_XDS_BOOTSTRAP");
  ::unsetenv("GRPC_XDS_BOOTSTRAP_CONFIG");
  auto stub = TestService::NewStub(CreateChannel("xds:///greeter", InsecureChannelCredentials()));
  Status s = Call(*stub, nullptr);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.error_message().find("GRPC_XDS_BOOTSTRAP"), std::string::npos) << s.error_message();
}

TEST_F(XdsChannelTest, AnEdsUpdateReplacesEveryEndpointUnderLoadWithNoFailedCall) {
  auto stub = TestService::NewStub(XdsChannel("xds:///greeter"));
  std::string peer;
  ASSERT_TRUE(Call(*stub, &peer).ok());
  std::atomic<bool> stop{false};
  std::atomic<int> failed{0};
  std::mutex mu;
  std::vector<std::vector<std::string>> seen(4);  // per caller, in order
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      while (!stop.load()) {
        std::string p;
        Status s = Call(*stub, &p);
        std::lock_guard<std::mutex> l(mu);
        if (!s.ok()) {
          ++failed;
          ADD_FAILURE() << s.error_message();
        }
        seen[t].push_back(p);
      }
    });
  }
  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(Base("2", {2, 3}).WriteTo(snapshot_path_));
  const std::set<std::string> old_ones = {backends_[0]->address(), backends_[1]->address()};
  const std::set<std::string> new_ones = {backends_[2]->address(), backends_[3]->address()};
  // Until the new backends have served a while.
  const auto end = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < end) {
    {
      std::lock_guard<std::mutex> l(mu);
      size_t after = 0;
      for (const auto& s : seen) {
        for (const std::string& p : s) after += new_ones.count(p);
      }
      if (after >= 200) break;
    }
    std::this_thread::sleep_for(20ms);
  }
  stop = true;
  for (auto& c : callers) c.join();
  EXPECT_EQ(failed.load(), 0);
  size_t on_old = 0, on_new = 0, old_after_new = 0;
  for (const auto& s : seen) {
    bool switched = false;
    for (const std::string& p : s) {
      if (new_ones.count(p) != 0) {
        switched = true;
        ++on_new;
      } else if (old_ones.count(p) != 0) {
        ++on_old;
        if (switched) ++old_after_new;
      } else {
        ADD_FAILURE() << "a call served by " << p;
      }
    }
  }
  std::printf(
      "EDS swap under load: %zu calls on the old endpoints, %zu on the new, %zu to an old "
      "one after that caller's first new one, %d failed\n",
      on_old, on_new, old_after_new, failed.load());
  EXPECT_GT(on_old, 0u);
  EXPECT_GE(on_new, 200u);
  EXPECT_EQ(old_after_new, 0u);
}

TEST_F(XdsChannelTest, CallsGoOnWithTheCachedConfigWhileTheControlPlaneIsDown) {
  auto stub = TestService::NewStub(XdsChannel("xds:///greeter"));
  ASSERT_TRUE(Call(*stub, nullptr).ok());
  control_plane_->Kill();
  std::this_thread::sleep_for(300ms);  // the stream has ended and retries meanwhile
  for (int i = 0; i < 100; ++i) {
    std::string peer;
    Status s = Call(*stub, &peer);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_TRUE(peer == backends_[0]->address() || peer == backends_[1]->address()) << peer;
  }
}

TEST_F(XdsChannelTest, ANackedUpdateKeepsTheLastGoodEndpoints) {
  auto stub = TestService::NewStub(XdsChannel("xds:///greeter"));
  ASSERT_TRUE(Call(*stub, nullptr).ok());
  // An endpoint that is not an IP address: NACKed.
  Snapshot bad = OneCluster("2", {{.endpoints = {"backend.example.com:80"}}});
  ASSERT_TRUE(bad.WriteTo(snapshot_path_));
  ASSERT_TRUE(WaitForLog("NACK ClusterLoadAssignment version=1")) << Log();
  for (int i = 0; i < 50; ++i) {
    std::string peer;
    ASSERT_TRUE(Call(*stub, &peer).ok());
    EXPECT_TRUE(peer == backends_[0]->address() || peer == backends_[1]->address()) << peer;
  }
}

TEST_F(XdsChannelTest, AMissingListenerFailsCallsUnavailableNamingIt) {
  auto stub = TestService::NewStub(XdsChannel("xds:///no-such-service"));
  Status s = Call(*stub, nullptr);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_NE(s.error_message().find("Listener \"no-such-service\" does not exist"),
            std::string::npos)
      << s.error_message();
}

TEST_F(XdsChannelTest, WeightedClustersSplitTheCalls70To30) {
  Serve(TwoClusters(backends_, {RouteJson(R"({"prefix": ""})", {{"a", 70}, {"b", 30}})}));
  auto stub = TestService::NewStub(XdsChannel("xds:///greeter"));
  constexpr int kCalls = 10000, kThreads = 4;
  std::mutex mu;
  std::map<std::string, int> per_backend;
  std::atomic<int> failed{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < kThreads; ++t) {
    callers.emplace_back([&] {
      std::map<std::string, int> mine;
      for (int i = 0; i < kCalls / kThreads; ++i) {
        std::string peer;
        if (!Call(*stub, &peer).ok()) ++failed;
        ++mine[peer];
      }
      std::lock_guard<std::mutex> l(mu);
      for (const auto& [p, n] : mine) per_backend[p] += n;
    });
  }
  for (auto& c : callers) c.join();
  const int a = per_backend[backends_[0]->address()], b = per_backend[backends_[1]->address()];
  std::printf("weighted clusters 70/30: %d calls to a (%.2f%%), %d to b (%.2f%%), %d failed\n", a,
              100.0 * a / kCalls, b, 100.0 * b / kCalls, failed.load());
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(a + b, kCalls);
  // The issue's bound: within 5 points of the weights (the binomial's
  // standard deviation here is 0.46 points).
  EXPECT_NEAR(a, 7000, 500);
  EXPECT_NEAR(b, 3000, 500);
}

TEST_F(XdsChannelTest, RoutesMatchTheCallsPathAndHeadersInOrder) {
  Serve(CanaryAndStatsToB(backends_));
  auto stub = TestService::NewStub(XdsChannel("xds:///greeter"));
  for (int i = 0; i < 20; ++i) {
    std::string peer;
    ASSERT_TRUE(Call(*stub, &peer).ok());
    EXPECT_EQ(peer, backends_[0]->address()) << "a plain Unary call goes to a";
    ClientContext ctx;
    ctx.AddMetadata("x-canary", "yes");
    EchoRequest req;
    EchoResponse resp;
    ASSERT_TRUE(stub->Unary(&ctx, req, &resp).ok());
    EXPECT_EQ(ctx.peer(), backends_[1]->address()) << "x-canary: yes goes to b";
    ClientContext stats_ctx;
    test::StatsRequest sreq;
    test::StatsResponse sresp;
    ASSERT_TRUE(stub->Stats(&stats_ctx, sreq, &sresp).ok());
    EXPECT_EQ(stats_ctx.peer(), backends_[1]->address()) << "Stats goes to b by its path";
  }
}

TEST_F(XdsChannelTest, APriorityFailsOverToTheNextAndBack) {
  Snapshot s =
      OneCluster("2", {{.endpoints = {backends_[0]->address()}, .priority = 0},
                       {.endpoints = {backends_[1]->address()}, .priority = 1, .zone = "z2"}});
  Serve(s);
  ChannelArguments args;
  args.SetInt("grpc.initial_reconnect_backoff_ms", 200);
  args.SetInt("grpc.max_reconnect_backoff_ms", 500);
  auto stub = TestService::NewStub(XdsChannel("xds:///greeter", args));
  const std::string primary = backends_[0]->address(), secondary = backends_[1]->address();
  for (int i = 0; i < 20; ++i) {
    std::string peer;
    ASSERT_TRUE(Call(*stub, &peer).ok());
    EXPECT_EQ(peer, primary) << "priority 0 takes every call while it is up";
  }
  const int port = backends_[0]->port();
  backends_[0]->Kill();
  // Priority 0's only endpoint refuses: the calls go to priority 1.
  int failed = 0, on_secondary = 0;
  for (int i = 0; i < 200; ++i) {
    std::string peer;
    Status st = Call(*stub, &peer);
    if (!st.ok()) {
      ++failed;
      continue;
    }
    EXPECT_EQ(peer, secondary);
    ++on_secondary;
  }
  // A call racing the kill on the old connection may fail; no other.
  EXPECT_LE(failed, 1);
  EXPECT_GE(on_secondary, 199);
  // Back on the same port: once its backoff allows a dial, priority 0
  // takes the calls again.
  auto back = ServerProcess::Start(absl::StrCat("127.0.0.1:", port));
  ASSERT_TRUE(back.ok()) << back.status();
  backends_[0] = std::move(*back);
  const auto start = std::chrono::steady_clock::now();
  std::string peer;
  while (peer != primary && std::chrono::steady_clock::now() < start + 20s) {
    Status st = Call(*stub, &peer);
    ASSERT_TRUE(st.ok()) << st.error_message();
  }
  const double took_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "priority failover: %d of 200 calls failed at the kill, %d went to priority 1; back on "
      "priority 0 %.0f ms after it restarted\n",
      failed, on_secondary, took_ms);
  ASSERT_EQ(peer, primary);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(Call(*stub, &peer).ok());
    EXPECT_EQ(peer, primary);
  }
}

TEST_F(XdsChannelTest, LocalityWeightsSplitACluster3To1) {
  Snapshot s = OneCluster(
      "2", {{.endpoints = {backends_[0]->address(), backends_[2]->address()}, .weight = 3},
            {.endpoints = {backends_[1]->address()}, .weight = 1, .zone = "z2"}});
  Serve(s);
  auto stub = TestService::NewStub(XdsChannel("xds:///greeter"));
  constexpr int kCalls = 4000;
  std::map<std::string, int> per_backend;
  for (int i = 0; i < kCalls; ++i) {
    std::string peer;
    ASSERT_TRUE(Call(*stub, &peer).ok());
    ++per_backend[peer];
  }
  const int z1 = per_backend[backends_[0]->address()] + per_backend[backends_[2]->address()];
  const int z2 = per_backend[backends_[1]->address()];
  std::printf(
      "locality weights 3:1: %d calls to z1 (%.2f%%: %d and %d on its two endpoints), %d to z2 "
      "(%.2f%%)\n",
      z1, 100.0 * z1 / kCalls, per_backend[backends_[0]->address()],
      per_backend[backends_[2]->address()], z2, 100.0 * z2 / kCalls);
  EXPECT_EQ(z1 + z2, kCalls);
  EXPECT_NEAR(z1, 3000, 200);  // 5 points of 4000
  EXPECT_NEAR(z2, 1000, 200);
  // Within z1, round_robin over its two endpoints.
  EXPECT_NEAR(per_backend[backends_[0]->address()], per_backend[backends_[2]->address()], 20);
}

TEST_F(XdsChannelTest, RoutesWithNoVirtualHostForTheTargetFailCallsEvenAfterAnEdsUpdate) {
  auto stub = TestService::NewStub(XdsChannel("xds:///greeter"));
  ASSERT_TRUE(Call(*stub, nullptr).ok());
  auto elsewhere = [&](const std::string& version, int backend) {
    Snapshot s(version);
    s.Add(ListenerJson("greeter", "greeter-routes"))
        .Add(RouteConfigWithRoutes("greeter-routes", {RouteJson(R"({"prefix": ""})", {{"c1", 1}})},
                                   "other.example.com"))
        .Add(ClusterJson("c1"))
        .Add(EndpointsJson("c1", {{.endpoints = {backends_[backend]->address()}}}));
    return s;
  };
  Serve(elsewhere("2", 0));
  const std::string why =
      "xDS: RouteConfiguration \"greeter-routes\" has no virtual host for \"greeter\"";
  const auto end = std::chrono::steady_clock::now() + 20s;
  Status st;
  do {
    st = Call(*stub, nullptr);
  } while (st.ok() && std::chrono::steady_clock::now() < end);
  EXPECT_EQ(st.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_EQ(st.error_message(), why);
  // The cluster's endpoints change: the routes still have nothing for
  // "greeter", so calls still fail (the old routes are not published
  // again).
  Serve(elsewhere("3", 2));
  EXPECT_TRUE(WaitForLog("ACK ClusterLoadAssignment version=3")) << Log();
  for (int i = 0; i < 20; ++i) {
    st = Call(*stub, nullptr);
    EXPECT_EQ(st.error_message(), why);
  }
}

TEST_F(XdsChannelTest, ARoutesMaxStreamDurationShortensTheCallsDeadline) {
  Serve(TwoClusters(
      backends_,
      {RouteJson(R"({"prefix": "", "headers": [{"name": "x-limited", "presentMatch": true}]})",
                 {{"a", 1}}, R"("maxStreamDuration": {"grpcTimeoutHeaderMax": "0.3s"})"),
       RouteJson(R"({"prefix": ""})", {{"b", 1}})}));
  auto stub = TestService::NewStub(XdsChannel("xds:///greeter"));
  // A call that sleeps `sleep_ms` on the server, the caller allowing 20 s.
  auto call = [&](bool limited, int sleep_ms, std::chrono::steady_clock::duration* took) {
    ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 20s);
    if (limited) ctx.AddMetadata("x-limited", "1");
    EchoRequest req;
    req.set_sleep_ms(sleep_ms);
    EchoResponse resp;
    const auto start = std::chrono::steady_clock::now();
    Status st = stub->Unary(&ctx, req, &resp);
    *took = std::chrono::steady_clock::now() - start;
    return st;
  };
  std::chrono::steady_clock::duration took;
  Status st = call(true, 3000, &took);
  EXPECT_EQ(st.error_code(), StatusCode::DEADLINE_EXCEEDED) << st.error_message();
  EXPECT_LT(took, 2500ms)
      << "the route's 0.3 s ends it, not the caller's 20 s nor the server's 3 s";
  EXPECT_TRUE(call(true, 0, &took).ok()) << "a quick call is within the limit";
  st = call(false, 500, &took);
  EXPECT_TRUE(st.ok()) << "the other route has no limit: " << st.error_message();
}

TEST_F(XdsChannelTest, AMissingClusterFailsOnlyTheCallsRoutedToIt) {
  Snapshot s = TwoClusters(
      backends_,
      {RouteJson(R"({"prefix": "", "headers": [{"name": "x-canary", "exactMatch": "yes"}]})",
                 {{"ghost", 1}}),
       RouteJson(R"({"prefix": ""})", {{"a", 1}})});
  Serve(s);
  auto stub = TestService::NewStub(XdsChannel("xds:///greeter"));
  std::string peer;
  ASSERT_TRUE(Call(*stub, &peer).ok());  // once "ghost" does not exist (the 1 s timer)
  EXPECT_EQ(peer, backends_[0]->address());
  ClientContext ctx;
  ctx.AddMetadata("x-canary", "yes");
  EchoRequest req;
  EchoResponse resp;
  Status st = stub->Unary(&ctx, req, &resp);
  EXPECT_EQ(st.error_code(), StatusCode::UNAVAILABLE) << st.error_message();
  EXPECT_EQ(st.error_message(), "xDS: Cluster \"ghost\" does not exist");
  // A call that matches no route fails naming the route configuration.
  Serve(TwoClusters(backends_, {RouteJson(R"({"prefix": "/other."})", {{"a", 1}})}));
  const auto end = std::chrono::steady_clock::now() + 20s;
  do {
    st = Call(*stub, nullptr);
  } while (st.ok() && std::chrono::steady_clock::now() < end);
  EXPECT_EQ(st.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_EQ(st.error_message(),
            "xDS: no route of RouteConfiguration \"greeter-routes\" matches "
            "/ringrpc.test.TestService/Unary");
}

}  // namespace
}  // namespace ringrpc
