// ringrpc/client/channel/call_metrics_table.h — a channel's per-call telemetry
// (ringrpc/client/call_metrics.h says what is counted), one shard per CQ thread.
//
// Threading: a shard is written only by its CQ thread, with single-writer
// counters (a relaxed load and a relaxed store: no read-modify-write, no
// line another thread writes), so the call path never waits or bounces a
// cache line. Snapshot() reads every shard from any thread (relaxed loads;
// a method's row is published under the shard's mutex, taken only when a
// thread sees a method for the first time and by readers).
#ifndef RINGRPC_CLIENT_CHANNEL_CALL_METRICS_TABLE_H_
#define RINGRPC_CLIENT_CHANNEL_CALL_METRICS_TABLE_H_

#include <array>
#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "ringrpc/base/mutex.h"
#include "ringrpc/base/time.h"
#include "ringrpc/client/call_metrics.h"

namespace ringrpc::channel {

// One histogram: one writer thread, any reader.
class OwnedHistogram {
 public:
  explicit OwnedHistogram(std::span<const double> bounds);
  void Record(double v);                                  // the owner thread
  void AddTo(CallMetricsSnapshot::Histogram* out) const;  // any thread

 private:
  std::span<const double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // bounds_.size() + 1
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

// What one method's calls that ended with one status add up to.
struct StatusRow {
  StatusRow();
  OwnedHistogram attempt_duration;
  OwnedHistogram sent_bytes;
  OwnedHistogram rcvd_bytes;
  OwnedHistogram call_duration;
};

// One method on one CQ thread.
class MethodRow {
 public:
  explicit MethodRow(std::string method) : method_(std::move(method)) {}
  ~MethodRow();
  const std::string& method() const { return method_; }
  // The owner thread.
  void AttemptStarted();
  StatusRow& For(StatusCode status);
  // Any thread.
  uint64_t attempts_started() const { return attempts_.load(std::memory_order_relaxed); }
  const StatusRow* Find(StatusCode status) const {
    return rows_[static_cast<size_t>(status)].load(std::memory_order_acquire);
  }

 private:
  const std::string method_;
  std::atomic<uint64_t> attempts_{0};
  // Made by the owner the first time a status is seen; freed with the row.
  std::array<std::atomic<StatusRow*>, 17> rows_{};
};

class CallMetricsTable {
 public:
  // A shard per CQ thread; `recorder` (may be null) hears every event too;
  // with `keep` false only the recorder does (Snapshot() is empty).
  CallMetricsTable(size_t threads, std::shared_ptr<CallMetricsRecorder> recorder, bool keep = true);

  // Set before the first call (the channel's target, A66's grpc.target).
  void set_target(std::string target) { target_ = std::move(target); }
  const std::string& target() const { return target_; }

  // CQ thread `thread` only. The method's row on that thread (`path` is
  // "/package.Service/Method"); past kMaxMethods distinct methods on a
  // thread, the row "other" (A66's rule for methods it cannot bound).
  MethodRow* Method(size_t thread, std::string_view path);
  void AttemptStarted(MethodRow* row);
  void AttemptEnded(MethodRow* row, StatusCode status, Duration elapsed, uint64_t sent_bytes,
                    uint64_t rcvd_bytes);
  void CallEnded(MethodRow* row, StatusCode status, Duration elapsed);

  // Any thread.
  CallMetricsSnapshot Snapshot() const;

  static constexpr size_t kMaxMethods = 1000;

 private:
  struct alignas(64) Shard {
    // The owner's index (the owner alone reads and writes it).
    absl::flat_hash_map<std::string, MethodRow*> by_path;
    MethodRow* other = nullptr;
    mutable Mutex mu;
    std::vector<std::unique_ptr<MethodRow>> rows ABSL_GUARDED_BY(mu);
  };

  static MethodRow* Publish(Shard& shard, std::string method);

  std::string target_;
  std::shared_ptr<CallMetricsRecorder> recorder_;
  const bool keep_;
  size_t threads_;
  std::unique_ptr<Shard[]> shards_;
};

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_CALL_METRICS_TABLE_H_
