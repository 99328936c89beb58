#include "ringrpc/client/channel/call_metrics_table.h"

#include <algorithm>
#include <map>
#include <utility>

namespace ringrpc::channel {
namespace {

// One writer: a load and a store, no locked read-modify-write.
void Bump(std::atomic<uint64_t>& a, uint64_t by = 1) {
  a.store(a.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

OwnedHistogram::OwnedHistogram(std::span<const double> bounds)
    : bounds_(bounds), counts_(new std::atomic<uint64_t>[bounds.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void OwnedHistogram::Record(double v) {
  // Bucket i holds (bounds[i-1], bounds[i]]; the last, what is above all.
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  Bump(counts_[i]);
  Bump(count_);
  sum_.store(sum_.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
}

void OwnedHistogram::AddTo(CallMetricsSnapshot::Histogram* out) const {
  out->bounds = bounds_;
  out->counts.resize(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    out->counts[i] += counts_[i].load(std::memory_order_relaxed);
  }
  out->count += count_.load(std::memory_order_relaxed);
  out->sum += sum_.load(std::memory_order_relaxed);
}

StatusRow::StatusRow()
    : attempt_duration(CallLatencyBucketsSeconds()),
      sent_bytes(CallSizeBucketsBytes()),
      rcvd_bytes(CallSizeBucketsBytes()),
      call_duration(CallLatencyBucketsSeconds()) {}

MethodRow::~MethodRow() {
  for (auto& r : rows_) delete r.load(std::memory_order_relaxed);
}

void MethodRow::AttemptStarted() { Bump(attempts_); }

StatusRow& MethodRow::For(StatusCode status) {
  size_t i = static_cast<size_t>(status);
  if (i >= rows_.size()) i = static_cast<size_t>(StatusCode::UNKNOWN);
  StatusRow* row = rows_[i].load(std::memory_order_relaxed);
  if (row == nullptr) {
    row = new StatusRow();
    rows_[i].store(row, std::memory_order_release);  // readers see it whole
  }
  return *row;
}

CallMetricsTable::CallMetricsTable(size_t threads, std::shared_ptr<CallMetricsRecorder> recorder,
                                   bool keep)
    : recorder_(std::move(recorder)), keep_(keep), threads_(threads), shards_(new Shard[threads]) {}

MethodRow* CallMetricsTable::Publish(Shard& shard, std::string method) {
  auto row = std::make_unique<MethodRow>(std::move(method));
  MethodRow* raw = row.get();
  MutexLock lock(&shard.mu);
  shard.rows.push_back(std::move(row));
  return raw;
}

MethodRow* CallMetricsTable::Method(size_t thread, std::string_view path) {
  Shard& shard = shards_[thread];
  if (auto it = shard.by_path.find(absl::string_view(path.data(), path.size()));
      it != shard.by_path.end()) {
    return it->second;
  }
  if (shard.by_path.size() >= kMaxMethods) {
    // Past the limit every new method shares one row.
    if (shard.other == nullptr) shard.other = Publish(shard, "other");
    return shard.other;
  }
  MethodRow* row = Publish(shard, std::string(path.starts_with('/') ? path.substr(1) : path));
  shard.by_path.emplace(std::string(path), row);
  return row;
}

void CallMetricsTable::AttemptStarted(MethodRow* row) {
  if (keep_) row->AttemptStarted();
  if (recorder_) recorder_->OnAttemptStarted(row->method(), target_);
}

void CallMetricsTable::AttemptEnded(MethodRow* row, StatusCode status, Duration elapsed,
                                    uint64_t sent_bytes, uint64_t rcvd_bytes) {
  const double s = Seconds(elapsed);
  if (keep_) {
    StatusRow& r = row->For(status);
    r.attempt_duration.Record(s);
    r.sent_bytes.Record(static_cast<double>(sent_bytes));
    r.rcvd_bytes.Record(static_cast<double>(rcvd_bytes));
  }
  if (recorder_) {
    recorder_->OnAttemptEnded({.method = row->method(),
                               .target = target_,
                               .status = status,
                               .duration_seconds = s,
                               .sent_compressed_message_bytes = sent_bytes,
                               .rcvd_compressed_message_bytes = rcvd_bytes});
  }
}

void CallMetricsTable::CallEnded(MethodRow* row, StatusCode status, Duration elapsed) {
  const double s = Seconds(elapsed);
  if (keep_) row->For(status).call_duration.Record(s);
  if (recorder_) {
    recorder_->OnCallEnded(
        {.method = row->method(), .target = target_, .status = status, .duration_seconds = s});
  }
}

CallMetricsSnapshot CallMetricsTable::Snapshot() const {
  // Merged by method (and status), in name order.
  std::map<std::string, uint64_t> started;
  std::map<std::pair<std::string, int>, CallMetricsSnapshot::Ended> ended;
  for (size_t t = 0; keep_ && t < threads_; ++t) {
    const Shard& shard = shards_[t];
    MutexLock lock(&shard.mu);
    for (const auto& row : shard.rows) {
      started[row->method()] += row->attempts_started();
      for (int code = 0; code < 17; ++code) {
        const StatusRow* r = row->Find(static_cast<StatusCode>(code));
        if (r == nullptr) continue;
        CallMetricsSnapshot::Ended& e = ended[{row->method(), code}];
        e.method = row->method();
        e.status = static_cast<StatusCode>(code);
        r->attempt_duration.AddTo(&e.attempt_duration_seconds);
        r->sent_bytes.AddTo(&e.attempt_sent_compressed_bytes);
        r->rcvd_bytes.AddTo(&e.attempt_rcvd_compressed_bytes);
        r->call_duration.AddTo(&e.call_duration_seconds);
      }
    }
  }
  CallMetricsSnapshot out;
  out.target = target_;
  if (!keep_) return out;
  for (auto& [method, n] : started) out.started.push_back({method, n});
  for (auto& [key, e] : ended) out.ended.push_back(std::move(e));
  return out;
}

}  // namespace ringrpc::channel
