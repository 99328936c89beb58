// tuning: the channel arguments that shape ringrpc's connections, each
// shown by what it changes in the pool metrics. An embedded grpc++ Greeter
// server; 64 calls started at once (callback API) per configuration, and
// for the reservoir, 64 on one CQ thread then 64 on another (coroutines).
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
  int settle_ms = 0;         // wait after the calls (idle timeout demo)
  bool two_threads = false;  // burst on CQ thread 0, settle, then on thread 1
};

// Starts `n` calls at once and waits for all; returns how many succeeded.
int Burst(helloworld::ring::Greeter::Stub& stub, int n) {
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

// The same burst from coroutines on CQ thread `cq` (Channel::SpawnOn).
int BurstOn(::ringrpc::Channel& channel, helloworld::ring::Greeter::Stub& stub, size_t cq, int n) {
  std::atomic<int> ok{0}, done{0};
  std::promise<void> all;
  for (int i = 0; i < n; ++i) {
    auto call = [](helloworld::ring::Greeter::Stub* stub, int i, std::atomic<int>* ok,
                   std::atomic<int>* done, int n,
                   std::promise<void>* all) -> ::ringrpc::Task<void> {
      ::ringrpc::ClientContext ctx;
      helloworld::HelloRequest req;
      req.set_name("call " + std::to_string(i));
      helloworld::HelloReply reply;
      *ok += (co_await stub->co_SayHello(&ctx, req, &reply)).ok();
      if (++*done == n) all->set_value();
    };
    if (!channel.SpawnOn(cq, call(&stub, i, &ok, &done, n, &all)).ok()) return 0;
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

  std::vector<Row> rows(7);
  rows[0].what = "defaults (2 connections/thread, 1000 streams each)";
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
  // Thread 0 dials 16 connections (4 streams each), goes quiet; thread 1
  // then bursts. Without a reservoir it dials its own 16; with one it takes
  // thread 0's parked connections (no handshake).
  for (int r : {5, 6}) {
    rows[r].two_threads = true;
    rows[r].settle_ms = 300;
    rows[r].args.SetInt("ringrpc.cq_threads", 2);
    rows[r].args.SetInt("ringrpc.max_concurrent_streams", 4);
    rows[r].args.SetInt("ringrpc.connections_per_thread", 16);
    rows[r].args.SetInt("ringrpc.reap_interval_ms", 50);
  }
  rows[5].what = "2 threads in turn, no reservoir";
  rows[6].what = "  + ringrpc.reservoir_capacity=16";
  rows[6].args.SetInt("ringrpc.reservoir_capacity", 16);

  std::printf("64 calls at once, target %s\n", target.c_str());
  std::printf("%-52s %4s %8s %8s %6s %9s %12s\n", "configuration", "ok", "dialled", "waits", "live",
              "unparked", "idle-retired");
  bool good = true;
  for (Row& row : rows) {
    row.args.SetInt("grpc.use_local_subchannel_pool", 1);  // each row its own pool
    auto channel =
        ::ringrpc::CreateCustomChannel(target, ::ringrpc::InsecureChannelCredentials(), row.args);
    auto stub = helloworld::ring::Greeter::NewStub(channel);
    int ok, calls = 64;
    if (row.two_threads) {
      ok = BurstOn(*channel, *stub, 0, 64);
      std::this_thread::sleep_for(std::chrono::milliseconds(row.settle_ms));
      ok += BurstOn(*channel, *stub, 1, 64);
      calls = 128;
    } else {
      ok = Burst(*stub, 64);
      std::this_thread::sleep_for(std::chrono::milliseconds(row.settle_ms));
    }
    ::ringrpc::pool::PoolMetrics m = channel->Metrics();
    std::printf("%-52s %4d %8llu %8llu %6llu %9llu %12llu\n", row.what, ok,
                (unsigned long long)m.created, (unsigned long long)m.waits,
                (unsigned long long)m.live, (unsigned long long)m.unparked,
                (unsigned long long)m.retired[size_t(::ringrpc::pool::RetireReason::kIdleTimeout)]);
    good &= ok == calls;
  }
  if (server) server->Shutdown();
  std::printf("%s\n", good ? "all calls succeeded" : "SOME CALLS FAILED");
  return good ? 0 : 1;
}
