// Warm acquire+return on one thread and on 2 threads with their own shards,
// beside a baseline pool that guards one shared free list with a
// std::mutex, in the same run. Run: tools/bench-pool.sh
// (bazel run -c opt //ringrpc/pool/bench:pool_benchmark).
#include <benchmark/benchmark.h>

#include <memory>
#include <mutex>
#include <vector>

#include "ringrpc/pool/pool.h"

namespace ringrpc::pool {
namespace {
struct BenchManager;
}  // namespace
void WarmPairForDisassembly(internal::Shard<BenchManager>* shard);
namespace {

struct BenchManager {
  struct Connection {
    uint64_t id = 0;
  };
  Task<absl::StatusOr<Connection>> Connect() { co_return Connection{1}; }
  void Disconnect(Connection&&) {}
};

struct RecyclingManager : BenchManager {
  absl::Status Recycle(Connection& c) {
    return c.id != 0 ? absl::OkStatus() : absl::UnavailableError("dead");
  }
};

template <typename M>
Pool<M> MakePool(PoolConfig config = {}) {
  static auto manager = std::make_shared<M>();
  return *Pool<M>::Create(config, manager);
}

// Synchronous API: TryAcquire + Lease destructor.
template <typename M>
void BM_Sharded_TryAcquire(benchmark::State& state) {
  static Pool<M> pool = MakePool<M>();
  { auto warm = pool.TryAcquire(); }  // dials nothing: first touch only
  // First touch dials through the coroutine path once.
  {
    Task<void> t = [](Pool<M> p) -> Task<void> { (void)co_await p.Acquire(); }(pool);
    t.handle().resume();
  }
  for (auto _ : state) {
    absl::StatusOr<Lease<M>> lease = pool.TryAcquire();
    benchmark::DoNotOptimize(lease);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Sharded_TryAcquire<BenchManager>)->Threads(1)->Threads(2);
BENCHMARK(BM_Sharded_TryAcquire<RecyclingManager>)->Threads(1)->Threads(2);

// The coroutine API: co_await pool.Acquire() on the warm path completes
// without suspending.
template <typename M>
Task<void> AcquireLoop(Pool<M> pool, benchmark::State& state) {
  { (void)co_await pool.Acquire(); }
  for (auto _ : state) {
    absl::StatusOr<Lease<M>> lease = co_await pool.Acquire();
    benchmark::DoNotOptimize(lease);
  }
}

template <typename M>
void BM_Sharded_CoAwaitAcquire(benchmark::State& state) {
  static Pool<M> pool = MakePool<M>();
  Task<void> t = AcquireLoop(pool, state);
  t.handle().resume();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Sharded_CoAwaitAcquire<BenchManager>)->Threads(1)->Threads(2);

// HTTP/2-like: 100 leases per connection, 10 held while measuring.
void BM_Sharded_CoAwaitAcquire_Capacity100(benchmark::State& state) {
  PoolConfig c;
  c.max_leases_per_connection = 100;
  static Pool<BenchManager> pool = MakePool<BenchManager>(c);
  std::vector<absl::StatusOr<Lease<BenchManager>>> held;
  Task<void> t = [](Pool<BenchManager> p, benchmark::State& state,
                    std::vector<absl::StatusOr<Lease<BenchManager>>>& held) -> Task<void> {
    for (int i = 0; i < 10; ++i) held.push_back(co_await p.Acquire());
    for (auto _ : state) {
      absl::StatusOr<Lease<BenchManager>> lease = co_await p.Acquire();
      benchmark::DoNotOptimize(lease);
    }
    held.clear();
  }(pool, state, held);
  t.handle().resume();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Sharded_CoAwaitAcquire_Capacity100)->Threads(1)->Threads(2);

// With idle timeout and max lifetime set, each pair reads the clock (no
// runtime on the benchmark thread: steady_clock).
void BM_Sharded_TryAcquire_WithTimeLimits(benchmark::State& state) {
  PoolConfig c;
  c.idle_timeout = std::chrono::minutes(5);
  c.max_lifetime = std::chrono::minutes(30);
  static Pool<BenchManager> pool = MakePool<BenchManager>(c);
  Task<void> t = [](Pool<BenchManager> p) -> Task<void> { (void)co_await p.Acquire(); }(pool);
  t.handle().resume();
  for (auto _ : state) {
    absl::StatusOr<Lease<BenchManager>> lease = pool.TryAcquire();
    benchmark::DoNotOptimize(lease);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Sharded_TryAcquire_WithTimeLimits)->Threads(1)->Threads(2);

// Baseline: one free list shared by every thread, behind a std::mutex.
class MutexPool {
 public:
  explicit MutexPool(int n) {
    for (int i = 0; i < n; ++i) free_.push_back(new BenchManager::Connection{uint64_t(i + 1)});
  }
  BenchManager::Connection* Acquire() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) return nullptr;
    BenchManager::Connection* c = free_.back();
    free_.pop_back();
    return c;
  }
  void Release(BenchManager::Connection* c) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(c);
  }

 private:
  std::mutex mu_;
  std::vector<BenchManager::Connection*> free_;
};

// The internal warm pair itself (what tools/check-warm-path.sh inspects).
void BM_Sharded_InternalWarmPair(benchmark::State& state) {
  static Pool<BenchManager> pool = MakePool<BenchManager>();
  { auto l = pool.TryAcquire(); }  // makes this thread's shard
  Task<void> t = [](Pool<BenchManager> p) -> Task<void> { (void)co_await p.Acquire(); }(pool);
  t.handle().resume();
  auto* shard =
      static_cast<internal::Shard<BenchManager>*>(ThreadContext::Current().FindShard(pool.id()));
  for (auto _ : state) WarmPairForDisassembly(shard);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Sharded_InternalWarmPair)->Threads(1)->Threads(2);

void BM_MutexBaseline(benchmark::State& state) {
  static MutexPool pool(8);
  for (auto _ : state) {
    BenchManager::Connection* c = pool.Acquire();
    benchmark::DoNotOptimize(c);
    pool.Release(c);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MutexBaseline)->Threads(1)->Threads(2);

}  // namespace

// The warm pair at the level the design promises "no atomic RMW": the
// shard's fast path and its return path. tools/check-warm-path.sh
// disassembles this function (and what it calls) and fails on any
// lock-prefixed or xchg instruction.
[[gnu::noinline]] void WarmPairForDisassembly(internal::Shard<BenchManager>* shard) {
  internal::Slot<BenchManager>* s = shard->TryLeaseFast();
  if (s != nullptr) shard->Return(s, false);
}

}  // namespace ringrpc::pool

BENCHMARK_MAIN();
