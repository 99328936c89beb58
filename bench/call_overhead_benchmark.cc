// call_overhead_benchmark: Google Benchmark of one unary call's cost to
// the client, with a grpc++ callback-API server in this process on a
// loopback port (so it is one process: compare the clients with each other,
// not with bench/loadgen's numbers, where the server is another process).
//
//   bazel run //bench:call_overhead_benchmark -- --benchmark_repetitions=3
//
// BM_RingrpcCoroutine: sequential co_Unary calls on a CQ thread (the
// batch runs there; the benchmark thread waits for it).
// BM_RingrpcBlocking:  the generated blocking stub (the caller thread hops
// to a CQ thread and back).
// BM_GrpcppSync:       grpc++'s sync stub, one channel.
// CPU time is the whole process's (client and server threads), per call.
#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>

#include <future>
#include <memory>
#include <string>

#include "tests/proto/echo_test.grpc.pb.h"
#include "tests/proto/echo_test.ringrpc.pb.h"

namespace {

using ringrpc::test::EchoRequest;
using ringrpc::test::EchoResponse;

class EchoService final : public ringrpc::test::TestService::CallbackService {
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* ctx, const EchoRequest* req,
                                  EchoResponse* resp) override {
    resp->set_payload(req->payload());
    grpc::ServerUnaryReactor* r = ctx->DefaultReactor();
    r->Finish(grpc::Status::OK);
    return r;
  }
};

// One server for the whole run.
struct Fixture {
  Fixture() {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(&service);
    server = b.BuildAndStart();
    target = "127.0.0.1:" + std::to_string(port);
    ring_channel = ringrpc::CreateChannel(target, ringrpc::InsecureChannelCredentials());
    ring = ringrpc::test::ring::TestService::NewStub(ring_channel);
    grpc = ringrpc::test::TestService::NewStub(
        grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
    request.set_payload("ping");
  }
  EchoService service;
  int port = 0;
  std::unique_ptr<grpc::Server> server;
  std::string target;
  std::shared_ptr<ringrpc::Channel> ring_channel;
  std::unique_ptr<ringrpc::test::ring::TestService::Stub> ring;
  std::unique_ptr<ringrpc::test::TestService::Stub> grpc;
  EchoRequest request;
};

Fixture& F() {
  static auto* f = new Fixture();  // lives for the process
  return *f;
}

ringrpc::Task<void> Calls(int64_t n, std::promise<int64_t>* failed) {
  int64_t bad = 0;
  EchoResponse resp;
  for (int64_t i = 0; i < n; ++i) {
    ringrpc::ClientContext ctx;
    ringrpc::Status s = co_await F().ring->co_Unary(&ctx, F().request, &resp);
    bad += !s.ok();
  }
  failed->set_value(bad);
}

void BM_RingrpcCoroutine(benchmark::State& state) {
  while (state.KeepRunningBatch(1000)) {
    std::promise<int64_t> failed;
    F().ring_channel->Spawn(Calls(1000, &failed));
    if (failed.get_future().get() != 0) state.SkipWithError("calls failed");
  }
}
BENCHMARK(BM_RingrpcCoroutine)->UseRealTime()->MeasureProcessCPUTime();

void BM_RingrpcBlocking(benchmark::State& state) {
  EchoResponse resp;
  for (auto _ : state) {
    ringrpc::ClientContext ctx;
    if (!F().ring->Unary(&ctx, F().request, &resp).ok()) state.SkipWithError("call failed");
  }
}
BENCHMARK(BM_RingrpcBlocking)->UseRealTime()->MeasureProcessCPUTime();

void BM_GrpcppSync(benchmark::State& state) {
  EchoResponse resp;
  for (auto _ : state) {
    grpc::ClientContext ctx;
    if (!F().grpc->Unary(&ctx, F().request, &resp).ok()) state.SkipWithError("call failed");
  }
}
BENCHMARK(BM_GrpcppSync)->UseRealTime()->MeasureProcessCPUTime();

}  // namespace

BENCHMARK_MAIN();
