// ringrpc/pool/retire.h — why a connection leaves the pool, and the pure policy that
// decides when it must.
//
// Every connection the pool destroys is counted under exactly one
// RetireReason, so closed == sum(retired[reason]) always. The policy has no
// clock and no I/O: it is handed the time and the pool's generation, so it
// is tested on its own (ringrpc/pool/retire_test.cc).
//
//   RetireReason r = CheckRetirement(meta, limits, now, generation, idle);
//   if (r != RetireReason::kNone) ...  // retire for reason r
#ifndef RINGRPC_POOL_RETIRE_H_
#define RINGRPC_POOL_RETIRE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "ringrpc/base/time.h"
#include "ringrpc/pool/config.h"

namespace ringrpc::pool {

enum class RetireReason : uint8_t {
  kNone = 0,
  kGeneration,     // made before the last invalidate()
  kMaxLifetime,    // older than its (jittered) max lifetime
  kIdleTimeout,    // idle longer than its (jittered) idle timeout
  kMaxUses,        // leased max_uses times
  kPoisoned,       // a lease holder called Poison()
  kPoolClosed,     // close() was called
  kRecycleFailed,  // the manager's Recycle said no on checkout
  kParkTimeout,    // parked in the exchange longer than max_park_time
  kDetachFailed,   // detach found an operation in flight
  kAttachFailed,   // attach on the new thread failed or was cancelled
  kShardGone,      // its thread's context ended
};
inline constexpr size_t kRetireReasonCount = 12;

std::string_view RetireReasonName(RetireReason r);

// What the pool remembers of each connection. Travels with it through the
// exchange.
struct SlotMeta {
  TimePoint created_at{};
  TimePoint last_used{};
  // created_at + jittered max_lifetime, or TimePoint::max().
  TimePoint expires_at = TimePoint::max();
  // Jittered idle timeout, or Duration::max().
  Duration idle_limit = Duration::max();
  uint64_t uses = 0;
  uint64_t generation = 0;
};

// Builds a new connection's meta: jitter shortens each time limit by a
// fraction in [0, config.lifetime_jitter) drawn from `random` (never
// lengthens it, so the connection always retires before a server-side limit
// of the same value would fire).
SlotMeta NewSlotMeta(const PoolConfig& config, TimePoint now, uint64_t generation, uint64_t random);

// Reason `meta` must retire now, or kNone. Order of precedence: generation,
// max uses, lifetime, idle (idle only when `idle` is true, i.e. no lease).
RetireReason CheckRetirement(const SlotMeta& meta, const PoolConfig& config, TimePoint now,
                             uint64_t generation, bool idle);

}  // namespace ringrpc::pool

#endif  // RINGRPC_POOL_RETIRE_H_
