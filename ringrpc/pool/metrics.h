// ringrpc/pool/metrics.h — the pool's counters and the snapshot users read.
//
// Each shard's counters are written only by the shard's own thread, as
// relaxed atomics with a load and a store (a plain `mov` on x86, never a
// locked read-modify-write), so any thread may read them without a lock on
// the hot path and without a data race. Pool::Metrics() sums every shard's
// counters with those of shards already gone.
//
//   PoolMetrics m = pool.Metrics();
//   assert(m.created == m.closed + m.live + m.parked + m.taken + m.cleared);
#ifndef RINGRPC_POOL_METRICS_H_
#define RINGRPC_POOL_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "ringrpc/pool/retire.h"

namespace ringrpc::pool {

// A counter with one writer (its shard's thread) and any number of readers.
class OwnedCounter {
 public:
  void Add(uint64_t n = 1) {
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  void Sub(uint64_t n = 1) {
    v_.store(v_.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
  }
  uint64_t Get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

struct PoolMetrics {
  uint64_t created = 0;                                // connects that succeeded
  uint64_t closed = 0;                                 // connections the pool destroyed
  uint64_t live = 0;                                   // connections held by shards now
  uint64_t parked = 0;                                 // connections in the exchange now (or
                                                       // popped and being attached)
  uint64_t taken = 0;                                  // handed out for good by Lease::Take()
  uint64_t cleared = 0;                                // dropped from the exchange by Clear()
  uint64_t leases = 0;                                 // leases outstanding now
  uint64_t acquires = 0;                               // leases granted
  uint64_t waits = 0;                                  // acquires that had to wait
  uint64_t timeouts = 0;                               // acquires that hit acquire_timeout
  uint64_t connect_failures = 0;                       // connects that failed
  uint64_t recycle_failures = 0;                       // recycles that said no
  uint64_t parks = 0;                                  // connections given to the exchange
  uint64_t unparked = 0;                               // connections taken from it and attached
  uint64_t poisoned = 0;                               // leases that called Poison()
  std::array<uint64_t, kRetireReasonCount> retired{};  // closed, by reason

  // created == closed + live + parked + taken + cleared, where `created`
  // includes connections attached from the exchange only once: a connection
  // moved between threads is counted created where it was dialled.
  bool Conserved() const { return created == closed + live + parked + taken + cleared; }
  uint64_t retired_total() const {
    uint64_t n = 0;
    for (uint64_t r : retired) n += r;
    return n;
  }
  std::string ToString() const;
  // Adds `o` field by field (metrics of several pools, or of pools gone).
  PoolMetrics& operator+=(const PoolMetrics& o);
};

// One shard's counters (see OwnedCounter for the threading rule).
struct ShardCounters {
  // attaching: popped from the exchange, attach in progress; reported as
  // parked until attached, so conservation holds across the await.
  OwnedCounter created, closed, live, attaching, taken, leases, acquires, waits, timeouts,
      connect_failures, recycle_failures, parks, unparked, poisoned;
  std::array<OwnedCounter, kRetireReasonCount> retired;

  void Retire(RetireReason r) {
    closed.Add();
    retired[static_cast<size_t>(r)].Add();
  }
  // Adds this shard's values into `m` (not `parked` or `cleared`, which the
  // exchange and the pool keep).
  void AddTo(PoolMetrics& m) const;
};

}  // namespace ringrpc::pool

#endif  // RINGRPC_POOL_METRICS_H_
