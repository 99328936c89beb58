// quick_unary: a first head-to-head, before issue 6's full loadgen. One
// grpc++ 1.51 server process (tests/server/test_server); in this process,
// sequential unary calls (concurrency 1) through:
//   ringrpc blocking      - caller thread hops to a CQ thread and back
//   ringrpc coroutine     - the loop on a CQ thread (no hop)
//   grpc++ sync stub      - Debian's libgrpc++ client
// and the coroutine path once more on a channel with ringrpc.call_metrics=0,
// which shows what the per-call telemetry (on by default) costs.
// Prints wall microseconds per call and client CPU microseconds per call
// (getrusage of this process, user+sys; the server is another process),
// and ringrpc / grpc++ ratios. Usage: bazel run -c opt //bench:quick_unary
// [-- --calls=N]
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <string>

#include "tests/proto/echo_test.grpc.pb.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/server_process.h"

namespace {

double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct Result {
  double wall_us, cpu_us;
};

template <typename F>
Result Measure(int calls, F run) {
  auto t0 = std::chrono::steady_clock::now();
  double c0 = CpuSeconds();
  run(calls);
  double c1 = CpuSeconds();
  auto t1 = std::chrono::steady_clock::now();
  return {std::chrono::duration<double, std::micro>(t1 - t0).count() / calls,
          (c1 - c0) * 1e6 / calls};
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 20000;
  std::string only;  // "blocking", "coroutine" or "grpc": run just that one
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--calls=", 8) == 0) calls = std::atoi(argv[i] + 8);
    if (std::strncmp(argv[i], "--only=", 7) == 0) only = argv[i] + 7;
  }
  auto server = ringrpc::testing::ServerProcess::Start();
  if (!server.ok()) {
    std::fprintf(stderr, "server: %s\n", server.status().ToString().c_str());
    return 1;
  }
  const std::string target = (*server)->address();
  ringrpc::test::EchoRequest req;
  req.set_payload("0123456789");

  auto rr_channel = ::ringrpc::CreateChannel(target, ::ringrpc::InsecureChannelCredentials());
  auto rr = ringrpc::test::ring::TestService::NewStub(rr_channel);
  auto rr_blocking = [&](int n) {
    for (int i = 0; i < n; ++i) {
      ::ringrpc::ClientContext ctx;
      ringrpc::test::EchoResponse resp;
      if (!rr->Unary(&ctx, req, &resp).ok()) std::abort();
    }
  };
  ::ringrpc::ChannelArguments no_metrics_args;
  no_metrics_args.SetInt("ringrpc.call_metrics", 0);
  auto rr_bare_channel = ::ringrpc::CreateCustomChannel(
      target, ::ringrpc::InsecureChannelCredentials(), no_metrics_args);
  auto rr_bare = ringrpc::test::ring::TestService::NewStub(rr_bare_channel);
  auto coroutine_on = [&](::ringrpc::Channel& channel,
                          ringrpc::test::ring::TestService::Stub* stub_for, int n) {
    std::promise<void> done;
    channel.Spawn([](ringrpc::test::ring::TestService::Stub* stub,
                     const ringrpc::test::EchoRequest& req, int n,
                     std::promise<void>* done) -> ::ringrpc::Task<void> {
      for (int i = 0; i < n; ++i) {
        ::ringrpc::ClientContext ctx;
        ringrpc::test::EchoResponse resp;
        ::ringrpc::Status s = co_await stub->co_Unary(&ctx, req, &resp);
        if (!s.ok()) std::abort();
      }
      done->set_value();
    }(stub_for, req, n, &done));
    done.get_future().get();
  };
  auto rr_coroutine = [&](int n) { coroutine_on(*rr_channel, rr.get(), n); };
  auto rr_coroutine_bare = [&](int n) { coroutine_on(*rr_bare_channel, rr_bare.get(), n); };
  auto g_channel = grpc::CreateChannel(target, grpc::InsecureChannelCredentials());
  auto g = ringrpc::test::TestService::NewStub(g_channel);
  auto grpc_sync = [&](int n) {
    for (int i = 0; i < n; ++i) {
      grpc::ClientContext ctx;
      ringrpc::test::EchoResponse resp;
      if (!g->Unary(&ctx, req, &resp).ok()) std::abort();
    }
  };

  if (!only.empty()) {  // for strace/perf: one client, no table
    if (only == "grpc") {
      grpc_sync(calls);
    } else if (only == "coroutine") {
      rr_coroutine(calls);
    } else {
      rr_blocking(calls);
    }
    return 0;
  }
  // Warm up all three, then alternate rounds so drift hits all alike.
  rr_blocking(1000);
  rr_coroutine(1000);
  rr_coroutine_bare(1000);
  grpc_sync(1000);
  Result a{0, 0}, b{0, 0}, c{0, 0}, d{0, 0};
  const int rounds = 3;
  for (int r = 0; r < rounds; ++r) {
    Result x = Measure(calls / rounds, rr_blocking);
    Result y = Measure(calls / rounds, rr_coroutine);
    Result z = Measure(calls / rounds, grpc_sync);
    Result w = Measure(calls / rounds, rr_coroutine_bare);
    d = {d.wall_us + w.wall_us / rounds, d.cpu_us + w.cpu_us / rounds};
    a = {a.wall_us + x.wall_us / rounds, a.cpu_us + x.cpu_us / rounds};
    b = {b.wall_us + y.wall_us / rounds, b.cpu_us + y.cpu_us / rounds};
    c = {c.wall_us + z.wall_us / rounds, c.cpu_us + z.cpu_us / rounds};
  }
  std::printf("unary, 10-byte payload, concurrency 1, %d calls each, %d alternating rounds\n",
              calls, rounds);
  std::printf("%-22s %12s %14s %12s %12s\n", "client", "wall us/call", "client CPU us",
              "wall ratio", "CPU ratio");
  auto row = [&](const char* name, Result r) {
    std::printf("%-22s %12.1f %14.1f %12.2f %12.2f\n", name, r.wall_us, r.cpu_us,
                r.wall_us / c.wall_us, r.cpu_us / c.cpu_us);
  };
  row("ringrpc blocking", a);
  row("ringrpc coroutine", b);
  row("grpc++ sync stub", c);
  row("coroutine, no metrics", d);
  std::printf("call metrics cost (coroutine, on - off): %+.2f us CPU per call (%+.1f%%)\n",
              b.cpu_us - d.cpu_us, 100.0 * (b.cpu_us - d.cpu_us) / d.cpu_us);
  std::printf(
      "{\"calls\":%d,\"ringrpc_blocking_us\":%.2f,\"ringrpc_blocking_cpu_us\":%.2f,"
      "\"ringrpc_coroutine_us\":%.2f,\"ringrpc_coroutine_cpu_us\":%.2f,"
      "\"grpcpp_us\":%.2f,\"grpcpp_cpu_us\":%.2f,"
      "\"ringrpc_coroutine_no_metrics_cpu_us\":%.2f}\n",
      calls, a.wall_us, a.cpu_us, b.wall_us, b.cpu_us, c.wall_us, c.cpu_us, d.cpu_us);
  return 0;
}
