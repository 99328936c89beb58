// ringrpc/pool/internal/shard_waiters.h — a Shard's the waiters: a suspended acquire in a FIFO
// list, woken with a lease handed over or to look again.
//
// Part of ringrpc/pool/internal/shard.h (the class, its state and invariants),
// which includes this file at its end; include shard.h, not this.
#ifndef RINGRPC_POOL_INTERNAL_SHARD_WAITERS_H_
#define RINGRPC_POOL_INTERNAL_SHARD_WAITERS_H_

#include "ringrpc/pool/internal/shard.h"

namespace ringrpc::pool::internal {

template <typename M>
class Shard<M>::WaitForSlot {
 public:
  explicit WaitForSlot(Shard* shard) { w_.shard = shard; }
  WaitForSlot(const WaitForSlot&) = delete;
  WaitForSlot& operator=(const WaitForSlot&) = delete;
  ~WaitForSlot() {
    Shard* s = w_.shard;
    // Woken but destroyed before it ran: what it was woken for goes on.
    const bool woken = w_.wake_timer != 0;
    if (woken) s->runtime()->CancelTimer(w_.wake_timer);
    if (w_.linked) s->Unlink(&w_);
    if (w_.granted != nullptr) {  // cancelled after the handoff
      --s->granted_;
      s->UndoLease(w_.granted);
    } else if (woken) {
      // Woken to dial (a dial slot or budget came free, which wakes only
      // the oldest waiter): the next waiter is woken in its place, or it
      // would wait for the next free slot, which may never come.
      s->OnBudgetFreed();
    }
  }
  bool await_ready() noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    w_.handle = h;
    w_.shard->Link(&w_);
  }
  SlotT* await_resume() noexcept {
    if (w_.granted != nullptr) --w_.shard->granted_;
    return std::exchange(w_.granted, nullptr);
  }

 private:
  Waiter w_;
};

template <typename M>
void Shard<M>::Link(Waiter* w) {
  w->prev = waiters_.tail;
  w->next = nullptr;
  if (waiters_.tail)
    waiters_.tail->next = w;
  else
    waiters_.head = w;
  waiters_.tail = w;
  w->linked = true;
  ++waiter_count_;
}

template <typename M>
void Shard<M>::Unlink(Waiter* w) {
  if (w->prev)
    w->prev->next = w->next;
  else
    waiters_.head = w->next;
  if (w->next)
    w->next->prev = w->prev;
  else
    waiters_.tail = w->prev;
  w->prev = w->next = nullptr;
  w->linked = false;
  --waiter_count_;
}

template <typename M>
void Shard<M>::Wake(Waiter* w, SlotT* granted) {
  Unlink(w);
  w->granted = granted;
  if (granted != nullptr) ++granted_;
  w->wake_timer = runtime()->ScheduleTimer(runtime()->Now(), w);
}

template <typename M>
void Shard<M>::ServeWaiters(SlotT* s) {
  while (!waiters_.empty() && Leasable(s)) {
    MakeLease(s);
    Wake(waiters_.front(), s);
  }
}

template <typename M>
void Shard<M>::OnBudgetFreed() {
  if (dying_ || waiters_.empty()) return;
  if (closed()) {
    while (!waiters_.empty()) Wake(waiters_.front(), nullptr);
  } else if (CanDial()) {
    Wake(waiters_.front(), nullptr);
  }
}

}  // namespace ringrpc::pool::internal

#endif  // RINGRPC_POOL_INTERNAL_SHARD_WAITERS_H_
