// What the per-call telemetry adds to one call on its CQ thread, measured
// alone (quick_unary's last row measures it inside whole calls, where the
// run-to-run noise on a small machine is larger than this):
//   BM_CallRecorded   a call's work: the method's row, attempt started,
//                     attempt ended, call ended (the table's part)
//   BM_ClockReads     the two clock reads a call adds
// Usage: bazel run //bench:call_metrics_benchmark
#include <benchmark/benchmark.h>

#include "ringrpc/base/time.h"
#include "ringrpc/client/channel/call_metrics_table.h"

namespace {

using ringrpc::StatusCode;
using ringrpc::channel::CallMetricsTable;

void BM_CallRecorded(benchmark::State& state) {
  CallMetricsTable table(1, nullptr);
  table.set_target("dns:///bench:443");
  const std::string path = "/ringrpc.test.TestService/Unary";
  int64_t i = 0;
  for (auto _ : state) {
    auto* row = table.Method(0, path);
    table.AttemptStarted(row);
    const auto took = std::chrono::microseconds(50 + (++i & 1023));
    table.AttemptEnded(row, StatusCode::OK, took, 12, 14);
    table.CallEnded(row, StatusCode::OK, took);
  }
  benchmark::DoNotOptimize(table.Snapshot());
}
BENCHMARK(BM_CallRecorded);

void BM_ClockReads(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(ringrpc::Clock::now());
    benchmark::DoNotOptimize(ringrpc::Clock::now());
  }
}
BENCHMARK(BM_ClockReads);

}  // namespace

BENCHMARK_MAIN();
