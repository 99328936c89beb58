// ringrpc/pool/pool.h — a generic per-thread sharded connection pool with leases.
//
// Pool<M> pools the connections a manager M makes (see PoolManager in
// ringrpc/pool/manager.h). The handle is copyable to any thread; each thread
// that uses it gets its own shard, found through that thread's
// ThreadContext, so checkout and return touch only thread-local state: no
// lock and no atomic read-modify-write. A connection carries up to
// `capacity` concurrent leases (HTTP/2 streams); capacity 1 is exclusive
// checkout. ringrpc/pool/ knows nothing of HTTP/2 or gRPC.
//
// Threading: Pool — any thread. Lease — the thread that acquired it; it must
// end (destructor, Release, Take) on that thread. Acquire() needs the
// thread's Runtime to wait, time out or reap; without one the pool still
// works but an acquire at max_size fails at once instead of waiting.
//
//   auto pool = Pool<Manager>::Create(config, std::make_shared<Manager>());
//   absl::StatusOr<Lease<Manager>> lease = co_await pool->Acquire();
//   if (lease.ok()) (*lease)->Send(...);   // returned when `lease` dies
#ifndef RINGRPC_POOL_POOL_H_
#define RINGRPC_POOL_POOL_H_

#include <coroutine>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ringrpc/base/task.h"
#include "ringrpc/base/time.h"
#include "ringrpc/pool/config.h"
#include "ringrpc/pool/exchange.h"
#include "ringrpc/pool/internal/shard.h"
#include "ringrpc/pool/manager.h"
#include "ringrpc/pool/metrics.h"
#include "ringrpc/pool/thread_context.h"

namespace ringrpc::pool {

template <PoolManager M>
class Pool;

// One lease on a pooled connection. Move-only; returns the lease when it is
// destroyed or Release()d.
template <PoolManager M>
class Lease {
 public:
  using Connection = typename M::Connection;

  Lease() = default;
  Lease(Lease&& o) noexcept
      : shard_(std::exchange(o.shard_, nullptr)),
        slot_(std::exchange(o.slot_, nullptr)),
        poisoned_(o.poisoned_) {}
  Lease& operator=(Lease&& o) noexcept {
    if (this != &o) {
      Release();
      shard_ = std::exchange(o.shard_, nullptr);
      slot_ = std::exchange(o.slot_, nullptr);
      poisoned_ = o.poisoned_;
    }
    return *this;
  }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease() { Release(); }

  explicit operator bool() const { return slot_ != nullptr; }
  Connection& operator*() const { return slot_->conn; }
  Connection* operator->() const { return &slot_->conn; }

  // Marks the connection broken: it gets no new lease, and is destroyed
  // when its last lease ends.
  void Poison() { poisoned_ = true; }
  bool poisoned() const { return poisoned_; }

  // Ends the lease now (idempotent).
  void Release() {
    if (slot_ == nullptr) return;
    std::exchange(shard_, nullptr)->Return(std::exchange(slot_, nullptr), poisoned_);
  }

  // Takes the connection out of the pool for good (counted as `taken`).
  // FAILED_PRECONDITION, leaving the lease as it was, if other leases share
  // the connection.
  absl::StatusOr<Connection> Take() {
    if (slot_ == nullptr) {
      return absl::FailedPreconditionError("Lease::Take on an empty lease");
    }
    absl::StatusOr<Connection> c = shard_->Take(slot_);
    if (c.ok()) {
      shard_ = nullptr;
      slot_ = nullptr;
    }
    return c;
  }

  // Identity of the connection within its shard, and its lease count so
  // far; for tests and logs.
  uint64_t connection_id() const { return slot_->id; }
  uint64_t uses() const { return slot_->meta.uses; }

 private:
  friend class Pool<M>;
  Lease(internal::Shard<M>* shard, internal::Slot<M>* slot) : shard_(shard), slot_(slot) {}

  internal::Shard<M>* shard_ = nullptr;
  internal::Slot<M>* slot_ = nullptr;
  bool poisoned_ = false;
};

template <PoolManager M>
class Pool {
 public:
  using Connection = typename M::Connection;
  using Detached = typename DetachedOf<M>::type;

  // Validates `config` (INVALID_ARGUMENT naming the bad field) and builds a
  // pool. `exchange`, if given, moves idle connections between threads; it
  // needs a manager that can detach, and must serve this pool alone.
  static absl::StatusOr<Pool> Create(PoolConfig config, std::shared_ptr<M> manager,
                                     std::shared_ptr<Exchange<Detached>> exchange = nullptr) {
    if (absl::Status s = ValidatePoolConfig(config); !s.ok()) return s;
    if (manager == nullptr) {
      return absl::InvalidArgumentError("pool: manager must not be null");
    }
    if constexpr (!CanDetach<M>) {
      if (exchange != nullptr) {
        return absl::InvalidArgumentError(
            "pool: an exchange needs a manager with Detach and Attach");
      }
    }
    auto inner = std::make_shared<internal::Inner<M>>();
    inner->config = config;
    inner->manager = std::move(manager);
    inner->exchange = std::move(exchange);
    return Pool(std::move(inner));
  }

  // Awaitable yielding absl::StatusOr<Lease<M>>. When a connection on this
  // thread has a free lease (and its recycle, if any, is synchronous) it
  // completes without suspending and without allocating. Otherwise it
  // recycles, unparks, dials or waits, bounded by acquire_timeout.
  // Destroying the awaiting coroutine at any point leaves the shard as if
  // the acquire had never started.
  class AcquireAwaitable final : private TimerCallback {
   public:
    AcquireAwaitable(const AcquireAwaitable&) = delete;
    AcquireAwaitable& operator=(const AcquireAwaitable&) = delete;
    ~AcquireAwaitable() {
      if (timer_id_ != 0) runtime_->CancelTimer(timer_id_);
      slow_.Reset();  // its frame uses the shard: gone before the count drops
      shard_->OnAcquireEnded();
    }

    bool await_ready() {
      if (shard_->closed()) {
        shard_->OnClose();
        result_ = shard_->ClosedError();
        return true;
      }
      if (internal::Slot<M>* s = shard_->TryLeaseFast()) {
        result_ = s;
        return true;
      }
      return false;
    }

    std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) {
      slow_ = shard_->AcquireSlow();
      slow_.handle().promise().continuation = awaiting;
      const PoolConfig& config = shard_->config();
      runtime_ = shard_->runtime();
      if (config.acquire_timeout && runtime_ != nullptr) {
        awaiting_ = awaiting;
        timeout_ = *config.acquire_timeout;
        timer_id_ = runtime_->ScheduleTimer(runtime_->Now() + timeout_, this);
      }
      return slow_.handle();
    }

    absl::StatusOr<Lease<M>> await_resume() {
      if (timer_id_ != 0) {
        runtime_->CancelTimer(timer_id_);
        timer_id_ = 0;
      }
      if (slow_.valid()) {
        result_ = std::move(slow_.result());
        slow_.Reset();
      }
      if (!result_.ok()) return result_.status();
      return Lease<M>(shard_, *result_);
    }

   private:
    friend class Pool;
    explicit AcquireAwaitable(internal::Shard<M>* shard) : shard_(shard) {
      shard_->OnAcquireStarted();
    }

    // acquire_timeout: destroying the slow path cancels it (its guards put
    // the shard back), then the awaiting coroutine resumes with the error.
    void OnTimer() override {
      timer_id_ = 0;
      slow_.Reset();
      result_ = shard_->TimeoutError(timeout_);
      awaiting_.resume();
    }

    internal::Shard<M>* shard_;
    absl::StatusOr<internal::Slot<M>*> result_ = nullptr;
    Task<absl::StatusOr<internal::Slot<M>*>> slow_;
    Runtime* runtime_ = nullptr;
    uint64_t timer_id_ = 0;
    Duration timeout_{};
    std::coroutine_handle<> awaiting_;
  };

  AcquireAwaitable Acquire() const { return AcquireAwaitable(LocalShard()); }

  // Synchronous checkout: a connection on this thread with a free lease, or
  // RESOURCE_EXHAUSTED (never dials, never waits). UNAVAILABLE when closed.
  absl::StatusOr<Lease<M>> TryAcquire() const {
    internal::Shard<M>* shard = LocalShard();
    if (shard->closed()) {
      shard->OnClose();
      return shard->ClosedError();
    }
    if (internal::Slot<M>* s = shard->TryLeaseFast()) return Lease<M>(shard, s);
    return absl::ResourceExhaustedError("pool: no connection with a free lease on this thread");
  }

  // Retires every connection made so far, on every thread, lazily: each is
  // destroyed at its next return or checkout, or by its shard's reaper.
  // Leases in use keep working. Parked connections are dropped now.
  void Invalidate() const {
    inner_->generation.fetch_add(1, std::memory_order_relaxed);
    inner_->ClearExchange();
  }

  // Closes the pool: acquires fail UNAVAILABLE from now on, parked
  // connections are dropped, this thread's idle ones destroyed now and other
  // threads' at their next touch or reaper tick; leased ones when returned.
  void Close() const {
    inner_->closed.store(true, std::memory_order_relaxed);
    inner_->ClearExchange();
    ThreadContext& ctx = ThreadContext::Current();
    if (ShardBase* b = ctx.FindShard(inner_->id)) {
      static_cast<internal::Shard<M>*>(b)->OnClose();
    }
  }

  // Retires this thread's expired connections now, as its reaper would
  // (after Invalidate(), so stale idle connections go without waiting for
  // their next checkout). No-op on a thread with no shard.
  void ReapLocalShard() const {
    if (ShardBase* b = ThreadContext::Current().FindShard(inner_->id)) {
      static_cast<internal::Shard<M>*>(b)->ReapExpired();
    }
  }

  bool closed() const { return inner_->closed.load(std::memory_order_relaxed); }
  uint64_t generation() const { return inner_->generation.load(std::memory_order_relaxed); }
  uint64_t id() const { return inner_->id; }
  const PoolConfig& config() const { return inner_->config; }

  // Sum over all shards (live and gone) plus the exchange. Consistent when
  // the pool is quiescent; a racing snapshot may be off by in-flight moves.
  PoolMetrics Metrics() const { return inner_->Metrics(); }

  // This thread's shard, for tests (created if absent).
  ShardState ShardStateForTest() const { return LocalShard()->State(); }
  absl::Status CheckShardInvariantsForTest() const { return LocalShard()->CheckInvariants(); }

 private:
  explicit Pool(std::shared_ptr<internal::Inner<M>> inner) : inner_(std::move(inner)) {}

  internal::Shard<M>* LocalShard() const {
    ThreadContext& ctx = ThreadContext::Current();
    ShardBase* b = ctx.FindShard(inner_->id);
    if (b == nullptr) [[unlikely]]
      return CreateShard(ctx);
    return static_cast<internal::Shard<M>*>(b);
  }

  // First touch on a thread. Out of line so the warm path stays small (and
  // free of the atomics and the lock that registering a shard takes).
  [[gnu::noinline]] internal::Shard<M>* CreateShard(ThreadContext& ctx) const {
    auto* shard = new internal::Shard<M>(inner_, &ctx);
    ctx.AddShard(inner_->id, std::unique_ptr<ShardBase>(shard));
    shard->StartReaper();
    return shard;
  }

  std::shared_ptr<internal::Inner<M>> inner_;
};

}  // namespace ringrpc::pool

#endif  // RINGRPC_POOL_POOL_H_
