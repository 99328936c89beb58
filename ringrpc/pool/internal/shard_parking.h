// ringrpc/pool/internal/shard_parking.h — a Shard's parking: idle connections lent to the exchange
// and taken back.
//
// Part of ringrpc/pool/internal/shard.h (the class, its state and invariants),
// which includes this file at its end; include shard.h, not this.
#ifndef RINGRPC_POOL_INTERNAL_SHARD_PARKING_H_
#define RINGRPC_POOL_INTERNAL_SHARD_PARKING_H_

#include "ringrpc/pool/internal/shard.h"

namespace ringrpc::pool::internal {

template <typename M>
void Shard<M>::ParkIdle() {
  if (!inner_->exchange || !waiters_.empty()) return;
  std::vector<SlotT*> idle;
  for (auto& s : slots_) {
    if (s->leases == 0 && s->retired == RetireReason::kNone) idle.push_back(s.get());
  }
  for (SlotT* s : idle) {
    if (idle_ <= config_.min_idle) break;
    if (TryPark(s)) continue;
    if constexpr (HasQuiesce<M>) manager_->Quiesce(s->conn);
  }
}

template <typename M>
bool Shard<M>::TryPark(SlotT* s) {
  if constexpr (CanDetach<M>) {
    if (!inner_->exchange || idle_ <= config_.min_idle) return false;
    if constexpr (HasParkable<M>) {
      if (!manager_->Parkable(s->conn)) return false;  // not yet
    }
    if (!inner_->exchange->TryAdmit()) return false;  // full: refused
    std::unique_ptr<SlotT> owned = RemoveSlot(s);
    counters_.live.Sub();
    absl::StatusOr<Detached> d = manager_->Detach(std::move(owned->conn));
    if (d.ok()) {
      inner_->exchange->Push(Parked<Detached>{std::move(*d), owned->meta, Now()});
      Note(PoolEventKind::kPark);
    } else {
      inner_->exchange->CancelAdmit();
      NoteRetire(RetireReason::kDetachFailed);
    }
    OnBudgetFreed();
    return true;
  } else {
    (void)s;
    return false;
  }
}

template <typename M>
auto Shard<M>::PopUsableParked() -> std::optional<Parked<Detached>> {
  while (std::optional<Parked<Detached>> p = inner_->exchange->Pop()) {
    TimePoint now = Now();
    RetireReason r = CheckRetirement(p->meta, config_, now, Generation(),
                                     /*idle=*/true);
    if (r == RetireReason::kNone && now - p->parked_at >= config_.max_park_time) {
      r = RetireReason::kParkTimeout;
    }
    if (r == RetireReason::kNone) return p;
    NoteRetire(r);
  }
  return std::nullopt;
}

}  // namespace ringrpc::pool::internal

#endif  // RINGRPC_POOL_INTERNAL_SHARD_PARKING_H_
