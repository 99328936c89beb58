// ringrpc/pool/internal/shard_reaping.h — a Shard's retirement and reaping: closing a shard, the
// reaper's tick (expiry, refill to min_idle).
//
// Part of ringrpc/pool/internal/shard.h (the class, its state and invariants),
// which includes this file at its end; include shard.h, not this.
#ifndef RINGRPC_POOL_INTERNAL_SHARD_REAPING_H_
#define RINGRPC_POOL_INTERNAL_SHARD_REAPING_H_

#include "ringrpc/pool/internal/shard.h"

namespace ringrpc::pool::internal {

template <typename M>
void Shard<M>::OnClose() {
  AssertOwner();
  std::vector<SlotT*> all;
  for (auto& s : slots_) all.push_back(s.get());
  for (SlotT* s : all) Retire(s, RetireReason::kPoolClosed);
  while (!waiters_.empty()) Wake(waiters_.front(), nullptr);
  SweepSoon();
}

template <typename M>
void Shard<M>::ReapExpired() {
  std::vector<SlotT*> all;
  for (auto& s : slots_) all.push_back(s.get());
  for (SlotT* s : all) {
    if (s->retired != RetireReason::kNone) continue;
    if (RetireReason r = Check(s, s->leases == 0); r != RetireReason::kNone) {
      Retire(s, r);
    }
  }
  ParkIdle();
}

template <typename M>
auto Shard<M>::Reap() -> Task<void> {
  for (;;) {
    co_await SleepFor(*runtime(), config_.reap_interval);
    if (closed()) {
      OnClose();
      co_return;
    }
    ReapExpired();
    // Refill to min_idle, never while a waiter is parked: a returning
    // connection serves it sooner than a fresh dial.
    while (!closed() && waiters_.empty() && idle_ < config_.min_idle && CanDial()) {
      Reservation reservation(this);
      uint64_t generation = Generation();
      absl::StatusOr<Connection> c = co_await manager_->Connect();
      if (!c.ok()) {
        Note(PoolEventKind::kConnectFailed);
        last_connect_error_ = c.status();
        break;
      }
      last_connect_error_ = absl::OkStatus();
      SlotT* s = AddSlot(std::move(*c), NewMeta(generation));
      Note(PoolEventKind::kConnect);
      reservation.Disarm();
      MakeAvailable(s);
      ServeWaiters(s);
    }
  }
}

}  // namespace ringrpc::pool::internal

#endif  // RINGRPC_POOL_INTERNAL_SHARD_REAPING_H_
