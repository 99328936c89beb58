// ringrpc/pool/internal/shard.h — one thread's share of a pool: its connections, its
// free list, its budget and its waiters. Internal: users see Pool and Lease.
//
// This file holds the class, its state and its invariants; the member
// functions live by concern in shard_leasing.h (acquire, return, take,
// guards, slot bookkeeping), shard_waiters.h, shard_reaping.h (close,
// expiry, the reaper) and shard_parking.h (the exchange), included at the
// end.
//
// Threading: a Shard is created, used and destroyed on one thread (its
// ThreadContext) and is never shared. Its state is plain fields; the only
// atomics it touches are the pool's `closed` flag and generation (relaxed
// loads) and its own single-writer counters (see metrics.h).
//
// State and invariants (checked by CheckInvariants(), after every step of the
// property test and the fuzzer):
//   size_ == slots_.size() + reserved_      budget = connections + dials
//   size_ <= config.max_size                capacity
//   connecting_ == reserved_                every reservation is one dial
//   idle_ == #slots with leases == 0
//   each slot: leases <= capacity
//   available_ holds exactly the slots with in_available set, none retired,
//   each with leases < capacity
//   a slot whose `retired` is set never gains a lease (retirement is final)
#ifndef RINGRPC_POOL_INTERNAL_SHARD_H_
#define RINGRPC_POOL_INTERNAL_SHARD_H_

#include <algorithm>
#include <atomic>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ringrpc/base/check.h"
#include "ringrpc/base/mutex.h"
#include "ringrpc/base/random.h"
#include "ringrpc/base/task.h"
#include "ringrpc/base/time.h"
#include "ringrpc/pool/config.h"
#include "ringrpc/pool/exchange.h"
#include "ringrpc/pool/manager.h"
#include "ringrpc/pool/metrics.h"
#include "ringrpc/pool/observer.h"
#include "ringrpc/pool/retire.h"
#include "ringrpc/pool/thread_context.h"

namespace ringrpc::pool {

// A shard's state in numbers, for tests: compared whole.
struct ShardState {
  size_t size = 0;      // budget in use (connections + dials)
  size_t reserved = 0;  // budget held by dials in flight
  size_t connections = 0;
  size_t idle = 0;       // connections with no lease
  size_t available = 0;  // connections with a free lease
  size_t leases = 0;     // leases outstanding on this shard
  size_t waiters = 0;
  size_t granted = 0;  // leases handed to waiters that have not resumed
  bool operator==(const ShardState&) const = default;
  std::string ToString() const {
    return absl::StrCat("{size=", size, " reserved=", reserved, " connections=", connections,
                        " idle=", idle, " available=", available, " leases=", leases,
                        " waiters=", waiters, " granted=", granted, "}");
  }
};

namespace internal {

inline std::atomic<uint64_t> next_pool_id{1};

template <typename M>
class Shard;

// State every thread of a pool shares. Holds no connection.
template <typename M>
struct Inner {
  using Detached = typename DetachedOf<M>::type;

  uint64_t id = next_pool_id.fetch_add(1, std::memory_order_relaxed);
  PoolConfig config;
  std::shared_ptr<M> manager;
  std::shared_ptr<Exchange<Detached>> exchange;  // null: none
  std::atomic<uint64_t> generation{0};
  std::atomic<bool> closed{false};
  std::atomic<uint64_t> cleared{0};
  std::atomic<uint64_t> next_shard_index{0};

  Mutex shards_mu;
  std::vector<const ShardCounters*> shard_counters ABSL_GUARDED_BY(shards_mu);
  PoolMetrics gone ABSL_GUARDED_BY(shards_mu);  // shards already destroyed

  PoolMetrics Metrics() {
    PoolMetrics m;
    {
      MutexLock lock(&shards_mu);
      m = gone;
      for (const ShardCounters* c : shard_counters) c->AddTo(m);
    }
    m.cleared = cleared.load(std::memory_order_relaxed);
    if (exchange) m.parked += exchange->parked();
    return m;
  }

  void ClearExchange() {
    if (exchange) {
      cleared.fetch_add(exchange->Clear(), std::memory_order_relaxed);
    }
  }
};

template <typename M>
struct Slot {
  typename M::Connection conn;
  SlotMeta meta;
  uint32_t capacity = 1;
  uint32_t leases = 0;
  RetireReason retired = RetireReason::kNone;  // set once, never cleared
  bool in_available = false;
  size_t index = 0;  // position in Shard::slots_
  uint64_t id = 0;   // unique within the shard; for tests and logs
};

// Cache-line aligned (and so padded) so two threads' shards never share a
// line.
template <typename M>
class alignas(64) Shard final : public ShardBase {
 public:
  using Connection = typename M::Connection;
  using Detached = typename DetachedOf<M>::type;
  using SlotT = Slot<M>;

  Shard(std::shared_ptr<Inner<M>> inner, ThreadContext* owner)
      : keep_(std::move(inner)),
        inner_(keep_.get()),
        config_(inner_->config),
        manager_(inner_->manager.get()),
        owner_(owner) {
    uint64_t index = inner_->next_shard_index.fetch_add(1, std::memory_order_relaxed);
    rng_ = config_.jitter_seed ^ (index * 0xd1b54a32d192ed03ull) ^ inner_->id;
    MutexLock lock(&inner_->shards_mu);
    inner_->shard_counters.push_back(&counters_);
  }

  ~Shard() override {
    dying_ = true;
    reaper_.Reset();
    // Waiters or leases here would outlive their shard: a caller bug.
    RINGRPC_DCHECK(waiters_.empty());
    RINGRPC_DCHECK(counters_.leases.Get() == 0);
    while (!slots_.empty()) {
      SlotT* s = slots_.back().get();
      if (s->leases != 0) {
        counters_.leases.Sub(s->leases);
        s->leases = 0;
        ++idle_;
      }
      if (s->retired == RetireReason::kNone) s->retired = RetireReason::kShardGone;
      Destroy(s);
    }
    MutexLock lock(&inner_->shards_mu);
    auto& v = inner_->shard_counters;
    v.erase(std::find(v.begin(), v.end(), &counters_));
    counters_.AddTo(inner_->gone);
  }

  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  // Starts the reaper if the config needs one and the thread has a runtime.
  // Called once, after the shard is in its thread's map.
  void StartReaper() {
    if ((!config_.NeedsReaper() && !inner_->exchange) || runtime() == nullptr) return;
    reaper_ = Reap();
    reaper_.handle().resume();  // runs to its first sleep
  }

  bool closed() const { return inner_->closed.load(std::memory_order_relaxed); }

  // See ShardBase. Every path that can make it true asks its thread for a
  // sweep: OnClose, Destroy and the end of an acquire on a closed shard.
  bool Finished() const override {
    return closed() && slots_.empty() && size_ == 0 && connecting_ == 0 && waiter_count_ == 0 &&
           granted_ == 0 && recycling_ == 0 && acquiring_ == 0;
  }

  // An Acquire() awaitable holds this shard from its making to its end
  // (its slow path, waiters and guards live inside it).
  void OnAcquireStarted() { ++acquiring_; }
  void OnAcquireEnded() {
    if (--acquiring_ == 0 && closed()) SweepSoon();
  }

  // ---- acquire -----------------------------------------------------------

  // The fast path: a connection with a free lease, leased without awaiting.
  // Null when none is ready (or the next idle one needs an async recycle).
  SlotT* TryLeaseFast();

  // Everything else: async recycle, exchange, dial, wait. Cancellation-safe
  // at every await: destroying the frame restores the shard (decision 0004).
  Task<absl::StatusOr<SlotT*>> AcquireSlow();

  absl::Status ClosedError() const { return absl::UnavailableError("pool is closed"); }

  absl::Status TimeoutError(Duration timeout);

  // ---- return ------------------------------------------------------------

  // A lease ends. Synchronous: it runs in Lease's destructor.
  void Return(SlotT* s, bool poisoned);

  // Hands the connection out of the pool for good. Only the sole lease
  // holder may take it.
  absl::StatusOr<Connection> Take(SlotT* s);

  // ---- close, invalidate, reaper -------------------------------------------

  // Retires every connection of this shard (leased ones when they return)
  // and wakes every waiter to see the pool closed.
  void OnClose();

  // Retires what has expired. Called by the reaper each tick.
  void ReapExpired();

  // Offers the idle connections over min_idle to the exchange, so a shard
  // that went quiet lends its connections to busy threads. One the manager
  // finds not Parkable() yet is told to Quiesce() for the next tick (only
  // here: a connection returned between two calls is never disturbed).
  void ParkIdle();

  // ---- introspection -----------------------------------------------------

  ShardState State() const {
    ShardState st;
    st.size = size_;
    st.reserved = reserved_;
    st.connections = slots_.size();
    st.idle = idle_;
    st.available = available_.size();
    for (auto& s : slots_) st.leases += s->leases;
    st.leases -= recycling_;
    st.waiters = waiter_count_;
    st.granted = granted_;
    return st;
  }

  // OK, or INTERNAL naming the first invariant that does not hold.
  absl::Status CheckInvariants() const {
    auto fail = [&](std::string what) {
      return absl::InternalError(
          absl::StrCat("shard invariant broken: ", what, " in ", State().ToString()));
    };
    if (size_ != slots_.size() + reserved_) return fail("size == slots + reserved");
    if (size_ > config_.max_size) return fail("size <= max_size");
    if (connecting_ != reserved_) return fail("connecting == reserved");
    size_t idle = 0, in_available = 0, leases = 0;
    for (size_t i = 0; i < slots_.size(); ++i) {
      const SlotT& s = *slots_[i];
      if (s.index != i) return fail("slot index");
      if (s.leases == 0) ++idle;
      leases += s.leases;
      if (s.leases > s.capacity) return fail("leases <= capacity");
      if (s.in_available) ++in_available;
      if (s.in_available && s.retired != RetireReason::kNone) {
        return fail("retired slot is available");
      }
      if (s.in_available && s.leases >= s.capacity) {
        return fail("full slot is available");
      }
    }
    if (idle != idle_) return fail("idle count");
    if (in_available != available_.size()) return fail("available list");
    if (leases != counters_.leases.Get() + recycling_) return fail("lease gauge");
    if (counters_.live.Get() != slots_.size()) return fail("live gauge");
    size_t n = 0;
    for (Waiter* w = waiters_.head; w != nullptr; w = w->next) ++n;
    if (n != waiter_count_) return fail("waiter list");
    return absl::OkStatus();
  }

  // Ids of the connections with leases, for exclusivity checks in tests.
  uint64_t SlotIdForTest(const SlotT* s) const { return s->id; }
  const absl::Status& last_connect_error() const { return last_connect_error_; }
  Runtime* runtime() const { return owner_->runtime(); }
  const PoolConfig& config() const { return config_; }

 private:
  // ---- waiters -------------------------------------------------------------

  // A suspended acquire, in an intrusive FIFO list. Woken with a granted
  // lease (handed over directly, so a newcomer cannot overtake it) or with
  // none (budget freed or pool closed: loop and look again).
  struct Waiter final : TimerCallback {
    Shard* shard = nullptr;
    Waiter* prev = nullptr;
    Waiter* next = nullptr;
    bool linked = false;
    std::coroutine_handle<> handle;
    SlotT* granted = nullptr;
    uint64_t wake_timer = 0;
    void OnTimer() override {
      wake_timer = 0;
      handle.resume();
    }
  };
  struct WaiterList {
    Waiter* head = nullptr;
    Waiter* tail = nullptr;
    bool empty() const { return head == nullptr; }
    Waiter* front() const { return head; }
  };

  class WaitForSlot;

  void Link(Waiter* w);
  void Unlink(Waiter* w);
  // Unlinks `w` and resumes it on the next loop turn, holding `granted` (a
  // lease already made) or nothing.
  void Wake(Waiter* w, SlotT* granted);

  // Gives free leases of `s` to waiters, oldest first.
  void ServeWaiters(SlotT* s);

  // Budget or a dial slot came free: let the oldest waiter dial.
  void OnBudgetFreed();

  // ---- guards (cancellation safety) ---------------------------------------

  // Budget held across the awaits of a dial. Destroyed armed (the dial
  // failed or its frame was destroyed) it refunds the budget.
  class Reservation;

  // A popped parked connection is owned by the Attach frame; if that frame
  // is destroyed the connection dies with it and is counted here.
  struct AttachGuard;

  // An idle connection out on an async recycle holds a placeholder lease so
  // nobody else takes it. Cancelled, it goes back exactly as it was.
  class RecycleGuard;

  // ---- slot bookkeeping ----------------------------------------------------

  SlotT* Commit(Reservation& reservation, SlotT* s);

  SlotT* AddSlot(Connection&& conn, const SlotMeta& meta);

  // Takes `s` out of the shard (budget included); the caller owns it.
  std::unique_ptr<SlotT> RemoveSlot(SlotT* s);

  // The one destroy path, so counters cannot drift.
  void Destroy(SlotT* s);

  // Marks `s` retired (the first reason sticks); destroys it once idle.
  void Retire(SlotT* s, RetireReason r);

  void MakeLease(SlotT* s);

  // Reverses MakeLease for a grant whose waiter was cancelled before it ran,
  // then returns the lease.
  void UndoLease(SlotT* s);

  bool Leasable(SlotT* s);

  void MakeAvailable(SlotT* s);
  void RemoveAvailable(SlotT* s);

  // ---- exchange ------------------------------------------------------------

  // Offers an idle connection to the exchange when this shard has more idle
  // than min_idle. True when the connection left the shard.
  bool TryPark(SlotT* s);

  // Pops parked connections until one is fit to attach; the unfit ones are
  // destroyed (their Detached destructor closes them) and counted.
  std::optional<Parked<Detached>> PopUsableParked();

  // ---- the reaper ----------------------------------------------------------

  Task<void> Reap();

  // ---- counters and the observer -------------------------------------------

  void Note(PoolEventKind kind) {
    switch (kind) {
      case PoolEventKind::kConnect:
        counters_.created.Add();
        break;
      case PoolEventKind::kConnectFailed:
        counters_.connect_failures.Add();
        break;
      case PoolEventKind::kPark:
        counters_.parks.Add();
        break;
      case PoolEventKind::kUnpark:
        counters_.unparked.Add();
        break;
      case PoolEventKind::kRetire:
        break;
    }
    if (config_.observer) config_.observer->OnPoolEvent({kind, RetireReason::kNone, inner_->id});
  }
  void NoteRetire(RetireReason r) {
    counters_.Retire(r);
    if (config_.observer) config_.observer->OnPoolEvent({PoolEventKind::kRetire, r, inner_->id});
  }

  // ---- helpers ------------------------------------------------------------

  bool CanDial() const {
    return size_ < config_.max_size &&
           (!config_.max_concurrent_connects || connecting_ < *config_.max_concurrent_connects);
  }

  uint64_t Generation() const { return inner_->generation.load(std::memory_order_relaxed); }

  TimePoint Now() const {
    Runtime* rt = owner_->runtime();
    return rt != nullptr ? rt->Now() : CoarseNow();
  }

  RetireReason Check(const SlotT* s, bool idle) const {
    // The clock is read only when a time limit is configured.
    TimePoint now = config_.NeedsClock() ? Now() : TimePoint{};
    return CheckRetirement(s->meta, config_, now, Generation(), idle);
  }

  SlotMeta NewMeta(uint64_t generation) {
    return NewSlotMeta(config_, Now(), generation, NextRandom(rng_));
  }

  void AssertOwner() const { RINGRPC_DCHECK(&ThreadContext::Current() == owner_); }

  // A closed shard that may be Finished() now: its thread looks soon.
  void SweepSoon() {
    if (!dying_) owner_->RequestSweep();
  }

  std::shared_ptr<Inner<M>> keep_;
  Inner<M>* inner_;
  const PoolConfig& config_;
  M* manager_;
  ThreadContext* owner_;

  std::vector<std::unique_ptr<SlotT>> slots_;
  std::vector<SlotT*> available_;  // LIFO: back is the warmest
  size_t size_ = 0;
  size_t reserved_ = 0;
  size_t connecting_ = 0;
  size_t idle_ = 0;
  size_t recycling_ = 0;  // idle slots out on an async recycle (placeholder lease)
  WaiterList waiters_;
  size_t waiter_count_ = 0;
  size_t granted_ = 0;
  size_t acquiring_ = 0;  // Acquire() awaitables alive on this shard
  ShardCounters counters_;
  absl::Status last_connect_error_;
  uint64_t next_slot_id_ = 0;
  uint64_t rng_ = 0;
  bool dying_ = false;
  Task<void> reaper_;  // destroyed first in ~Shard (member order irrelevant)
};

}  // namespace internal
}  // namespace ringrpc::pool

// The member functions, by concern.
#include "ringrpc/pool/internal/shard_leasing.h"
#include "ringrpc/pool/internal/shard_parking.h"
#include "ringrpc/pool/internal/shard_reaping.h"
#include "ringrpc/pool/internal/shard_waiters.h"

#endif  // RINGRPC_POOL_INTERNAL_SHARD_H_
