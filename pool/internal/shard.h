// pool/internal/shard.h — one thread's share of a pool: its connections, its
// free list, its budget and its waiters. Internal: users see Pool and Lease.
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
#include "base/check.h"
#include "base/mutex.h"
#include "base/task.h"
#include "base/time.h"
#include "pool/config.h"
#include "pool/exchange.h"
#include "pool/manager.h"
#include "pool/metrics.h"
#include "pool/observer.h"
#include "pool/retire.h"
#include "pool/thread_context.h"

namespace ringrpc::pool {

// A shard's state in numbers, for tests: compared whole.
struct ShardState {
  size_t size = 0;        // budget in use (connections + dials)
  size_t reserved = 0;    // budget held by dials in flight
  size_t connections = 0;
  size_t idle = 0;        // connections with no lease
  size_t available = 0;   // connections with a free lease
  size_t leases = 0;      // leases outstanding on this shard
  size_t waiters = 0;
  size_t granted = 0;     // leases handed to waiters that have not resumed
  bool operator==(const ShardState&) const = default;
  std::string ToString() const {
    return absl::StrCat("{size=", size, " reserved=", reserved,
                        " connections=", connections, " idle=", idle,
                        " available=", available, " leases=", leases,
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
    uint64_t index =
        inner_->next_shard_index.fetch_add(1, std::memory_order_relaxed);
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

  bool closed() const {
    return inner_->closed.load(std::memory_order_relaxed);
  }

  // ---- acquire -----------------------------------------------------------

  // The fast path: a connection with a free lease, leased without awaiting.
  // Null when none is ready (or the next idle one needs an async recycle).
  SlotT* TryLeaseFast() {
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

  // Everything else: async recycle, exchange, dial, wait. Cancellation-safe
  // at every await: destroying the frame restores the shard (decision 0004).
  Task<absl::StatusOr<SlotT*>> AcquireSlow() {
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
              absl::StatusOr<Connection> c =
                  co_await manager_->Attach(std::move(parked->detached));
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
        co_return absl::ResourceExhaustedError(absl::StrCat(
            "pool: all ", size_, " connections of this thread are busy "
            "(max_size ", config_.max_size,
            ") and the thread has no runtime to wait on"));
      }
      if (!counted_wait) {
        counters_.waits.Add();
        counted_wait = true;
      }
      SlotT* granted = co_await WaitForSlot(this);
      if (granted != nullptr) co_return granted;
    }
  }

  absl::Status ClosedError() const {
    return absl::UnavailableError("pool is closed");
  }

  absl::Status TimeoutError(Duration timeout) {
    counters_.timeouts.Add();
    std::string msg = absl::StrCat(
        "pool acquire timed out after ",
        std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count(),
        "ms: ", slots_.size(), " connections busy, ", reserved_,
        " dialling (max_size ", config_.max_size, ")");
    if (!last_connect_error_.ok()) {
      absl::StrAppend(&msg, "; last connect error: ",
                      last_connect_error_.ToString());
      return absl::UnavailableError(msg);
    }
    return absl::DeadlineExceededError(msg);
  }

  // ---- return ------------------------------------------------------------

  // A lease ends. Synchronous: it runs in Lease's destructor.
  void Return(SlotT* s, bool poisoned) {
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
    if (RetireReason r =
            CheckRetirement(s->meta, config_, now, Generation(), false);
        r != RetireReason::kNone) {
      Retire(s, r);
      return;
    }
    ServeWaiters(s);
    if (s->leases == 0 && waiters_.empty() && TryPark(s)) return;
    if (s->leases < s->capacity) MakeAvailable(s);
  }

  // Hands the connection out of the pool for good. Only the sole lease
  // holder may take it.
  absl::StatusOr<Connection> Take(SlotT* s) {
    AssertOwner();
    if (s->leases != 1) {
      return absl::FailedPreconditionError(absl::StrCat(
          "Lease::Take: the connection has ", s->leases - 1,
          " other active leases; only the sole lease holder may take it"));
    }
    std::unique_ptr<SlotT> owned = RemoveSlot(s);
    counters_.leases.Sub();
    counters_.live.Sub();
    counters_.taken.Add();
    OnBudgetFreed();
    return std::move(owned->conn);
  }

  // ---- close, invalidate, reaper -------------------------------------------

  // Retires every connection of this shard (leased ones when they return)
  // and wakes every waiter to see the pool closed.
  void OnClose() {
    AssertOwner();
    std::vector<SlotT*> all;
    for (auto& s : slots_) all.push_back(s.get());
    for (SlotT* s : all) Retire(s, RetireReason::kPoolClosed);
    while (!waiters_.empty()) Wake(waiters_.front(), nullptr);
  }

  // Retires what has expired. Called by the reaper each tick.
  void ReapExpired() {
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

  // Offers the idle connections over min_idle to the exchange, so a shard
  // that went quiet lends its connections to busy threads. One the manager
  // finds not Parkable() yet is told to Quiesce() for the next tick (only
  // here: a connection returned between two calls is never disturbed).
  void ParkIdle() {
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
          absl::StrCat("shard invariant broken: ", what, " in ",
                       State().ToString()));
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

  class WaitForSlot {
   public:
    explicit WaitForSlot(Shard* shard) { w_.shard = shard; }
    WaitForSlot(const WaitForSlot&) = delete;
    WaitForSlot& operator=(const WaitForSlot&) = delete;
    ~WaitForSlot() {
      Shard* s = w_.shard;
      if (w_.wake_timer != 0) s->runtime()->CancelTimer(w_.wake_timer);
      if (w_.linked) s->Unlink(&w_);
      if (w_.granted != nullptr) {  // cancelled after the handoff
        --s->granted_;
        s->UndoLease(w_.granted);
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

  void Link(Waiter* w) {
    w->prev = waiters_.tail;
    w->next = nullptr;
    if (waiters_.tail) waiters_.tail->next = w; else waiters_.head = w;
    waiters_.tail = w;
    w->linked = true;
    ++waiter_count_;
  }
  void Unlink(Waiter* w) {
    if (w->prev) w->prev->next = w->next; else waiters_.head = w->next;
    if (w->next) w->next->prev = w->prev; else waiters_.tail = w->prev;
    w->prev = w->next = nullptr;
    w->linked = false;
    --waiter_count_;
  }
  // Unlinks `w` and resumes it on the next loop turn, holding `granted` (a
  // lease already made) or nothing.
  void Wake(Waiter* w, SlotT* granted) {
    Unlink(w);
    w->granted = granted;
    if (granted != nullptr) ++granted_;
    w->wake_timer = runtime()->ScheduleTimer(runtime()->Now(), w);
  }

  // Gives free leases of `s` to waiters, oldest first.
  void ServeWaiters(SlotT* s) {
    while (!waiters_.empty() && Leasable(s)) {
      MakeLease(s);
      Wake(waiters_.front(), s);
    }
  }

  // Budget or a dial slot came free: let the oldest waiter dial.
  void OnBudgetFreed() {
    if (dying_ || waiters_.empty()) return;
    if (closed()) {
      while (!waiters_.empty()) Wake(waiters_.front(), nullptr);
    } else if (CanDial()) {
      Wake(waiters_.front(), nullptr);
    }
  }

  // ---- guards (cancellation safety) ---------------------------------------

  // Budget held across the awaits of a dial. Destroyed armed (the dial
  // failed or its frame was destroyed) it refunds the budget.
  class Reservation {
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

  // A popped parked connection is owned by the Attach frame; if that frame
  // is destroyed the connection dies with it and is counted here.
  struct AttachGuard {
    explicit AttachGuard(Shard* s) : s(s) { s->counters_.attaching.Add(); }
    ~AttachGuard() {
      s->counters_.attaching.Sub();
      if (armed) s->NoteRetire(RetireReason::kAttachFailed);
    }
    Shard* s;
    bool armed = true;
  };

  // An idle connection out on an async recycle holds a placeholder lease so
  // nobody else takes it. Cancelled, it goes back exactly as it was.
  class RecycleGuard {
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

  // ---- slot bookkeeping ----------------------------------------------------

  SlotT* Commit(Reservation& reservation, SlotT* s) {
    reservation.Disarm();
    MakeLease(s);
    ServeWaiters(s);
    if (s->leases < s->capacity) MakeAvailable(s);
    OnBudgetFreed();  // a dial slot came free
    return s;
  }

  SlotT* AddSlot(Connection&& conn, const SlotMeta& meta) {
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

  // Takes `s` out of the shard (budget included); the caller owns it.
  std::unique_ptr<SlotT> RemoveSlot(SlotT* s) {
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

  // The one destroy path, so counters cannot drift.
  void Destroy(SlotT* s) {
    RINGRPC_DCHECK(s->leases == 0);
    RINGRPC_DCHECK(s->retired != RetireReason::kNone);
    std::unique_ptr<SlotT> owned = RemoveSlot(s);
    NoteRetire(owned->retired);
    counters_.live.Sub();
    manager_->Disconnect(std::move(owned->conn));
    OnBudgetFreed();
  }

  // Marks `s` retired (the first reason sticks); destroys it once idle.
  void Retire(SlotT* s, RetireReason r) {
    if (s->retired == RetireReason::kNone) s->retired = r;
    RemoveAvailable(s);
    if (s->leases == 0) Destroy(s);
  }

  void MakeLease(SlotT* s) {
    RINGRPC_DCHECK(s->retired == RetireReason::kNone);
    if (s->leases == 0) --idle_;
    ++s->leases;
    ++s->meta.uses;
    counters_.leases.Add();
    counters_.acquires.Add();
    if (s->leases >= s->capacity) RemoveAvailable(s);
  }

  // Reverses MakeLease for a grant whose waiter was cancelled before it ran,
  // then returns the lease.
  void UndoLease(SlotT* s) {
    --s->meta.uses;
    counters_.acquires.Sub();
    Return(s, false);
  }

  bool Leasable(SlotT* s) {
    return s->retired == RetireReason::kNone && s->leases < s->capacity &&
           Check(s, false) == RetireReason::kNone;
  }

  void MakeAvailable(SlotT* s) {
    if (s->in_available) return;
    s->in_available = true;
    available_.push_back(s);
  }
  void RemoveAvailable(SlotT* s) {
    if (!s->in_available) return;
    s->in_available = false;
    if (available_.back() == s) {
      available_.pop_back();
    } else {
      available_.erase(std::find(available_.begin(), available_.end(), s));
    }
  }

  // ---- exchange ------------------------------------------------------------

  // Offers an idle connection to the exchange when this shard has more idle
  // than min_idle. True when the connection left the shard.
  bool TryPark(SlotT* s) {
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
        inner_->exchange->Push(
            Parked<Detached>{std::move(*d), owned->meta, Now()});
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

  // Pops parked connections until one is fit to attach; the unfit ones are
  // destroyed (their Detached destructor closes them) and counted.
  std::optional<Parked<Detached>> PopUsableParked() {
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

  // ---- the reaper ----------------------------------------------------------

  Task<void> Reap() {
    for (;;) {
      co_await SleepFor(*runtime(), config_.reap_interval);
      if (closed()) {
        OnClose();
        co_return;
      }
      ReapExpired();
      // Refill to min_idle, never while a waiter is parked: a returning
      // connection serves it sooner than a fresh dial.
      while (!closed() && waiters_.empty() && idle_ < config_.min_idle &&
             CanDial()) {
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

  // ---- counters and the observer -------------------------------------------

  void Note(PoolEventKind kind) {
    switch (kind) {
      case PoolEventKind::kConnect: counters_.created.Add(); break;
      case PoolEventKind::kConnectFailed: counters_.connect_failures.Add(); break;
      case PoolEventKind::kPark: counters_.parks.Add(); break;
      case PoolEventKind::kUnpark: counters_.unparked.Add(); break;
      case PoolEventKind::kRetire: break;
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
           (!config_.max_concurrent_connects ||
            connecting_ < *config_.max_concurrent_connects);
  }

  uint64_t Generation() const {
    return inner_->generation.load(std::memory_order_relaxed);
  }

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

  void AssertOwner() const {
    RINGRPC_DCHECK(&ThreadContext::Current() == owner_);
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
  ShardCounters counters_;
  absl::Status last_connect_error_;
  uint64_t next_slot_id_ = 0;
  uint64_t rng_ = 0;
  bool dying_ = false;
  Task<void> reaper_;  // destroyed first in ~Shard (member order irrelevant)
};

}  // namespace internal
}  // namespace ringrpc::pool

#endif  // RINGRPC_POOL_INTERNAL_SHARD_H_
