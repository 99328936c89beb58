// The per-thread call metrics: what is recorded is what is read, merged
// over threads, while other threads record (run under TSAN too).
#include "ringrpc/client/channel/call_metrics_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace ringrpc::channel {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

const CallMetricsSnapshot::Ended* Find(const CallMetricsSnapshot& s, const std::string& method,
                                       StatusCode code) {
  for (const auto& e : s.ended) {
    if (e.method == method && e.status == code) return &e;
  }
  return nullptr;
}

TEST(CallMetricsTable, BucketsAreA66sAndAValueLandsInTheFirstBoundAtOrAboveIt) {
  OwnedHistogram h(CallLatencyBucketsSeconds());
  h.Record(0.0005);  // (0.0003, 0.0006]
  h.Record(0.0006);  // the bound itself belongs to its bucket
  h.Record(1000.0);  // above every bound
  CallMetricsSnapshot::Histogram out;
  h.AddTo(&out);
  ASSERT_EQ(out.bounds.size(), 40u);
  EXPECT_EQ(out.bounds.front(), 0.00001);
  EXPECT_EQ(out.bounds.back(), 100.0);
  ASSERT_EQ(out.counts.size(), 41u);
  EXPECT_EQ(out.counts[4], 2u);  // bounds[4] == 0.0006
  EXPECT_EQ(out.counts[40], 1u);
  EXPECT_EQ(out.count, 3u);
  EXPECT_DOUBLE_EQ(out.sum, 1000.0011);
}

struct Counting : CallMetricsRecorder {
  std::atomic<int> started{0}, attempts{0}, calls{0};
  std::atomic<uint64_t> sent{0};
  void OnAttemptStarted(std::string_view method, std::string_view target) override {
    if (method == "pkg.S/A" && target == "dns:///x") ++started;
  }
  void OnAttemptEnded(const CallAttemptEnd& e) override {
    ++attempts;
    sent += e.sent_compressed_message_bytes;
  }
  void OnCallEnded(const CallEnd&) override { ++calls; }
};

TEST(CallMetricsTable, ThreadsRecordAloneAndAReaderSeesTheMergedSums) {
  auto recorder = std::make_shared<Counting>();
  CallMetricsTable table(2, recorder);
  table.set_target("dns:///x");
  constexpr int kCalls = 2000;
  std::atomic<bool> done{false};
  std::thread reader([&] {  // reads while the writers write
    while (!done.load()) {
      CallMetricsSnapshot s = table.Snapshot();
      for (const auto& st : s.started) EXPECT_LE(st.attempts, 2u * kCalls);
    }
  });
  std::vector<std::thread> writers;
  for (size_t t = 0; t < 2; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        MethodRow* a = table.Method(t, "/pkg.S/A");
        table.AttemptStarted(a);
        table.AttemptEnded(a, StatusCode::OK, microseconds(500), 100, 2000);
        table.CallEnded(a, StatusCode::OK, microseconds(700));
        if (i % 4 == 0) {
          MethodRow* b = table.Method(t, "/pkg.S/B");
          table.AttemptStarted(b);
          table.AttemptEnded(b, StatusCode::UNAVAILABLE, milliseconds(3), 0, 0);
        }
      }
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  reader.join();

  CallMetricsSnapshot s = table.Snapshot();
  EXPECT_EQ(s.target, "dns:///x");
  ASSERT_EQ(s.started.size(), 2u);
  EXPECT_EQ(s.started[0].method, "pkg.S/A");  // the path without its '/'
  EXPECT_EQ(s.started[0].attempts, 2u * kCalls);
  EXPECT_EQ(s.started[1].attempts, 2u * kCalls / 4);
  const auto* ok = Find(s, "pkg.S/A", StatusCode::OK);
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->attempt_duration_seconds.count, 2u * kCalls);
  EXPECT_EQ(ok->attempt_duration_seconds.counts[4], 2u * kCalls);  // 0.0005 s
  EXPECT_EQ(ok->call_duration_seconds.counts[5], 2u * kCalls);     // 0.0007 s in (0.0006, 0.0008]
  EXPECT_NEAR(ok->attempt_sent_compressed_bytes.sum, 100.0 * 2 * kCalls, 1e-6);
  EXPECT_EQ(ok->attempt_rcvd_compressed_bytes.counts[1], 2u * kCalls);  // 2000 in (1024, 2048]
  const auto* failed = Find(s, "pkg.S/B", StatusCode::UNAVAILABLE);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->attempt_duration_seconds.count, 2u * kCalls / 4);
  EXPECT_EQ(failed->call_duration_seconds.count, 0u);  // no call ended so
  EXPECT_EQ(Find(s, "pkg.S/A", StatusCode::UNAVAILABLE), nullptr);

  EXPECT_EQ(recorder->started.load(), 2 * kCalls);
  EXPECT_EQ(recorder->attempts.load(), 2 * kCalls + 2 * kCalls / 4);
  EXPECT_EQ(recorder->calls.load(), 2 * kCalls);
  EXPECT_EQ(recorder->sent.load(), 100u * 2 * kCalls);
}

TEST(CallMetricsTable, MethodsPastTheLimitShareTheRowOther) {
  CallMetricsTable table(1, nullptr);
  for (size_t i = 0; i < CallMetricsTable::kMaxMethods + 5; ++i) {
    MethodRow* row = table.Method(0, "/gen.S/M" + std::to_string(i));
    table.AttemptStarted(row);
  }
  EXPECT_EQ(table.Method(0, "/gen.S/M0")->method(), "gen.S/M0");  // known ones keep theirs
  CallMetricsSnapshot s = table.Snapshot();
  EXPECT_EQ(s.started.size(), CallMetricsTable::kMaxMethods + 1);
  bool other = false;
  for (const auto& st : s.started) {
    if (st.method == "other") {
      other = true;
      EXPECT_EQ(st.attempts, 5u);
    }
  }
  EXPECT_TRUE(other);
}

TEST(CallMetricsTable, PrometheusTextHasA66NamesCumulativeBucketsAndEscapedLabels) {
  CallMetricsTable table(1, nullptr);
  table.set_target("unix:/tmp/a\"b");
  MethodRow* row = table.Method(0, "/pkg.S/A");
  table.AttemptStarted(row);
  table.AttemptEnded(row, StatusCode::DEADLINE_EXCEEDED, milliseconds(2), 5000, 0);
  table.CallEnded(row, StatusCode::DEADLINE_EXCEEDED, milliseconds(2));
  std::string text;
  AppendCallMetricsText(table.Snapshot(), &text);
  const std::string labels =
      "grpc_method=\"pkg.S/A\",grpc_target=\"unix:/tmp/a\\\"b\",grpc_status=\"DEADLINE_EXCEEDED\"";
  EXPECT_THAT(text, HasSubstr("# TYPE grpc_client_attempt_started_total counter\n"));
  EXPECT_THAT(text, HasSubstr("grpc_client_attempt_started_total{grpc_method=\"pkg.S/A\","
                              "grpc_target=\"unix:/tmp/a\\\"b\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE grpc_client_attempt_duration_seconds histogram\n"));
  // 0.002 s: in le="0.002" and every bucket above it, none below.
  EXPECT_THAT(text, HasSubstr("grpc_client_attempt_duration_seconds_bucket{" + labels +
                              ",le=\"0.001\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("grpc_client_attempt_duration_seconds_bucket{" + labels +
                              ",le=\"0.002\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("grpc_client_attempt_duration_seconds_bucket{" + labels +
                              ",le=\"100\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("grpc_client_attempt_duration_seconds_count{" + labels + "} 1\n"));
  EXPECT_THAT(text,
              HasSubstr("grpc_client_attempt_sent_total_compressed_message_size_bytes_bucket{" +
                        labels + ",le=\"4096\"} 0\n"));
  EXPECT_THAT(text,
              HasSubstr("grpc_client_attempt_sent_total_compressed_message_size_bytes_bucket{" +
                        labels + ",le=\"16384\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("grpc_client_attempt_sent_total_compressed_message_size_bytes_sum{" +
                              labels + "} 5000\n"));
  EXPECT_THAT(text, HasSubstr("grpc_client_call_duration_seconds_count{" + labels + "} 1\n"));
  EXPECT_THAT(text, HasSubstr("le=\"4294967296\""));  // bounds printed exactly
}

}  // namespace
}  // namespace ringrpc::channel
