// Cancellation safety: destroying a suspended acquire at any await point
// leaves the shard exactly as if the acquire had never started (decision
// 0004). Each path of acquire is driven to each of its await points, then
// the awaiting coroutine is destroyed and the shard is compared whole.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ringrpc/pool/pool.h"
#include "ringrpc/pool/reservoir.h"
#include "ringrpc/pool/testing/fake_manager.h"
#include "ringrpc/pool/testing/fake_runtime.h"
#include "ringrpc/pool/testing/harness.h"

namespace ringrpc::pool {
namespace {

using std::chrono::milliseconds;
using testing::AcquireResult;
using testing::AcquireTask;
using testing::CheckConservation;
using testing::FakeDetached;
using testing::FakeLease;
using testing::FakeManager;
using testing::FakePool;
using testing::FakeThread;
using testing::Started;

// One acquire path: how to set the pool up so that the next acquire on
// `t` suspends at the await point named `where`.
struct Path {
  std::string where;
  PoolConfig config;
  bool exchange = false;
  // Runs on the test thread `home` (and may use `other`); returns leases to
  // hold during the cancelled acquire.
  std::function<std::vector<FakeLease>(FakePool&, FakeManager&, FakeThread& home,
                                       FakeThread& other)>
      setup;
};

FakeLease AcquireNow(FakePool& pool, FakeThread& t) {
  Started<AcquireResult> op = t.Start(AcquireTask(pool));
  t.RunReady();
  EXPECT_TRUE(op.done() && op.result().ok());
  return std::move(*op.result());
}

std::vector<Path> Paths() {
  std::vector<Path> paths;
  PoolConfig base;
  base.lifetime_jitter = 0;

  {
    Path p{"connect", base};
    p.setup = [](FakePool&, FakeManager& m, FakeThread&, FakeThread&) {
      m.connect_latency = milliseconds(10);
      return std::vector<FakeLease>{};
    };
    paths.push_back(p);
  }
  {
    Path p{"connect_with_timeout_armed", base};
    p.config.acquire_timeout = milliseconds(100);
    p.setup = [](FakePool&, FakeManager& m, FakeThread&, FakeThread&) {
      m.connect_latency = milliseconds(10);
      return std::vector<FakeLease>{};
    };
    paths.push_back(p);
  }
  {
    Path p{"recycle", base};
    p.setup = [](FakePool& pool, FakeManager& m, FakeThread& home, FakeThread&) {
      AcquireNow(pool, home);  // one idle connection to recycle
      m.recycle_latency = milliseconds(10);
      return std::vector<FakeLease>{};
    };
    paths.push_back(p);
  }
  {
    Path p{"attach", base, /*exchange=*/true};
    p.setup = [](FakePool& pool, FakeManager& m, FakeThread&, FakeThread& other) {
      // A connection dialled on `other` and parked for `home` to attach.
      other.Run([&] { AcquireNow(pool, other); });
      m.attach_latency = milliseconds(10);
      return std::vector<FakeLease>{};
    };
    paths.push_back(p);
  }
  {
    Path p{"wait", base};
    p.config.max_size = 1;
    p.setup = [](FakePool& pool, FakeManager&, FakeThread& home, FakeThread&) {
      std::vector<FakeLease> held;
      held.push_back(AcquireNow(pool, home));
      return held;
    };
    paths.push_back(p);
  }
  {
    Path p{"wait_for_a_dial_slot", base};
    p.config.max_size = 3;
    p.config.max_concurrent_connects = 1;
    p.setup = [](FakePool& pool, FakeManager& m, FakeThread& home, FakeThread&) {
      std::vector<FakeLease> held;
      held.push_back(AcquireNow(pool, home));
      m.connect_latency = milliseconds(10);
      return held;
    };
    paths.push_back(p);
  }
  return paths;
}

class CancellationTest : public ::testing::TestWithParam<Path> {};

TEST_P(CancellationTest, DestroyedAcquireLeavesTheShardAsIfNeverStarted) {
  const Path& path = GetParam();
  auto m = std::make_shared<FakeManager>();
  std::shared_ptr<Exchange<FakeDetached>> ex;
  if (path.exchange) ex = std::make_shared<Reservoir<FakeDetached>>(4);
  FakePool pool = *FakePool::Create(path.config, m, ex);
  FakeThread home, other;
  ThreadContext::Scope scope(&home.context());
  std::vector<FakeLease> held = path.setup(pool, *m, home, other);

  // In the "wait_for_a_dial_slot" path a first acquire holds the one dial
  // slot; the cancelled one waits behind it.
  Started<AcquireResult> dialler;
  if (path.where == "wait_for_a_dial_slot") {
    dialler = home.Start(AcquireTask(pool));
  }
  const ShardState before = home.Run([&] { return pool.ShardStateForTest(); });
  const uint64_t uses_before = pool.Metrics().acquires;
  const size_t timers_before = home.runtime().pending_timers();

  Started<AcquireResult> op = home.Start(AcquireTask(pool));
  home.RunReady();
  ASSERT_TRUE(op.running()) << path.where << ": the acquire did not suspend";
  EXPECT_NE(home.Run([&] { return pool.ShardStateForTest(); }), before)
      << path.where << ": suspended without touching the shard?";

  op.Cancel();
  home.RunReady();

  EXPECT_EQ(home.Run([&] { return pool.ShardStateForTest(); }), before) << path.where;
  EXPECT_TRUE(home.Run([&] { return pool.CheckShardInvariantsForTest(); }).ok());
  EXPECT_EQ(home.runtime().pending_timers(), timers_before) << path.where;
  EXPECT_EQ(pool.Metrics().acquires, uses_before) << path.where;
  EXPECT_EQ(pool.Metrics().timeouts, 0u);
  EXPECT_TRUE(CheckConservation(pool, *m).ok()) << CheckConservation(pool, *m);

  // And the shard still works: everything held comes back, an acquire
  // succeeds.
  if (dialler.running()) home.AdvanceBy(milliseconds(10));
  held.clear();
  m->connect_latency = m->recycle_latency = m->attach_latency = {};
  FakeLease again = AcquireNow(pool, home);
  EXPECT_TRUE(static_cast<bool>(again));
  again.Release();
  if (dialler.done() && dialler.result().ok()) dialler.result()->Release();
  EXPECT_TRUE(CheckConservation(pool, *m).ok()) << CheckConservation(pool, *m);
}

INSTANTIATE_TEST_SUITE_P(EveryAwaitPoint, CancellationTest, ::testing::ValuesIn(Paths()),
                         [](const auto& info) { return info.param.where; });

// A waiter that was handed a lease but destroyed before it resumed gives
// the lease back, uncounted, and the next waiter gets it.
TEST(Cancellation, GrantedButNotYetResumedWaiterGivesTheLeaseOn) {
  auto m = std::make_shared<FakeManager>();
  PoolConfig c;
  c.max_size = 1;
  FakePool pool = *FakePool::Create(c, m);
  FakeThread t;
  ThreadContext::Scope scope(&t.context());
  FakeLease held = AcquireNow(pool, t);
  uint64_t uses = held.uses();
  Started<AcquireResult> first = t.Start(AcquireTask(pool));
  Started<AcquireResult> second = t.Start(AcquireTask(pool));
  held.Release();  // granted to `first`, which has not run yet
  first.Cancel();
  t.RunReady();
  ASSERT_TRUE(second.done());
  ASSERT_TRUE(second.result().ok());
  EXPECT_EQ(second.result()->uses(), uses + 1);  // the cancelled grant uncounted
  second.result()->Release();
  EXPECT_EQ(pool.ShardStateForTest(),
            (ShardState{.size = 1, .connections = 1, .idle = 1, .available = 1}));
  EXPECT_TRUE(CheckConservation(pool, *m).ok());
}

// A waiter woken to dial (a dial slot came free) but destroyed before it
// resumed passes the wake on: the next waiter dials. Without that, a
// waiter with no deadline behind it waited for good (the race suite's
// call that never ended: a short-deadline call's dial and the next
// waiter's wait both ended in one loop pass).
TEST(Cancellation, WokenToDialButNotYetResumedWaiterPassesTheWakeOn) {
  auto m = std::make_shared<FakeManager>();
  m->connect_latency = milliseconds(10);
  PoolConfig c;
  c.max_size = 3;
  c.max_concurrent_connects = 1;
  FakePool pool = *FakePool::Create(c, m);
  FakeThread t;
  ThreadContext::Scope scope(&t.context());
  Started<AcquireResult> dialler = t.Start(AcquireTask(pool));
  Started<AcquireResult> first = t.Start(AcquireTask(pool));
  Started<AcquireResult> second = t.Start(AcquireTask(pool));
  t.RunReady();
  ASSERT_TRUE(dialler.running() && first.running() && second.running());
  dialler.Cancel();  // the dial slot comes free: `first` is woken to dial
  first.Cancel();    // ...and goes before it runs
  t.RunReady();
  t.AdvanceBy(milliseconds(10));
  ASSERT_TRUE(second.done()) << "the wake to dial was lost with `first`";
  ASSERT_TRUE(second.result().ok()) << second.result().status();
  second.result()->Release();
  EXPECT_TRUE(t.Run([&] { return pool.CheckShardInvariantsForTest(); }).ok());
  EXPECT_TRUE(CheckConservation(pool, *m).ok()) << CheckConservation(pool, *m);
}

// A dial cancelled by the acquire timeout refunds its budget; the error
// carries the cause.
TEST(Cancellation, TimeoutDuringConnectRefundsBudget) {
  auto m = std::make_shared<FakeManager>();
  m->connect_latency = milliseconds(500);
  PoolConfig c;
  c.acquire_timeout = milliseconds(20);
  FakePool pool = *FakePool::Create(c, m);
  FakeThread t;
  ThreadContext::Scope scope(&t.context());
  Started<AcquireResult> op = t.Start(AcquireTask(pool));
  t.AdvanceBy(milliseconds(20));
  ASSERT_TRUE(op.done());
  EXPECT_EQ(op.result().status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(pool.ShardStateForTest(), ShardState{});
  EXPECT_EQ(t.runtime().pending_timers(), 0u);
  EXPECT_EQ(m->connects_started(), 0u);  // the fake dial never finished
}

// The reaper's refill dial is cancelled when its thread's shards go.
TEST(Cancellation, ShardDestroyedDuringReaperDialLeaksNothing) {
  auto m = std::make_shared<FakeManager>();
  m->connect_latency = milliseconds(50);
  PoolConfig c;
  c.min_idle = 2;
  c.reap_interval = milliseconds(10);
  FakePool pool = *FakePool::Create(c, m);
  {
    FakeThread t;
    t.Run([&] { (void)pool.ShardStateForTest(); });
    t.AdvanceBy(milliseconds(70));  // one refill dial done, one in flight
    EXPECT_EQ(pool.Metrics().created, 1u);
    EXPECT_EQ(t.Run([&] { return pool.ShardStateForTest(); }).reserved, 1u);
  }  // the thread ends
  EXPECT_EQ(m->open(), 0u);
  PoolMetrics x = pool.Metrics();
  EXPECT_EQ(x.retired[size_t(RetireReason::kShardGone)], 1u);
  EXPECT_TRUE(x.Conserved()) << x.ToString();
}

}  // namespace
}  // namespace ringrpc::pool
