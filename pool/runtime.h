// pool/runtime.h — the small runtime interface the pool is written against.
//
// The pool needs two things from whatever runs it: the time, and cancellable
// timers on the current thread. A timer due now is how the pool spawns work
// and wakes a waiter later on the same thread (never inline, and cancellable
// if the waiter's frame is destroyed first); "current thread" is the
// ThreadContext below. The
// io_uring completion-queue threads implement this in client/runtime; pool
// tests implement it with a fake clock and a deterministic executor
// (pool/testing/fake_runtime.h), so expiry, reaper ticks and timeouts are
// tested without sleeping.
//
// Threading: a Runtime belongs to one thread and is only called from it.
// ThreadContext::Current() is that thread's context: its Runtime (or none)
// and its pool shards.
//
//   ThreadContext::Scope scope(&ctx);            // enter a (simulated) thread
//   co_await SleepFor(*ctx.runtime(), 10ms);     // on that thread's runtime
#ifndef RINGRPC_POOL_RUNTIME_H_
#define RINGRPC_POOL_RUNTIME_H_

#include <chrono>
#include <coroutine>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace ringrpc::pool {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = Clock::duration;

// The time on a thread with no Runtime: CLOCK_MONOTONIC_COARSE (steady
// clock's epoch, a few ms resolution, a few ns to read instead of ~25 ns),
// plenty for idle and lifetime limits measured in seconds.
TimePoint CoarseNow();

// Something a Runtime calls back when a timer fires. Intrusive: the runtime
// keeps the pointer, so the callback must cancel the timer before it dies.
class TimerCallback {
 public:
  virtual void OnTimer() = 0;

 protected:
  ~TimerCallback() = default;
};

class Runtime {
 public:
  virtual ~Runtime() = default;

  // The loop's notion of now. May be cached per loop turn; never goes back.
  virtual TimePoint Now() = 0;

  // Calls cb->OnTimer() on this runtime's thread at or after `deadline`,
  // unless CancelTimer(id) comes first. Returns a non-zero id.
  virtual uint64_t ScheduleTimer(TimePoint deadline, TimerCallback* cb) = 0;

  // Cancels a pending timer. Returns false if it already fired or is unknown.
  virtual bool CancelTimer(uint64_t id) = 0;
};

// Awaitable: resumes at `deadline` on `rt`'s thread. Destroying the awaiting
// frame while suspended cancels the timer (cancellation-safe).
class SleepUntil final : private TimerCallback {
 public:
  SleepUntil(Runtime& rt, TimePoint deadline) : rt_(rt), deadline_(deadline) {}
  SleepUntil(const SleepUntil&) = delete;
  SleepUntil& operator=(const SleepUntil&) = delete;
  ~SleepUntil() {
    if (timer_id_ != 0) rt_.CancelTimer(timer_id_);
  }

  bool await_ready() { return deadline_ <= rt_.Now(); }
  void await_suspend(std::coroutine_handle<> h) {
    waiting_ = h;
    timer_id_ = rt_.ScheduleTimer(deadline_, this);
  }
  void await_resume() noexcept {}

 private:
  void OnTimer() override {
    timer_id_ = 0;
    waiting_.resume();
  }

  Runtime& rt_;
  TimePoint deadline_;
  uint64_t timer_id_ = 0;
  std::coroutine_handle<> waiting_;
};

inline SleepUntil SleepFor(Runtime& rt, Duration d) {
  return SleepUntil(rt, rt.Now() + d);
}

// Base of every pool's per-thread shard, so one map can hold shards of pools
// of different manager types.
class ShardBase {
 public:
  virtual ~ShardBase() = default;
};

// Per-thread state: the thread's Runtime (may be null) and its pool shards,
// keyed by pool id. A real thread gets one implicitly; a test can simulate
// several threads on one OS thread by entering their contexts with Scope.
// Owned by its thread; never shared.
class ThreadContext {
 public:
  ThreadContext() = default;
  explicit ThreadContext(Runtime* runtime) : runtime_(runtime) {}
  ThreadContext(const ThreadContext&) = delete;
  ThreadContext& operator=(const ThreadContext&) = delete;
  // Destroys the shards, newest first (their connections are disconnected).
  ~ThreadContext();

  // The context of the calling thread: the innermost Scope, else the thread's
  // implicit one. Inline: it is on every checkout.
  static ThreadContext& Current() {
    ThreadContext* c = tls_current_;
    return c != nullptr ? *c : Implicit();
  }

  Runtime* runtime() const { return runtime_; }
  void set_runtime(Runtime* runtime) { runtime_ = runtime; }

  // Shard of pool `pool_id` on this thread, or null.
  ShardBase* FindShard(uint64_t pool_id) {
    if (cached_id_ == pool_id) return cached_shard_;
    for (auto& [id, shard] : shards_) {
      if (id == pool_id) {
        cached_id_ = id;
        cached_shard_ = shard.get();
        return cached_shard_;
      }
    }
    return nullptr;
  }
  ShardBase* AddShard(uint64_t pool_id, std::unique_ptr<ShardBase> shard);
  size_t shard_count() const { return shards_.size(); }

  // Makes `ctx` current for this OS thread until the Scope ends.
  class Scope {
   public:
    explicit Scope(ThreadContext* ctx);
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope();

   private:
    ThreadContext* previous_;
  };

 private:
  // The thread's implicit context, made on first use; it becomes current.
  static ThreadContext& Implicit();
  static inline thread_local ThreadContext* tls_current_ = nullptr;

  Runtime* runtime_ = nullptr;
  std::vector<std::pair<uint64_t, std::unique_ptr<ShardBase>>> shards_;
  uint64_t cached_id_ = 0;  // pool ids start at 1
  ShardBase* cached_shard_ = nullptr;
};

}  // namespace ringrpc::pool

#endif  // RINGRPC_POOL_RUNTIME_H_
