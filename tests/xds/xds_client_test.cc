// The ADS client (ringrpc/client/xds/xds_client.h) against the test control plane
// (tests/xds/control_plane.cc, a grpc++ process serving a snapshot file
// this test rewrites): subscribing, ACK and NACK with versions and nonces
// as the control plane logs them, does-not-exist, deletion, and the cache
// kept across a control plane restart.
#include "ringrpc/client/xds/xds_client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/testing/server_process.h"
#include "tests/xds/snapshot.h"

namespace ringrpc::xds {
namespace {

using namespace std::chrono_literals;
using testing::ServerProcess;
using namespace ringrpc::testing::xds;

// What a watcher heard, in order.
struct Event {
  enum Kind { kUpdate, kDoesNotExist, kError } kind;
  std::shared_ptr<const XdsResource> resource;
  std::string error;
};

class RecordingWatcher final : public XdsWatcher {
 public:
  void OnUpdate(std::shared_ptr<const XdsResource> r) override {
    Push({Event::kUpdate, std::move(r), ""});
  }
  void OnDoesNotExist() override { Push({Event::kDoesNotExist, nullptr, ""}); }
  void OnError(absl::Status s) override {
    Push({Event::kError, nullptr, std::string(s.message())});
  }

  // The next event (waits up to `timeout`); nullopt if none came.
  std::optional<Event> Next(std::chrono::milliseconds timeout = 20s) {
    std::unique_lock<std::mutex> l(mu_);
    if (!cv_.wait_for(l, timeout, [&] { return !events_.empty(); })) return std::nullopt;
    Event e = std::move(events_.front());
    events_.pop_front();
    return e;
  }
  // The next event that is not kError (stream errors are skipped).
  std::optional<Event> NextNonError(std::chrono::milliseconds timeout = 20s) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      std::optional<Event> e = Next(std::chrono::duration_cast<std::chrono::milliseconds>(
          end - std::chrono::steady_clock::now()));
      if (!e || e->kind != Event::kError) return e;
    }
    return std::nullopt;
  }
  size_t Pending() {
    std::lock_guard<std::mutex> l(mu_);
    return events_.size();
  }

 private:
  void Push(Event e) {
    {
      std::lock_guard<std::mutex> l(mu_);
      events_.push_back(std::move(e));
    }
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
};

template <typename T>
const T& As(const Event& e) {
  return std::get<T>(*e.resource);
}

class XdsClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    dir_ = tmp != nullptr ? tmp : "/tmp";
    snapshot_path_ = dir_ + "/snapshot.json";
    log_path_ = dir_ + "/control_plane.log";
    std::remove(log_path_.c_str());
    ASSERT_TRUE(Base("1").WriteTo(snapshot_path_));
    StartControlPlane("127.0.0.1:0");
    XdsBootstrap b;
    b.servers.push_back({.server_uri = control_plane_->address()});
    b.node.id = "xds-client-test";
    b.node.cluster = "tests";
    XdsClientOptions o;
    o.resource_does_not_exist_timeout = 1s;
    o.initial_backoff = 100ms;
    o.max_backoff = 500ms;
    absl::StatusOr<std::shared_ptr<XdsClient>> c = XdsClient::Create(std::move(b), o);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = std::move(*c);
  }

  void StartControlPlane(const std::string& listen) {
    auto cp = ServerProcess::Start(listen, "tests/xds/control_plane",
                                   {"--snapshot=" + snapshot_path_, "--log=" + log_path_});
    ASSERT_TRUE(cp.ok()) << cp.status();
    control_plane_ = std::move(*cp);
  }

  static Snapshot Base(const std::string& version,
                       const std::string& endpoint = "127.0.0.1:50001") {
    Snapshot s(version);
    s.Add(ListenerJson("greeter", "greeter-routes"))
        .Add(RouteConfigJson("greeter-routes", {{"c1", 1}}))
        .Add(ClusterJson("c1"))
        .Add(EndpointsJson("c1", {{.endpoints = {endpoint}}}));
    return s;
  }

  std::string Log() const {
    std::ifstream f(log_path_);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  // Waits until the control plane's log has a line containing `needle`.
  bool WaitForLog(const std::string& needle, std::chrono::milliseconds timeout = 20s) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      if (Log().find(needle) != std::string::npos) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  std::string dir_, snapshot_path_, log_path_;
  std::unique_ptr<ServerProcess> control_plane_;
  std::shared_ptr<XdsClient> client_;
};

TEST_F(XdsClientTest, AllFourTypesArriveAndAreAcked) {
  auto lw = std::make_shared<RecordingWatcher>();
  auto rw = std::make_shared<RecordingWatcher>();
  auto cw = std::make_shared<RecordingWatcher>();
  auto ew = std::make_shared<RecordingWatcher>();
  client_->Watch(ResourceType::kListener, "greeter", lw);
  std::optional<Event> e = lw->Next();
  ASSERT_TRUE(e && e->kind == Event::kUpdate) << (e ? e->error : "no event");
  const std::string rds = As<XdsListener>(*e).rds_name;
  EXPECT_EQ(rds, "greeter-routes");
  client_->Watch(ResourceType::kRouteConfig, rds, rw);
  e = rw->Next();
  ASSERT_TRUE(e && e->kind == Event::kUpdate) << (e ? e->error : "no event");
  EXPECT_EQ(As<XdsRouteConfig>(*e).virtual_hosts[0].routes[0].clusters[0].name, "c1");
  client_->Watch(ResourceType::kCluster, "c1", cw);
  e = cw->Next();
  ASSERT_TRUE(e && e->kind == Event::kUpdate) << (e ? e->error : "no event");
  EXPECT_EQ(As<XdsCluster>(*e).kind, XdsCluster::Kind::kEds);
  client_->Watch(ResourceType::kEndpoints, "c1", ew);
  e = ew->Next();
  ASSERT_TRUE(e && e->kind == Event::kUpdate) << (e ? e->error : "no event");
  EXPECT_EQ(As<XdsEndpoints>(*e).priorities[0][0].endpoints[0].address, "127.0.0.1:50001");

  for (const char* type : {"Listener", "RouteConfiguration", "Cluster", "ClusterLoadAssignment"}) {
    EXPECT_TRUE(WaitForLog(absl::StrCat("ACK ", type, " version=1 nonce="))) << type << "\n"
                                                                             << Log();
  }
  EXPECT_NE(Log().find("STREAM open node=xds-client-test"), std::string::npos) << Log();
  EXPECT_EQ(Log().find("NACK"), std::string::npos) << Log();
  // One stream for all four.
  EXPECT_EQ(Log().find("STREAM open", Log().find("STREAM open") + 1), std::string::npos) << Log();
}

TEST_F(XdsClientTest, ANewVersionReachesTheWatcherAndAnUnchangedResourceIsNotAnnouncedAgain) {
  auto ew = std::make_shared<RecordingWatcher>();
  auto cw = std::make_shared<RecordingWatcher>();
  client_->Watch(ResourceType::kEndpoints, "c1", ew);
  client_->Watch(ResourceType::kCluster, "c1", cw);
  ASSERT_EQ(ew->Next()->kind, Event::kUpdate);
  ASSERT_EQ(cw->Next()->kind, Event::kUpdate);
  ASSERT_TRUE(Base("2", "127.0.0.1:50002").WriteTo(snapshot_path_));
  std::optional<Event> e = ew->Next();
  ASSERT_TRUE(e && e->kind == Event::kUpdate);
  EXPECT_EQ(As<XdsEndpoints>(*e).priorities[0][0].endpoints[0].address, "127.0.0.1:50002");
  EXPECT_TRUE(WaitForLog("ACK ClusterLoadAssignment version=2")) << Log();
  EXPECT_TRUE(WaitForLog("ACK Cluster version=2")) << Log();
  // The cluster came again at version 2, unchanged: not announced.
  EXPECT_EQ(cw->Pending(), 0u);
}

TEST_F(XdsClientTest, AnInvalidResourceIsNackedNamingItAndTheLastGoodOneKept) {
  auto lw = std::make_shared<RecordingWatcher>();
  client_->Watch(ResourceType::kListener, "greeter", lw);
  ASSERT_EQ(lw->Next()->kind, Event::kUpdate);
  ASSERT_TRUE(WaitForLog("ACK Listener version=1"));
  Snapshot bad("2");
  bad.Add(InvalidListenerJson("greeter"));
  ASSERT_TRUE(bad.WriteTo(snapshot_path_));
  std::optional<Event> e = lw->Next();
  ASSERT_TRUE(e && e->kind == Event::kError);
  EXPECT_NE(e->error.find("Listener \"greeter\": no api_listener with an HttpConnectionManager"),
            std::string::npos)
      << e->error;
  // The NACK carries the last accepted version (1), not the rejected one.
  EXPECT_TRUE(WaitForLog("NACK Listener version=1 nonce=")) << Log();
  EXPECT_NE(Log().find("no api_listener with an HttpConnectionManager"), std::string::npos)
      << Log();
  // A new watcher still gets the last good one.
  auto late = std::make_shared<RecordingWatcher>();
  client_->Watch(ResourceType::kListener, "greeter", late);
  e = late->Next();
  ASSERT_TRUE(e && e->kind == Event::kUpdate);
  EXPECT_EQ(As<XdsListener>(*e).rds_name, "greeter-routes");
  // Fixed: accepted again.
  ASSERT_TRUE(Base("3").WriteTo(snapshot_path_));
  EXPECT_TRUE(WaitForLog("ACK Listener version=3")) << Log();
}

TEST_F(XdsClientTest, AResourceNeverSentDoesNotExistAfterTheTimeout) {
  auto w = std::make_shared<RecordingWatcher>();
  const auto start = std::chrono::steady_clock::now();
  client_->Watch(ResourceType::kCluster, "no-such-cluster", w);
  std::optional<Event> e = w->NextNonError();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, Event::kDoesNotExist);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 900ms);  // the 1 s timeout, not at once
  // Once it appears, the watcher hears it.
  Snapshot s = Base("2");
  s.Add(ClusterJson("no-such-cluster"));
  ASSERT_TRUE(s.WriteTo(snapshot_path_));
  e = w->NextNonError();
  ASSERT_TRUE(e && e->kind == Event::kUpdate);
  EXPECT_EQ(As<XdsCluster>(*e).name, "no-such-cluster");
}

TEST_F(XdsClientTest, AListenerLeftOutOfAResponseWasDeleted) {
  auto lw = std::make_shared<RecordingWatcher>();
  client_->Watch(ResourceType::kListener, "greeter", lw);
  ASSERT_EQ(lw->Next()->kind, Event::kUpdate);
  Snapshot s("2");
  s.Add(ClusterJson("c1"));
  ASSERT_TRUE(s.WriteTo(snapshot_path_));
  std::optional<Event> e = lw->NextNonError();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, Event::kDoesNotExist);
}

TEST_F(XdsClientTest, TheCacheOutlivesAControlPlaneRestartAndTheStreamComesBack) {
  auto ew = std::make_shared<RecordingWatcher>();
  client_->Watch(ResourceType::kEndpoints, "c1", ew);
  ASSERT_EQ(ew->Next()->kind, Event::kUpdate);
  ASSERT_TRUE(WaitForLog("ACK ClusterLoadAssignment version=1"));
  const int port = control_plane_->port();
  control_plane_->Kill();
  // The watcher hears the stream end, and nothing else: the endpoints stay.
  std::optional<Event> e = ew->Next();
  ASSERT_TRUE(e && e->kind == Event::kError);
  EXPECT_NE(e->error.find("xDS"), std::string::npos) << e->error;
  // A new watcher meanwhile gets the cached endpoints.
  auto late = std::make_shared<RecordingWatcher>();
  client_->Watch(ResourceType::kEndpoints, "c1", late);
  e = late->Next();
  ASSERT_TRUE(e && e->kind == Event::kUpdate);
  // Back on the same port with version 2: the client re-subscribes on its own.
  ASSERT_TRUE(Base("2", "127.0.0.1:50002").WriteTo(snapshot_path_));
  StartControlPlane(absl::StrCat("127.0.0.1:", port));
  e = ew->NextNonError();
  ASSERT_TRUE(e && e->kind == Event::kUpdate);
  EXPECT_EQ(As<XdsEndpoints>(*e).priorities[0][0].endpoints[0].address, "127.0.0.1:50002");
  EXPECT_TRUE(WaitForLog("ACK ClusterLoadAssignment version=2")) << Log();
  // The new stream asked again with the version it had (1).
  EXPECT_EQ(Log().find("NACK"), std::string::npos) << Log();
}

TEST_F(XdsClientTest, UnwatchingTheLastWatcherUnsubscribes) {
  auto a = std::make_shared<RecordingWatcher>();
  auto b = std::make_shared<RecordingWatcher>();
  client_->Watch(ResourceType::kCluster, "c1", a);
  client_->Watch(ResourceType::kCluster, "c1", b);
  ASSERT_EQ(a->Next()->kind, Event::kUpdate);
  ASSERT_EQ(b->Next()->kind, Event::kUpdate);
  ASSERT_TRUE(WaitForLog("REQUEST Cluster names=c1"));
  client_->Unwatch(ResourceType::kCluster, "c1", a);
  client_->Watch(ResourceType::kCluster, "c2", a);
  ASSERT_TRUE(WaitForLog("REQUEST Cluster names=c1,c2")) << Log();
  client_->Unwatch(ResourceType::kCluster, "c1", b);
  EXPECT_TRUE(WaitForLog("REQUEST Cluster names=c2\n")) << Log();
}

TEST_F(XdsClientTest, DestroyedWithWatchesAndAStreamOpenEndsCleanly) {
  auto w = std::make_shared<RecordingWatcher>();
  client_->Watch(ResourceType::kListener, "greeter", w);
  client_->Watch(ResourceType::kCluster, "never", w);  // a does-not-exist timer running
  ASSERT_EQ(w->Next()->kind, Event::kUpdate);
  client_.reset();
  EXPECT_TRUE(WaitForLog("STREAM closed")) << Log();
}

}  // namespace
}  // namespace ringrpc::xds
