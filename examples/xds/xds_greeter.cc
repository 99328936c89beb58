// xds_greeter: the helloworld client on an xds:/// target. Starts two grpc++
// Greeter backends in this process, the test control plane
// (tests/xds/control_plane) as a child serving a snapshot this program
// writes, points GRPC_XDS_BOOTSTRAP_CONFIG at it, and calls
// "xds:///greeter" through the generated ringrpc stub. Then moves the
// cluster's endpoints from backend 1 to backend 2 by rewriting the
// snapshot and shows the calls follow. Exits 0 when they did.
//
//   bazel run //examples/xds:xds_greeter
#include <grpcpp/grpcpp.h>
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "examples/helloworld/helloworld.grpc.pb.h"
#include "examples/helloworld/helloworld.ringrpc.pb.h"
#include "tests/testing/server_process.h"
#include "tests/xds/snapshot.h"

namespace {

using namespace ringrpc::testing::xds;

class Backend final : public helloworld::Greeter::Service {
 public:
  explicit Backend(int n) : n_(n) {}
  grpc::Status SayHello(grpc::ServerContext*, const helloworld::HelloRequest* req,
                        helloworld::HelloReply* reply) override {
    reply->set_message(absl::StrCat("Hello ", req->name(), " from backend ", n_));
    return grpc::Status::OK;
  }

 private:
  int n_;
};

std::unique_ptr<grpc::Server> Serve(Backend* b, int* port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), port);
  builder.RegisterService(b);
  return builder.BuildAndStart();
}

Snapshot Config(const std::string& version, int port) {
  Snapshot s(version);
  s.Add(ListenerJson("greeter", "greeter-routes"))
      .Add(RouteConfigJson("greeter-routes", {{"greeter-cluster", 1}}))
      .Add(ClusterJson("greeter-cluster"))
      .Add(EndpointsJson("greeter-cluster", {{.endpoints = {absl::StrCat("127.0.0.1:", port)}}}));
  return s;
}

}  // namespace

int main() {
  Backend one(1), two(2);
  int port1 = 0, port2 = 0;
  auto s1 = Serve(&one, &port1);
  auto s2 = Serve(&two, &port2);
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string snapshot =
      std::string(tmp != nullptr ? tmp : "/tmp") + "/xds_greeter_snapshot.json";
  Config("1", port1).WriteTo(snapshot);
  auto cp = ringrpc::testing::ServerProcess::Start(
      "127.0.0.1:0", "tests/xds/control_plane",
      {"--snapshot=" + snapshot, "--log=" + snapshot + ".log"});
  if (s1 == nullptr || s2 == nullptr || !cp.ok()) {
    std::fprintf(stderr, "could not start the backends or the control plane\n");
    return 1;
  }
  const int cp_port = (*cp)->port();
  const std::string bootstrap = absl::StrCat(
      R"({"xds_servers": [{"server_uri": "127.0.0.1:)", cp_port,
      R"(", "channel_creds": [{"type": "insecure"}]}], "node": {"id": "xds-greeter"}})");
  ::setenv("GRPC_XDS_BOOTSTRAP_CONFIG", bootstrap.c_str(), 1);
  std::printf("bootstrap: %s\n", bootstrap.c_str());

  auto stub = helloworld::ring::Greeter::NewStub(
      ringrpc::CreateChannel("xds:///greeter", ringrpc::InsecureChannelCredentials()));
  auto call = [&](const char* name) {
    ringrpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    helloworld::HelloRequest req;
    req.set_name(name);
    helloworld::HelloReply reply;
    ringrpc::Status s = stub->SayHello(&ctx, req, &reply);
    return s.ok() ? reply.message() : "error: " + s.ToString();
  };
  bool ok = true;
  std::string r = call("xds");
  std::printf("xds:///greeter: %s\n", r.c_str());
  ok &= r == "Hello xds from backend 1";

  // The control plane moves greeter-cluster to backend 2.
  Config("2", port2).WriteTo(snapshot);
  std::string moved;
  for (int i = 0; i < 500 && moved.find("backend 2") == std::string::npos; ++i) {
    moved = call("xds");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::printf("after the EDS update: %s\n", moved.c_str());
  ok &= moved == "Hello xds from backend 2";

  std::printf("%s\n", ok ? "xds replies correct" : "SOME REPLIES WRONG");
  stub.reset();
  (*cp)->Terminate();
  s1->Shutdown();
  s2->Shutdown();
  return ok ? 0 : 1;
}
