// ringrpc/pool/observer.h — lifecycle events of a pool's connections, for a
// listener and for metrics beyond the counters: a connection made, a dial
// failed, a connection retired (with its reason), parked, unparked.
//
// Threading: OnPoolEvent runs on the thread whose shard saw the event (any
// thread using the pool), so an observer must be thread-safe. It is called
// off the checkout/return warm path only (dials, retirements, parking).
#ifndef RINGRPC_POOL_OBSERVER_H_
#define RINGRPC_POOL_OBSERVER_H_

#include <cstdint>

#include "ringrpc/pool/retire.h"

namespace ringrpc::pool {

enum class PoolEventKind : uint8_t { kConnect, kConnectFailed, kRetire, kPark, kUnpark };

struct PoolEvent {
  PoolEventKind kind;
  RetireReason reason = RetireReason::kNone;  // kRetire only
  uint64_t pool_id = 0;
};

class PoolObserver {
 public:
  virtual ~PoolObserver() = default;
  virtual void OnPoolEvent(const PoolEvent& event) = 0;
};

}  // namespace ringrpc::pool

#endif  // RINGRPC_POOL_OBSERVER_H_
