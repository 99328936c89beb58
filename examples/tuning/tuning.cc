// tuning: the channel arguments that shape ringrpc's connections, each
// shown by what it changes in the pool metrics. An embedded grpc++ Greeter
// server; 64 calls started at once (callback API) per configuration.
//
//   bazel run //examples/tuning
//   bazel run //examples/tuning -- --target=host:port
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "examples/common/embedded_server.h"
#include "examples/helloworld/helloworld.grpc.pb.h"
#include "examples/helloworld/helloworld.ringrpc.pb.h"

namespace {

class GreeterService final : public helloworld::Greeter::Service {
  grpc::Status SayHello(grpc::ServerContext*, const helloworld::HelloRequest* req,
                        helloworld::HelloReply* reply) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // keep calls in flight
    reply->set_message("Hello " + req->name());
    return grpc::Status::OK;
  }
};

struct Row {
  const char* what;
  ::ringrpc::ChannelArguments args;
  int settle_ms = 0;  // wait after the calls (idle timeout demo)
};

// Starts `n` calls at once and waits for all; returns how many succeeded.
int Burst(helloworld::ringrpc::Greeter::Stub& stub, int n) {
  std::vector<std::unique_ptr<::ringrpc::ClientContext>> ctx(n);
  std::vector<helloworld::HelloRequest> req(n);
  std::vector<helloworld::HelloReply> reply(n);
  std::atomic<int> ok{0}, done{0};
  std::promise<void> all;
  for (int i = 0; i < n; ++i) {
    ctx[i] = std::make_unique<::ringrpc::ClientContext>();
    req[i].set_name("call " + std::to_string(i));
    stub.async()->SayHello(ctx[i].get(), &req[i], &reply[i], [&](::ringrpc::Status s) {
      ok += s.ok();
      if (++done == n) all.set_value();
    });
  }
  all.get_future().get();
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  GreeterService service;
  std::string target;
  std::unique_ptr<grpc::Server> server = examples::ServerFromArgs(argc, argv, &service, &target);
  if (target.empty()) return 1;

  std::vector<Row> rows(5);
  rows[0].what = "defaults (2 connections/thread, 100 streams each)";
  rows[1].what = "ringrpc.max_concurrent_streams=4";
  rows[1].args.SetInt("ringrpc.max_concurrent_streams", 4);
  rows[1].args.SetInt("ringrpc.connections_per_thread", 8);
  rows[2].what = "  + ringrpc.connections_per_thread=2";
  rows[2].args.SetInt("ringrpc.max_concurrent_streams", 4);
  rows[2].args.SetInt("ringrpc.connections_per_thread", 2);
  rows[3].what = "ringrpc.cq_threads=1 (own thread)";
  rows[3].args.SetInt("ringrpc.cq_threads", 1);
  rows[3].args.SetInt("ringrpc.max_concurrent_streams", 4);
  rows[3].args.SetInt("ringrpc.connections_per_thread", 8);
  rows[4].what = "ringrpc.idle_timeout_ms=200, then 1.5 s idle";
  rows[4].args.SetInt("ringrpc.idle_timeout_ms", 200);
  rows[4].settle_ms = 1500;

  std::printf("64 calls at once, target %s\n", target.c_str());
  std::printf("%-52s %4s %8s %8s %6s %12s\n", "configuration", "ok", "dialled", "waits", "live",
              "idle-retired");
  bool good = true;
  for (Row& row : rows) {
    row.args.SetInt("grpc.use_local_subchannel_pool", 1);  // each row its own pool
    auto channel = ::ringrpc::CreateCustomChannel(target, ::ringrpc::InsecureChannelCredentials(),
                                                  row.args);
    auto stub = helloworld::ringrpc::Greeter::NewStub(channel);
    int ok = Burst(*stub, 64);
    std::this_thread::sleep_for(std::chrono::milliseconds(row.settle_ms));
    ::ringrpc::pool::PoolMetrics m = channel->Metrics();
    std::printf("%-52s %4d %8llu %8llu %6llu %12llu\n", row.what, ok,
                (unsigned long long)m.created, (unsigned long long)m.waits,
                (unsigned long long)m.live,
                (unsigned long long)m.retired[size_t(::ringrpc::pool::RetireReason::kIdleTimeout)]);
    good &= ok == 64;
  }
  if (server) server->Shutdown();
  std::printf("%s\n", good ? "all calls succeeded" : "SOME CALLS FAILED");
  return good ? 0 : 1;
}
