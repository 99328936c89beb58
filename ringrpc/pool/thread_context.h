// ringrpc/pool/thread_context.h — a thread's pool state: its Runtime and its shards.
//
// Each pool keeps one shard per thread that uses it; a thread's
// ThreadContext holds those shards (keyed by pool id) and the thread's
// Runtime (ringrpc/base/runtime.h), which gives the pool the time and timers. A test
// can simulate several threads on one OS thread by entering their contexts.
//
// Threading: a ThreadContext is owned by its thread; never shared.
//
//   ThreadContext::Scope scope(&ctx);            // enter a (simulated) thread
//   co_await SleepFor(*ctx.runtime(), 10ms);     // on that thread's runtime
#ifndef RINGRPC_POOL_THREAD_CONTEXT_H_
#define RINGRPC_POOL_THREAD_CONTEXT_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "ringrpc/base/runtime.h"

namespace ringrpc::pool {

// Base of every pool's per-thread shard, so one map can hold shards of pools
// of different manager types.
class ShardBase {
 public:
  virtual ~ShardBase() = default;
  // The shard's pool is closed and nothing on this thread uses the shard any
  // more (no connection, dial, waiter or acquire in progress): its thread
  // may destroy it.
  virtual bool Finished() const = 0;
};

// Per-thread state: the thread's Runtime (may be null) and its pool shards,
// keyed by pool id. A real thread gets one implicitly; a test can simulate
// several threads on one OS thread by entering their contexts with Scope.
// Owned by its thread; never shared.
//
// A closed pool's shard goes once it is Finished(): the shard asks for a
// sweep (RequestSweep) when it may have become so, and the sweep runs from
// a timer due at once, on this thread's runtime, with nothing of any pool
// on the stack. Without it a thread that outlives many pools (a channel per
// call on long-lived CQ threads) kept every shard it ever made, and each
// shard its pool's shared state (a few KiB a pool). A thread with no
// runtime keeps its shards until it ends.
class ThreadContext final : private TimerCallback {
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

  // Destroys the Finished() shards soon (on the next timer turn of this
  // thread's runtime, never inline). Cheap to call often: one timer at most.
  void RequestSweep();

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

  void OnTimer() override;  // the sweep

  Runtime* runtime_ = nullptr;
  uint64_t sweep_timer_ = 0;  // pending sweep, 0: none
  bool dying_ = false;        // in the destructor: no more sweeps
  std::vector<std::pair<uint64_t, std::unique_ptr<ShardBase>>> shards_;
  uint64_t cached_id_ = 0;  // pool ids start at 1
  ShardBase* cached_shard_ = nullptr;
};

}  // namespace ringrpc::pool

#endif  // RINGRPC_POOL_THREAD_CONTEXT_H_
