// Real threads, one pool, the lock-free reservoir moving idle connections
// between them, Invalidate() and Metrics() from other threads. Run under
// --config=tsan (tag "tsan"). Checks exclusivity across threads and, at the
// end, conservation against the manager's own count.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "ringrpc/pool/pool.h"
#include "ringrpc/pool/reservoir.h"
#include "ringrpc/pool/testing/fake_runtime.h"

namespace ringrpc::pool {
namespace {

constexpr uint64_t kMaxIds = 1 << 20;

// Thread-safe manager: connections are ids; `open` counts what exists.
struct SharedManager {
  struct Conn {
    uint64_t id;
  };
  using Connection = Conn;
  class Detached {
   public:
    Detached(SharedManager* m, uint64_t id) : m_(m), id_(id) {}
    Detached(Detached&& o) noexcept : m_(std::exchange(o.m_, nullptr)), id_(o.id_) {}
    Detached& operator=(Detached&&) = delete;
    ~Detached() {
      if (m_) m_->open.fetch_sub(1);
    }
    uint64_t Release() {
      m_ = nullptr;
      return id_;
    }

   private:
    SharedManager* m_;
    uint64_t id_;
  };

  Task<absl::StatusOr<Conn>> Connect() {
    open.fetch_add(1);
    co_return Conn{next_id.fetch_add(1)};
  }
  absl::Status Recycle(Conn&) { return absl::OkStatus(); }
  void Disconnect(Conn&&) { open.fetch_sub(1); }
  absl::StatusOr<Detached> Detach(Conn&& c) { return Detached(this, c.id); }
  Task<absl::StatusOr<Conn>> Attach(Detached&& d) { co_return Conn{d.Release()}; }

  std::atomic<int64_t> open{0};
  std::atomic<uint64_t> next_id{0};
};

using StressPool = Pool<SharedManager>;

Task<absl::StatusOr<Lease<SharedManager>>> AcquireTask(StressPool pool) {
  co_return co_await pool.Acquire();
}

TEST(PoolStress, ThreadsShareOnlyThroughTheReservoir) {
  auto manager = std::make_shared<SharedManager>();
  auto reservoir = std::make_shared<Reservoir<SharedManager::Detached>>(4);
  PoolConfig config;
  config.max_size = 3;
  StressPool pool = *StressPool::Create(config, manager, reservoir);

  std::vector<std::atomic<int>> holders(kMaxIds);
  std::atomic<bool> exclusive{true};
  std::atomic<bool> stop{false};
  constexpr int kThreads = 4;
  constexpr int kOpsPerThread = 30000;

  std::thread monitor([&] {
    while (!stop.load()) {
      PoolMetrics m = pool.Metrics();
      (void)m;
      std::this_thread::yield();
    }
  });

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      testing::FakeRuntime runtime;
      auto ctx = std::make_unique<ThreadContext>(&runtime);
      ThreadContext::Scope scope(ctx.get());
      std::mt19937 rng(t + 1);
      std::vector<Lease<SharedManager>> held;
      auto drop = [&](size_t i) {
        holders[held[i]->id].store(0);
        held.erase(held.begin() + i);
      };
      for (int i = 0; i < kOpsPerThread; ++i) {
        unsigned r = rng() % 100;
        if (r < 50) {
          Task<absl::StatusOr<Lease<SharedManager>>> op = AcquireTask(pool);
          op.handle().resume();
          while (!op.done()) {  // at max_size: free one of ours, let it run
            ASSERT_FALSE(held.empty());
            drop(rng() % held.size());
            runtime.RunReady();
          }
          ASSERT_TRUE(op.result().ok()) << op.result().status();
          Lease<SharedManager> l = std::move(*op.result());
          int expected = 0;
          if (!holders[l->id].compare_exchange_strong(expected, 1)) {
            exclusive.store(false);
          }
          held.push_back(std::move(l));
        } else if (r < 95) {
          if (!held.empty()) drop(rng() % held.size());
        } else if (r < 98) {
          if (!held.empty()) {
            held.back().Poison();
            drop(held.size() - 1);
          }
        } else {
          pool.Invalidate();
        }
      }
      while (!held.empty()) drop(held.size() - 1);
      ctx.reset();  // the thread ends: its shard and connections go
    });
  }
  for (auto& th : threads) th.join();
  stop.store(true);
  monitor.join();

  EXPECT_TRUE(exclusive.load());
  PoolMetrics m = pool.Metrics();
  EXPECT_TRUE(m.Conserved()) << m.ToString();
  EXPECT_EQ(m.live, 0u);
  EXPECT_EQ(manager->open.load(), static_cast<int64_t>(m.parked));
  EXPECT_GT(m.unparked, 0u) << "no connection ever crossed threads";
  EXPECT_EQ(reservoir->admitted(), reservoir->parked());
  pool.Close();
  EXPECT_EQ(manager->open.load(), 0);
  EXPECT_TRUE(pool.Metrics().Conserved()) << pool.Metrics().ToString();
  std::printf("stress: %s\n", pool.Metrics().ToString().c_str());
}

}  // namespace
}  // namespace ringrpc::pool
