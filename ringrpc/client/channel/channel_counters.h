// ringrpc/client/channel/channel_counters.h — a channel's own event counts
// (retries, hedged copies, idle entries) and their Prometheus text. The
// pools' counts are pool::PoolMetrics; per-call telemetry is
// CallMetricsTable.
//
// Threading: Count and value from any thread (relaxed atomics: each count
// is exact, counts are not read together as one snapshot).
//
//   counters.Count(ChannelCounter::kRetries);
//   counters.AppendPrometheus(&text);
#ifndef RINGRPC_CLIENT_CHANNEL_CHANNEL_COUNTERS_H_
#define RINGRPC_CLIENT_CHANNEL_CHANNEL_COUNTERS_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace ringrpc::channel {

enum class ChannelCounter : size_t {
  kTransparentRetries,  // unary calls the server never processed, sent again (A6)
  kRetries,             // retryPolicy attempts after the first
  kThrottledRetries,    // retries and hedged copies retryThrottling stopped
  kHedges,              // hedged copies after the first
  kIdleEntries,         // times grpc.client_idle_timeout_ms put the channel idle
  kCount,
};

class ChannelCounters {
 public:
  void Count(ChannelCounter c) {
    counts_[static_cast<size_t>(c)].fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t value(ChannelCounter c) const {
    return counts_[static_cast<size_t>(c)].load(std::memory_order_relaxed);
  }
  // Each counter as a Prometheus counter family (HELP, TYPE, value).
  void AppendPrometheus(std::string* out) const;

 private:
  std::array<std::atomic<uint64_t>, static_cast<size_t>(ChannelCounter::kCount)> counts_{};
};

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_CHANNEL_COUNTERS_H_
