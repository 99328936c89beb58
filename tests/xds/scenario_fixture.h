// tests/xds/scenario_fixture.h — what the xDS scenarios (issue 18) start
// for each test: four grpc++ backends (tests/server/test_server), the test
// control plane serving a snapshot file (Listener "greeter" -> routes ->
// cluster c1 -> backends 0 and 1 to begin with), and a bootstrap naming
// it. The scenarios run with ringrpc's client (xds_channel_test) and with
// grpc-js-xds as a reference (reference_client_test).
#ifndef RINGRPC_TESTS_XDS_SCENARIO_FIXTURE_H_
#define RINGRPC_TESTS_XDS_SCENARIO_FIXTURE_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/testing/server_process.h"
#include "tests/xds/snapshot.h"

namespace ringrpc::testing::xds {

using namespace std::chrono_literals;
using ::ringrpc::testing::ServerProcess;

// Listener "greeter" -> routes -> cluster c1 -> these localities.
inline Snapshot OneCluster(const std::string& version, const std::vector<Locality>& localities) {
  Snapshot s(version);
  s.Add(ListenerJson("greeter", "greeter-routes"))
      .Add(RouteConfigJson("greeter-routes", {{"c1", 1}}))
      .Add(ClusterJson("c1"))
      .Add(EndpointsJson("c1", localities));
  return s;
}

inline std::unique_ptr<ServerProcess> Backend() {
  auto s = ServerProcess::Start("127.0.0.1:0", "tests/server/test_server");
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

class XdsScenarioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    const std::string dir = tmp != nullptr ? tmp : "/tmp";
    snapshot_path_ = dir + "/snapshot.json";
    log_path_ = dir + "/control_plane.log";
    for (int i = 0; i < 4; ++i) backends_.push_back(Backend());
    ASSERT_TRUE(Base("1", {0, 1}).WriteTo(snapshot_path_));
    auto cp = ServerProcess::Start("127.0.0.1:0", "tests/xds/control_plane",
                                   {"--snapshot=" + snapshot_path_, "--log=" + log_path_});
    ASSERT_TRUE(cp.ok()) << cp.status();
    control_plane_ = std::move(*cp);
    // grpc-js-xds wants node.locality; ringrpc does not.
    bootstrap_ =
        absl::StrCat(R"({"xds_servers": [{"server_uri": ")", control_plane_->address(),
                     R"(", "channel_creds": [{"type": "insecure"}]}], )",
                     R"("node": {"id": "xds-scenario-test", "locality": {"zone": "z0"}}})");
  }

  // The snapshot: Listener "greeter" -> routes -> cluster c1 -> the
  // backends numbered `eps`.
  Snapshot Base(const std::string& version, const std::vector<int>& eps) {
    Locality l;
    for (int i : eps) l.endpoints.push_back(backends_[i]->address());
    return OneCluster(version, {l});
  }

  std::string Log() const {
    std::ifstream f(log_path_);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }

  // Rewrites the snapshot and waits until the control plane has loaded it
  // (it polls the file every 20 ms): a channel made after this never sees
  // the one before.
  void Serve(const Snapshot& s) {
    const std::string loaded = "SNAPSHOT version=" + s.version();
    const size_t before = Count(loaded);
    ASSERT_TRUE(s.WriteTo(snapshot_path_));
    const auto end = std::chrono::steady_clock::now() + 20s;
    while (Count(loaded) == before && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(5ms);
    }
    ASSERT_GT(Count(loaded), before) << Log();
  }

  // The control plane's log has `needle`, within `timeout`.
  bool WaitForLog(const std::string& needle, std::chrono::milliseconds timeout = 20s) const {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (Log().find(needle) == std::string::npos) {
      if (std::chrono::steady_clock::now() >= end) return false;
      std::this_thread::sleep_for(10ms);
    }
    return true;
  }

  size_t Count(const std::string& line) const {
    const std::string log = Log();
    size_t n = 0;
    for (size_t at = log.find(line); at != std::string::npos; at = log.find(line, at + 1)) ++n;
    return n;
  }

  std::vector<std::unique_ptr<ServerProcess>> backends_;
  std::unique_ptr<ServerProcess> control_plane_;
  std::string snapshot_path_, log_path_, bootstrap_;
};

// Two clusters, a on backend 0 and b on backend 1, behind `routes`.
inline Snapshot TwoClusters(const std::vector<std::unique_ptr<ServerProcess>>& backends,
                            const std::vector<std::string>& routes) {
  Snapshot s("2");
  s.Add(ListenerJson("greeter", "greeter-routes"))
      .Add(RouteConfigWithRoutes("greeter-routes", routes))
      .Add(ClusterJson("a"))
      .Add(ClusterJson("b"))
      .Add(EndpointsJson("a", {{.endpoints = {backends[0]->address()}}}))
      .Add(EndpointsJson("b", {{.endpoints = {backends[1]->address()}}}));
  return s;
}

// Routes in order: "x-canary: yes" to b, TestService/Stats to b, the rest
// of ringrpc.test to a.
inline Snapshot CanaryAndStatsToB(const std::vector<std::unique_ptr<ServerProcess>>& backends) {
  return TwoClusters(
      backends,
      {RouteJson(R"({"prefix": "", "headers": [{"name": "x-canary", "exactMatch": "yes"}]})",
                 {{"b", 1}}),
       RouteJson(R"({"path": "/ringrpc.test.TestService/Stats"})", {{"b", 1}}),
       RouteJson(R"({"prefix": "/ringrpc.test."})", {{"a", 1}})});
}

}  // namespace ringrpc::testing::xds

#endif  // RINGRPC_TESTS_XDS_SCENARIO_FIXTURE_H_
