// The xDS scenarios of issue 18 with grpc-js's own xDS client
// (@grpc/grpc-js-xds, tests/xds/reference/client.js) against the same
// control plane and grpc++ backends as ringrpc's (xds_channel_test): the
// control plane and the scenarios are checked against an existing xDS
// client, not only against ours.
//
// Needs the npm packages: tests/xds/reference/run.sh installs them (npm
// ci, cached) and runs this test with RINGRPC_XDS_REFERENCE_NODE_MODULES
// set (tools/test.sh does). Tagged manual: `bazel test //...` skips it.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "tests/xds/scenario_fixture.h"

extern char** environ;

namespace ringrpc::testing::xds {
namespace {

// One `node client.js` process: one grpc-js channel to the target for its
// life, driven by commands on its stdin.
class NodeClient {
 public:
  static std::unique_ptr<NodeClient> Start(const std::string& bootstrap,
                                           const std::string& target) {
    const char* modules = std::getenv("RINGRPC_XDS_REFERENCE_NODE_MODULES");
    if (modules == nullptr) {
      ADD_FAILURE()
          << "RINGRPC_XDS_REFERENCE_NODE_MODULES is not set: run tests/xds/reference/run.sh";
      return nullptr;
    }
    int in[2], out[2];
    if (::pipe(in) != 0 || ::pipe(out) != 0) return nullptr;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, in[1]);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    std::vector<std::string> args = {"node", "tests/xds/reference/client.js", target,
                                     "tests/proto/echo_test.proto"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env = {std::string("NODE_PATH=") + modules,
                                    "GRPC_XDS_BOOTSTRAP_CONFIG=" + bootstrap,
                                    "PATH=/usr/local/bin:/usr/bin:/bin"};
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid;
    const int rc = posix_spawnp(&pid, "node", &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    ::close(in[0]);
    ::close(out[1]);
    if (rc != 0) {
      ADD_FAILURE() << "cannot start node: " << rc;
      ::close(in[1]);
      ::close(out[0]);
      return nullptr;
    }
    return std::unique_ptr<NodeClient>(new NodeClient(pid, in[1], out[0]));
  }

  ~NodeClient() {
    ::close(to_);
    ::close(from_);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }

  // "unary 100", "unary 20 x-canary=yes", "stats 10": the JSON result
  // (ok, failed, peers, codes, error); null if the client died.
  nlohmann::json Run(const std::string& command) {
    const std::string line = command + "\n";
    if (::write(to_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return nullptr;
    std::string got;
    char c;
    while (::read(from_, &c, 1) == 1 && c != '\n') got.push_back(c);
    if (got.empty()) return nullptr;
    return nlohmann::json::parse(got, nullptr, false);
  }

 private:
  NodeClient(pid_t pid, int to, int from) : pid_(pid), to_(to), from_(from) {}
  pid_t pid_;
  int to_, from_;
};

int On(const nlohmann::json& r, const std::unique_ptr<ServerProcess>& backend) {
  return r["peers"].value(backend->address(), 0);
}

class ReferenceClientTest : public XdsScenarioTest {
 protected:
  std::unique_ptr<NodeClient> Client(const std::string& target = "xds:///greeter") {
    auto c = NodeClient::Start(bootstrap_, target);
    EXPECT_NE(c, nullptr);
    return c;
  }
};

TEST_F(ReferenceClientTest, TheEdsEndpointsShareTheCalls) {
  auto client = Client();
  ASSERT_NE(client, nullptr);
  // The first batch may all go to the first endpoint ready (grpc-js's
  // round_robin picks among READY ones): until both serve.
  nlohmann::json r;
  const auto end = std::chrono::steady_clock::now() + 20s;
  do {
    r = client->Run("unary 20");
    ASSERT_FALSE(r.is_null());
  } while ((On(r, backends_[0]) == 0 || On(r, backends_[1]) == 0) &&
           std::chrono::steady_clock::now() < end);
  r = client->Run("unary 200");
  EXPECT_EQ(r["ok"], 200) << r.dump();
  EXPECT_GT(On(r, backends_[0]), 80) << r.dump();
  EXPECT_GT(On(r, backends_[1]), 80) << r.dump();
  EXPECT_NE(Log().find("ACK ClusterLoadAssignment version=1"), std::string::npos) << Log();
}

TEST_F(ReferenceClientTest, WeightedClustersSplitTheCalls70To30) {
  Serve(TwoClusters(backends_, {RouteJson(R"({"prefix": ""})", {{"a", 70}, {"b", 30}})}));
  auto client = Client();
  ASSERT_NE(client, nullptr);
  nlohmann::json r = client->Run("unary 10000");
  ASSERT_FALSE(r.is_null());
  std::printf("grpc-js-xds, weighted clusters 70/30: %d to a, %d to b, %d failed\n",
              On(r, backends_[0]), On(r, backends_[1]), r["failed"].get<int>());
  EXPECT_EQ(r["ok"], 10000) << r.dump();
  EXPECT_NEAR(On(r, backends_[0]), 7000, 500);
  EXPECT_NEAR(On(r, backends_[1]), 3000, 500);
}

TEST_F(ReferenceClientTest, RoutesMatchTheCallsPathAndHeadersInOrder) {
  Serve(CanaryAndStatsToB(backends_));
  auto client = Client();
  ASSERT_NE(client, nullptr);
  nlohmann::json plain = client->Run("unary 20"), canary = client->Run("unary 20 x-canary=yes"),
                 stats = client->Run("stats 20");
  EXPECT_EQ(On(plain, backends_[0]), 20) << plain.dump();
  EXPECT_EQ(On(canary, backends_[1]), 20) << canary.dump();
  EXPECT_EQ(On(stats, backends_[1]), 20) << stats.dump();
}

TEST_F(ReferenceClientTest, AnEdsUpdateMovesTheCallsToTheNewEndpoints) {
  auto client = Client();
  ASSERT_NE(client, nullptr);
  ASSERT_EQ(client->Run("unary 100")["ok"], 100);
  Serve(Base("2", {2, 3}));
  // Until the new endpoints serve, then 500 more: none on the old ones.
  const auto end = std::chrono::steady_clock::now() + 20s;
  nlohmann::json r;
  do {
    r = client->Run("unary 100");
    ASSERT_FALSE(r.is_null());
  } while (On(r, backends_[2]) + On(r, backends_[3]) < 100 &&
           std::chrono::steady_clock::now() < end);
  r = client->Run("unary 500");
  EXPECT_EQ(r["failed"], 0) << r.dump();
  EXPECT_EQ(On(r, backends_[0]) + On(r, backends_[1]), 0) << r.dump();
  EXPECT_GT(On(r, backends_[2]), 100) << r.dump();
  EXPECT_GT(On(r, backends_[3]), 100) << r.dump();
}

TEST_F(ReferenceClientTest, APriorityFailsOverToTheNextAndBack) {
  Snapshot s =
      OneCluster("2", {{.endpoints = {backends_[0]->address()}, .priority = 0},
                       {.endpoints = {backends_[1]->address()}, .priority = 1, .zone = "z2"}});
  Serve(s);
  auto client = Client();
  ASSERT_NE(client, nullptr);
  nlohmann::json r = client->Run("unary 50");
  EXPECT_EQ(On(r, backends_[0]), 50) << r.dump();
  const int port = backends_[0]->port();
  backends_[0]->Kill();
  const auto end = std::chrono::steady_clock::now() + 20s;
  do {
    r = client->Run("unary 50");
  } while (On(r, backends_[1]) < 50 && std::chrono::steady_clock::now() < end);
  EXPECT_EQ(On(r, backends_[1]), 50) << r.dump();
  auto back = ServerProcess::Start(absl::StrCat("127.0.0.1:", port));
  ASSERT_TRUE(back.ok()) << back.status();
  backends_[0] = std::move(*back);
  const auto end2 = std::chrono::steady_clock::now() + 30s;
  do {
    r = client->Run("unary 50");
  } while (On(r, backends_[0]) < 50 && std::chrono::steady_clock::now() < end2);
  EXPECT_EQ(On(r, backends_[0]), 50) << r.dump();
}

TEST_F(ReferenceClientTest, LocalityWeightsSplitACluster3To1) {
  Snapshot s = OneCluster(
      "2", {{.endpoints = {backends_[0]->address(), backends_[2]->address()}, .weight = 3},
            {.endpoints = {backends_[1]->address()}, .weight = 1, .zone = "z2"}});
  Serve(s);
  auto client = Client();
  ASSERT_NE(client, nullptr);
  nlohmann::json r = client->Run("unary 4000");
  const int z1 = On(r, backends_[0]) + On(r, backends_[2]), z2 = On(r, backends_[1]);
  std::printf("grpc-js-xds, locality weights 3:1: %d to z1, %d to z2\n", z1, z2);
  EXPECT_NEAR(z1, 3000, 200) << r.dump();
  EXPECT_NEAR(z2, 1000, 200) << r.dump();
}

TEST_F(ReferenceClientTest, CallsGoOnWhileTheControlPlaneIsDown) {
  auto client = Client();
  ASSERT_NE(client, nullptr);
  ASSERT_EQ(client->Run("unary 20")["ok"], 20);
  control_plane_->Kill();
  std::this_thread::sleep_for(300ms);
  nlohmann::json r = client->Run("unary 100");
  EXPECT_EQ(r["ok"], 100) << r.dump();
  EXPECT_EQ(On(r, backends_[0]) + On(r, backends_[1]), 100) << r.dump();
}

TEST_F(ReferenceClientTest, ANackedUpdateKeepsTheLastGoodEndpoints) {
  auto client = Client();
  ASSERT_NE(client, nullptr);
  ASSERT_EQ(client->Run("unary 20")["ok"], 20);
  // An endpoint that is not an IP address: NACKed.
  Snapshot bad = OneCluster("2", {{.endpoints = {"backend.example.com:80"}}});
  ASSERT_TRUE(bad.WriteTo(snapshot_path_));
  EXPECT_TRUE(WaitForLog("NACK ClusterLoadAssignment version=1")) << Log();
  nlohmann::json r = client->Run("unary 50");
  EXPECT_EQ(On(r, backends_[0]) + On(r, backends_[1]), 50) << r.dump();
}

TEST_F(ReferenceClientTest, AMissingListenerIsAskedForAndNoCallSucceeds) {
  auto client = Client("xds:///no-such-service");
  ASSERT_NE(client, nullptr);
  // grpc-js 1.14 keeps the call waiting for name resolution past its 15 s
  // does-not-exist timer, to the deadline (grpc++ and ringrpc fail it
  // UNAVAILABLE naming the Listener): the call fails either way.
  nlohmann::json r = client->Run("unary 1 deadline=17000");
  EXPECT_EQ(r["failed"], 1) << r.dump();
  const int unavailable = r["codes"].value("14", 0), deadline = r["codes"].value("4", 0);
  EXPECT_EQ(unavailable + deadline, 1) << r.dump();
  EXPECT_NE(Log().find("REQUEST Listener names=no-such-service"), std::string::npos) << Log();
  EXPECT_EQ(Log().find("resources=no-such-service"), std::string::npos) << Log();
}

}  // namespace
}  // namespace ringrpc::testing::xds
