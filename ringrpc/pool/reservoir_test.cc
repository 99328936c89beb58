// The lock-free Reservoir against its mutex twin: the same operations give
// the same answers (differential), and under real threads nothing is lost,
// duplicated, or admitted past capacity.
#include "ringrpc/pool/reservoir.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "ringrpc/pool/mutex_reservoir.h"

namespace ringrpc::pool {
namespace {

// A detached connection that counts its own closing.
struct Token {
  explicit Token(uint64_t id, std::atomic<int>* closed) : id(id), closed(closed) {}
  Token(Token&& o) noexcept : id(o.id), closed(std::exchange(o.closed, nullptr)) {}
  Token& operator=(Token&& o) noexcept {
    id = o.id;
    closed = std::exchange(o.closed, nullptr);
    return *this;
  }
  ~Token() {
    if (closed) closed->fetch_add(1);
  }
  uint64_t id;
  std::atomic<int>* closed;
};

Parked<Token> Park(uint64_t id, std::atomic<int>* closed) {
  return Parked<Token>{Token(id, closed), SlotMeta{}, TimePoint{}};
}

TEST(Reservoir, AdmissionBoundsTheQueueAndIsFreedByPopAndCancel) {
  std::atomic<int> closed{0};
  Reservoir<Token> r(3);
  EXPECT_TRUE(r.TryAdmit());
  EXPECT_TRUE(r.TryAdmit());
  EXPECT_TRUE(r.TryAdmit());
  EXPECT_FALSE(r.TryAdmit());  // full before anything is detached
  r.Push(Park(1, &closed));
  r.Push(Park(2, &closed));
  r.CancelAdmit();  // the third detach failed
  EXPECT_EQ(r.admitted(), 2u);
  EXPECT_EQ(r.parked(), 2u);
  EXPECT_EQ(r.Pop()->detached.id, 1u);  // FIFO: oldest first
  EXPECT_EQ(r.admitted(), 1u);
  EXPECT_EQ(r.Clear(), 1u);
  EXPECT_EQ(closed.load(), 2);  // popped one + cleared one, each closed once
  EXPECT_FALSE(r.Pop().has_value());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(r.TryAdmit());
}

TEST(Reservoir, CapacityNotAPowerOfTwoStillNeverOverflows) {
  std::atomic<int> closed{0};
  Reservoir<Token> r(5);  // array of 8, admission of 5
  for (uint64_t round = 0; round < 100; ++round) {
    for (uint64_t i = 0; i < 5; ++i) {
      ASSERT_TRUE(r.TryAdmit());
      r.Push(Park(round * 5 + i, &closed));
    }
    ASSERT_FALSE(r.TryAdmit());
    for (uint64_t i = 0; i < 5; ++i) ASSERT_EQ(r.Pop()->detached.id, round * 5 + i);
  }
  EXPECT_EQ(closed.load(), 500);
}

// Random single-threaded operation sequences give identical results on
// both implementations.
TEST(Reservoir, DifferentialAgainstTheMutexTwin) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    std::mt19937_64 rng(seed);
    size_t cap = 1 + rng() % 6;
    std::atomic<int> closed_a{0}, closed_b{0};
    Reservoir<Token> a(cap);
    MutexReservoir<Token> b(cap);
    int pending_a = 0, pending_b = 0;  // admitted, not yet pushed
    uint64_t next = 0;
    for (int step = 0; step < 500; ++step) {
      switch (rng() % 5) {
        case 0: {
          bool x = a.TryAdmit(), y = b.TryAdmit();
          ASSERT_EQ(x, y) << "seed " << seed << " step " << step;
          pending_a += x;
          pending_b += y;
          break;
        }
        case 1:
          if (pending_a > 0) {
            a.Push(Park(next, &closed_a));
            b.Push(Park(next, &closed_b));
            ++next;
            --pending_a;
            --pending_b;
          }
          break;
        case 2:
          if (pending_a > 0) {
            a.CancelAdmit();
            b.CancelAdmit();
            --pending_a;
            --pending_b;
          }
          break;
        case 3: {
          auto x = a.Pop();
          auto y = b.Pop();
          ASSERT_EQ(x.has_value(), y.has_value());
          if (x) {
            ASSERT_EQ(x->detached.id, y->detached.id);
          }
          break;
        }
        case 4:
          if (rng() % 8 == 0) {
            ASSERT_EQ(a.Clear(), b.Clear());
          }
          break;
      }
      ASSERT_EQ(a.admitted(), b.admitted());
      ASSERT_EQ(a.parked(), b.parked());
    }
    for (; pending_a > 0; --pending_a) {
      a.CancelAdmit();
      b.CancelAdmit();
    }
    ASSERT_EQ(a.Clear(), b.Clear());
    ASSERT_EQ(closed_a.load(), closed_b.load());
    ASSERT_EQ(static_cast<uint64_t>(closed_a.load()), next);
  }
}

template <typename R>
void ConcurrentProducersAndConsumers() {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  std::atomic<int> closed{0};
  R r(8);
  std::vector<std::atomic<int>> seen(kThreads * kPerThread);
  std::atomic<int> consumed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      int produced = 0;
      while (produced < kPerThread || consumed.load() < kThreads * kPerThread) {
        if (produced < kPerThread && r.TryAdmit()) {
          ASSERT_LE(r.admitted(), r.capacity());
          r.Push(Park(uint64_t(t) * kPerThread + produced, &closed));
          ++produced;
        }
        if (auto p = r.Pop()) {
          seen[p->detached.id].fetch_add(1);
          consumed.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (auto& s : seen) ASSERT_EQ(s.load(), 1);  // each exactly once
  EXPECT_EQ(r.admitted(), 0u);
  EXPECT_EQ(r.parked(), 0u);
  EXPECT_EQ(closed.load(), kThreads * kPerThread);
}

TEST(ReservoirConcurrent, LockFreeLosesAndDuplicatesNothing) {
  ConcurrentProducersAndConsumers<Reservoir<Token>>();
}

TEST(ReservoirConcurrent, MutexTwinLosesAndDuplicatesNothing) {
  ConcurrentProducersAndConsumers<MutexReservoir<Token>>();
}

}  // namespace
}  // namespace ringrpc::pool
