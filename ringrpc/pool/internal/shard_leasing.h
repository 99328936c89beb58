// ringrpc/pool/internal/shard_leasing.h — a Shard's leasing: the fast and the slow acquire, return
// and take, the guards that keep an acquire cancellation-safe, and the bookkeeping of slots.
//
// Part of ringrpc/pool/internal/shard.h (the class, its state and invariants),
// which includes this file at its end; include shard.h, not this.
#ifndef RINGRPC_POOL_INTERNAL_SHARD_LEASING_H_
#define RINGRPC_POOL_INTERNAL_SHARD_LEASING_H_

#include "ringrpc/pool/internal/shard.h"

namespace ringrpc::pool::internal {

template <typename M>
auto Shard<M>::TryLeaseFast() -> SlotT* {
  AssertOwner();
  while (!available_.empty()) {
    SlotT* s = available_.back();
    if constexpr (HasAsyncRecycle<M>) {
      if (s->leases == 0) return nullptr;
    }
    if (RetireReason r = Check(s, s->leases == 0); r != RetireReason::kNone) {
      Retire(s, r);
      continue;
    }
    if constexpr (HasSyncRecycle<M>) {
      if (s->leases == 0 && !manager_->Recycle(s->conn).ok()) {
        counters_.recycle_failures.Add();
        Retire(s, RetireReason::kRecycleFailed);
        continue;
      }
    }
    MakeLease(s);
    return s;
  }
  return nullptr;
}

template <typename M>
auto Shard<M>::AcquireSlow() -> Task<absl::StatusOr<SlotT*>> {
  bool counted_wait = false;
  for (;;) {
    if (closed()) {
      OnClose();
      co_return ClosedError();
    }
    // 1. A connection with a free lease.
    if (SlotT* s = TryLeaseFast()) co_return s;
    if constexpr (HasAsyncRecycle<M>) {
      if (!available_.empty()) {  // TryLeaseFast stopped at an idle one
        SlotT* s = available_.back();
        RecycleGuard guard(this, s);
        absl::Status st = co_await manager_->Recycle(s->conn);
        if (guard.Finish(st)) co_return s;
        continue;
      }
    }
    // 2. Budget: reserve it first, so one reservation covers the exchange
    //    and the dial, and a cancelled await refunds it.
    if (CanDial()) {
      Reservation reservation(this);
      if constexpr (CanDetach<M>) {
        if (inner_->exchange) {
          std::optional<Parked<Detached>> parked = PopUsableParked();
          if (parked) {
            AttachGuard attach_guard(this);
            absl::StatusOr<Connection> c = co_await manager_->Attach(std::move(parked->detached));
            attach_guard.armed = false;
            if (c.ok()) {
              parked->meta.last_used = Now();
              SlotT* s = AddSlot(std::move(*c), parked->meta);
              Note(PoolEventKind::kUnpark);
              co_return Commit(reservation, s);
            }
            NoteRetire(RetireReason::kAttachFailed);
            last_connect_error_ = c.status();
          }
        }
      }
      uint64_t generation = Generation();
      absl::StatusOr<Connection> c = co_await manager_->Connect();
      if (!c.ok()) {
        Note(PoolEventKind::kConnectFailed);
        last_connect_error_ = c.status();
        co_return c.status();  // ~Reservation refunds the budget
      }
      last_connect_error_ = absl::OkStatus();
      SlotT* s = AddSlot(std::move(*c), NewMeta(generation));
      Note(PoolEventKind::kConnect);
      co_return Commit(reservation, s);
    }
    // 3. At max_size (or max dials in flight): wait for a local return.
    if (runtime() == nullptr) {
      co_return absl::ResourceExhaustedError(
          absl::StrCat("pool: all ", size_,
                       " connections of this thread are busy "
                       "(max_size ",
                       config_.max_size, ") and the thread has no runtime to wait on"));
    }
    if (!counted_wait) {
      counters_.waits.Add();
      counted_wait = true;
    }
    SlotT* granted = co_await WaitForSlot(this);
    if (granted != nullptr) co_return granted;
  }
}

template <typename M>
auto Shard<M>::TimeoutError(Duration timeout) -> absl::Status {
  counters_.timeouts.Add();
  std::string msg = absl::StrCat(
      "pool acquire timed out after ",
      std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count(), "ms: ", slots_.size(),
      " connections busy, ", reserved_, " dialling (max_size ", config_.max_size, ")");
  if (!last_connect_error_.ok()) {
    absl::StrAppend(&msg, "; last connect error: ", last_connect_error_.ToString());
    return absl::UnavailableError(msg);
  }
  return absl::DeadlineExceededError(msg);
}

template <typename M>
void Shard<M>::Return(SlotT* s, bool poisoned) {
  AssertOwner();
  RINGRPC_DCHECK(s->leases > 0);
  --s->leases;
  counters_.leases.Sub();
  if (s->leases == 0) ++idle_;
  // One clock read serves both the idle stamp and the expiry check.
  TimePoint now{};
  if (config_.NeedsClock()) s->meta.last_used = now = Now();
  if (poisoned) {
    counters_.poisoned.Add();
    Retire(s, RetireReason::kPoisoned);
    return;
  }
  if (closed()) {
    Retire(s, RetireReason::kPoolClosed);
    return;
  }
  if (s->retired != RetireReason::kNone) {
    if (s->leases == 0) Destroy(s);
    return;
  }
  if (RetireReason r = CheckRetirement(s->meta, config_, now, Generation(), false);
      r != RetireReason::kNone) {
    Retire(s, r);
    return;
  }
  // The manager's capacity may have changed since the connection came
  // (an HTTP/2 peer lowers or raises MAX_CONCURRENT_STREAMS at any time).
  if constexpr (HasCapacity<M>) {
    s->capacity = std::max<uint32_t>(
        1, std::min<uint32_t>(config_.max_leases_per_connection, manager_->Capacity(s->conn)));
  }
  ServeWaiters(s);
  if (s->leases == 0 && waiters_.empty() && TryPark(s)) return;
  if (s->leases < s->capacity) {
    MakeAvailable(s);
  } else {
    RemoveAvailable(s);
  }
}

template <typename M>
auto Shard<M>::Take(SlotT* s) -> absl::StatusOr<Connection> {
  AssertOwner();
  if (s->leases != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("Lease::Take: the connection has ", s->leases - 1,
                     " other active leases; only the sole lease holder may take it"));
  }
  std::unique_ptr<SlotT> owned = RemoveSlot(s);
  counters_.leases.Sub();
  counters_.live.Sub();
  counters_.taken.Add();
  OnBudgetFreed();
  if (closed()) SweepSoon();
  return std::move(owned->conn);
}

template <typename M>
class Shard<M>::Reservation {
 public:
  explicit Reservation(Shard* s) : s_(s) {
    ++s_->size_;
    ++s_->reserved_;
    ++s_->connecting_;
  }
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  ~Reservation() {
    if (!armed_) return;
    --s_->reserved_;
    --s_->connecting_;
    --s_->size_;
    s_->OnBudgetFreed();
  }
  // The budget is now backed by a connection.
  void Disarm() {
    armed_ = false;
    --s_->reserved_;
    --s_->connecting_;
  }

 private:
  Shard* s_;
  bool armed_ = true;
};

template <typename M>
struct Shard<M>::AttachGuard {
  explicit AttachGuard(Shard* s) : s(s) { s->counters_.attaching.Add(); }
  ~AttachGuard() {
    s->counters_.attaching.Sub();
    if (armed) s->NoteRetire(RetireReason::kAttachFailed);
  }
  Shard* s;
  bool armed = true;
};

template <typename M>
class Shard<M>::RecycleGuard {
 public:
  RecycleGuard(Shard* s, SlotT* slot) : s_(s), slot_(slot) {
    s_->RemoveAvailable(slot_);
    slot_->leases = 1;
    --s_->idle_;
    ++s_->recycling_;
  }
  RecycleGuard(const RecycleGuard&) = delete;
  RecycleGuard& operator=(const RecycleGuard&) = delete;
  ~RecycleGuard() {
    if (!armed_) return;
    Restore();
    // Retired while out (close, reaper): it goes now that it is idle.
    if (slot_->retired != RetireReason::kNone) {
      s_->Destroy(slot_);
      return;
    }
    s_->ServeWaiters(slot_);
    if (slot_->leases < slot_->capacity) s_->MakeAvailable(slot_);
  }
  // True: `slot` is leased to the caller. False: it was retired.
  bool Finish(const absl::Status& st) {
    armed_ = false;
    Restore();
    if (slot_->retired != RetireReason::kNone) {
      s_->Destroy(slot_);
      return false;
    }
    if (!st.ok()) {
      s_->counters_.recycle_failures.Add();
      s_->Retire(slot_, RetireReason::kRecycleFailed);
      return false;
    }
    if (s_->closed()) {
      s_->Retire(slot_, RetireReason::kPoolClosed);
      return false;
    }
    if (RetireReason r = s_->Check(slot_, true); r != RetireReason::kNone) {
      s_->Retire(slot_, r);
      return false;
    }
    s_->MakeLease(slot_);
    return true;
  }

 private:
  void Restore() {
    slot_->leases = 0;
    ++s_->idle_;
    --s_->recycling_;
  }
  Shard* s_;
  SlotT* slot_;
  bool armed_ = true;
};

template <typename M>
auto Shard<M>::Commit(Reservation& reservation, SlotT* s) -> SlotT* {
  reservation.Disarm();
  MakeLease(s);
  ServeWaiters(s);
  if (s->leases < s->capacity) MakeAvailable(s);
  OnBudgetFreed();  // a dial slot came free
  return s;
}

template <typename M>
auto Shard<M>::AddSlot(Connection&& conn, const SlotMeta& meta) -> SlotT* {
  auto slot = std::make_unique<SlotT>(SlotT{std::move(conn), meta});
  uint32_t capacity = config_.max_leases_per_connection;
  if constexpr (HasCapacity<M>) {
    capacity = std::min<uint32_t>(capacity, manager_->Capacity(slot->conn));
    capacity = std::max<uint32_t>(capacity, 1);
  }
  slot->capacity = capacity;
  slot->index = slots_.size();
  slot->id = ++next_slot_id_;
  ++idle_;
  counters_.live.Add();
  slots_.push_back(std::move(slot));
  return slots_.back().get();
}

template <typename M>
auto Shard<M>::RemoveSlot(SlotT* s) -> std::unique_ptr<SlotT> {
  RemoveAvailable(s);
  if (s->leases == 0) --idle_;
  --size_;
  size_t i = s->index;
  std::unique_ptr<SlotT> owned = std::move(slots_[i]);
  if (i + 1 != slots_.size()) {
    slots_[i] = std::move(slots_.back());
    slots_[i]->index = i;
  }
  slots_.pop_back();
  return owned;
}

template <typename M>
void Shard<M>::Destroy(SlotT* s) {
  RINGRPC_DCHECK(s->leases == 0);
  RINGRPC_DCHECK(s->retired != RetireReason::kNone);
  std::unique_ptr<SlotT> owned = RemoveSlot(s);
  NoteRetire(owned->retired);
  counters_.live.Sub();
  manager_->Disconnect(std::move(owned->conn));
  OnBudgetFreed();
  if (closed()) SweepSoon();
}

template <typename M>
void Shard<M>::Retire(SlotT* s, RetireReason r) {
  if (s->retired == RetireReason::kNone) s->retired = r;
  RemoveAvailable(s);
  if (s->leases == 0) Destroy(s);
}

template <typename M>
void Shard<M>::MakeLease(SlotT* s) {
  RINGRPC_DCHECK(s->retired == RetireReason::kNone);
  if (s->leases == 0) --idle_;
  ++s->leases;
  ++s->meta.uses;
  counters_.leases.Add();
  counters_.acquires.Add();
  if (s->leases >= s->capacity) RemoveAvailable(s);
}

template <typename M>
void Shard<M>::UndoLease(SlotT* s) {
  --s->meta.uses;
  counters_.acquires.Sub();
  Return(s, false);
}

template <typename M>
bool Shard<M>::Leasable(SlotT* s) {
  return s->retired == RetireReason::kNone && s->leases < s->capacity &&
         Check(s, false) == RetireReason::kNone;
}

template <typename M>
void Shard<M>::MakeAvailable(SlotT* s) {
  if (s->in_available) return;
  s->in_available = true;
  available_.push_back(s);
}

template <typename M>
void Shard<M>::RemoveAvailable(SlotT* s) {
  if (!s->in_available) return;
  s->in_available = false;
  if (available_.back() == s) {
    available_.pop_back();
  } else {
    available_.erase(std::find(available_.begin(), available_.end(), s));
  }
}

}  // namespace ringrpc::pool::internal

#endif  // RINGRPC_POOL_INTERNAL_SHARD_LEASING_H_
