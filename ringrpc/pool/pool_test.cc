// Behaviour of the pool on one or more simulated threads with a fake clock.
#include "ringrpc/pool/pool.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "ringrpc/pool/mutex_reservoir.h"
#include "ringrpc/pool/observer.h"
#include "ringrpc/pool/reservoir.h"
#include "ringrpc/pool/testing/fake_manager.h"
#include "ringrpc/pool/testing/fake_runtime.h"
#include "ringrpc/pool/testing/harness.h"

namespace ringrpc::pool {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::AcquireResult;
using testing::AcquireTask;
using testing::CheckConservation;
using testing::FakeDetached;
using testing::FakeLease;
using testing::FakeManager;
using testing::FakePool;
using testing::FakeThread;
using ::testing::HasSubstr;
using testing::Started;

class PoolTest : public ::testing::Test {
 protected:
  FakePool Make(PoolConfig config, std::shared_ptr<Exchange<FakeDetached>> exchange = nullptr) {
    config.lifetime_jitter = 0;
    absl::StatusOr<FakePool> p = FakePool::Create(config, m_, exchange);
    EXPECT_TRUE(p.ok()) << p.status();
    return *p;
  }

  // Starts an acquire on `t`; it runs until it completes or suspends.
  Started<AcquireResult> Start(FakePool& pool, FakeThread& t) { return t.Start(AcquireTask(pool)); }

  // Acquires on `t`, which must complete without the clock moving.
  FakeLease Acquire(FakePool& pool, FakeThread& t) {
    Started<AcquireResult> op = Start(pool, t);
    t.RunReady();
    EXPECT_TRUE(op.done());
    if (!op.done()) return FakeLease();
    EXPECT_TRUE(op.result().ok()) << op.result().status();
    return std::move(*op.result());
  }

  ShardState State(FakePool& pool, FakeThread& t) {
    return t.Run([&] { return pool.ShardStateForTest(); });
  }

  void CheckAll(FakePool& pool, FakeThread& t) {
    EXPECT_TRUE(t.Run([&] { return pool.CheckShardInvariantsForTest(); }).ok());
    EXPECT_TRUE(CheckConservation(pool, *m_).ok()) << CheckConservation(pool, *m_);
  }

  std::shared_ptr<FakeManager> m_ = std::make_shared<FakeManager>();
  FakeThread t_;
  // Leases end in t_'s context (the owner-thread check) because this scope
  // is entered before any lease exists and left after they all die.
  ThreadContext::Scope scope_{&t_.context()};
};

TEST_F(PoolTest, CreateRejectsBadConfigWithAClearError) {
  PoolConfig c;
  c.max_size = 0;
  absl::StatusOr<FakePool> p = FakePool::Create(c, m_);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(p.status().message(), HasSubstr("max_size must be >= 1, got 0"));
  EXPECT_EQ(FakePool::Create(PoolConfig{}, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(PoolTest, FirstAcquireDialsAndReturnReusesTheSameConnection) {
  FakePool pool = Make(PoolConfig{});
  uint64_t first;
  {
    FakeLease a = Acquire(pool, t_);
    first = a->id;
    EXPECT_EQ(State(pool, t_), (ShardState{.size = 1, .connections = 1, .leases = 1}));
  }
  EXPECT_EQ(State(pool, t_), (ShardState{.size = 1, .connections = 1, .idle = 1, .available = 1}));
  FakeLease b = Acquire(pool, t_);
  EXPECT_EQ(b->id, first);
  EXPECT_EQ(b.uses(), 2u);
  PoolMetrics x = pool.Metrics();
  EXPECT_EQ(x.created, 1u);
  EXPECT_EQ(x.acquires, 2u);
  EXPECT_EQ(x.live, 1u);
  CheckAll(pool, t_);
}

TEST_F(PoolTest, CheckoutIsLifoWarmestFirst) {
  FakePool pool = Make(PoolConfig{});
  FakeLease a = Acquire(pool, t_);
  FakeLease b = Acquire(pool, t_);
  uint64_t b_id = b->id;
  a.Release();
  b.Release();  // b is now the warmest
  FakeLease c = Acquire(pool, t_);
  EXPECT_EQ(c->id, b_id);
}

TEST_F(PoolTest, LeasesShareAConnectionUpToItsCapacity) {
  PoolConfig c;
  c.max_size = 2;
  c.max_leases_per_connection = 3;
  FakePool pool = Make(c);
  std::vector<FakeLease> leases;
  for (int i = 0; i < 4; ++i) leases.push_back(Acquire(pool, t_));
  EXPECT_EQ(leases[0]->id, leases[1]->id);
  EXPECT_EQ(leases[0]->id, leases[2]->id);
  EXPECT_NE(leases[0]->id, leases[3]->id);
  EXPECT_EQ(State(pool, t_),
            (ShardState{.size = 2, .connections = 2, .available = 1, .leases = 4}));
  // One lease back: the first connection has room again and is reused
  // before anything else.
  uint64_t first = leases[1]->id;
  leases[1].Release();
  FakeLease again = Acquire(pool, t_);
  EXPECT_EQ(again->id, first);
  CheckAll(pool, t_);
}

TEST_F(PoolTest, ManagerCapacityLowersTheLeaseCap) {
  PoolConfig c;
  c.max_size = 4;
  c.max_leases_per_connection = 100;
  m_->capacity = 2;
  FakePool pool = Make(c);
  FakeLease a = Acquire(pool, t_), b = Acquire(pool, t_), d = Acquire(pool, t_);
  EXPECT_EQ(a->id, b->id);
  EXPECT_NE(a->id, d->id);
  EXPECT_EQ(pool.Metrics().created, 2u);
}

TEST_F(PoolTest, AtMaxSizeWaitersAreServedInArrivalOrder) {
  PoolConfig c;
  c.max_size = 1;
  FakePool pool = Make(c);
  FakeLease held = Acquire(pool, t_);
  uint64_t id = held->id;
  Started<AcquireResult> w1 = Start(pool, t_);
  Started<AcquireResult> w2 = Start(pool, t_);
  t_.RunReady();
  EXPECT_FALSE(w1.done());
  EXPECT_FALSE(w2.done());
  EXPECT_EQ(State(pool, t_).waiters, 2u);
  EXPECT_EQ(pool.Metrics().waits, 2u);

  held.Release();  // handed to w1 directly, not to the free list
  EXPECT_EQ(State(pool, t_),
            (ShardState{.size = 1, .connections = 1, .leases = 1, .waiters = 1, .granted = 1}));
  // A newcomer cannot overtake the waiters.
  EXPECT_EQ(pool.TryAcquire().status().code(), absl::StatusCode::kResourceExhausted);
  t_.RunReady();
  ASSERT_TRUE(w1.done());
  ASSERT_TRUE(w1.result().ok());
  EXPECT_EQ((*w1.result())->id, id);
  EXPECT_FALSE(w2.done());
  w1.result()->Release();
  t_.RunReady();
  ASSERT_TRUE(w2.done());
  EXPECT_EQ((*w2.result())->id, id);
  EXPECT_EQ(pool.Metrics().created, 1u);
  w2.result()->Release();
  CheckAll(pool, t_);
}

TEST_F(PoolTest, ConnectFailureReturnsTheManagersErrorAndRefundsBudget) {
  FakePool pool = Make(PoolConfig{});
  m_->fail_connects = 1;
  Started<AcquireResult> op = Start(pool, t_);
  ASSERT_TRUE(op.done());
  EXPECT_EQ(op.result().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(op.result().status().message(), HasSubstr("refused"));
  EXPECT_EQ(State(pool, t_), ShardState{});
  EXPECT_EQ(pool.Metrics().connect_failures, 1u);
  CheckAll(pool, t_);
}

TEST_F(PoolTest, AcquireTimeoutSaysDeadlineExceededWithoutAConnectError) {
  PoolConfig c;
  c.max_size = 1;
  c.acquire_timeout = milliseconds(100);
  FakePool pool = Make(c);
  FakeLease held = Acquire(pool, t_);
  Started<AcquireResult> op = Start(pool, t_);
  t_.AdvanceBy(milliseconds(99));
  EXPECT_FALSE(op.done());
  t_.AdvanceBy(milliseconds(1));
  ASSERT_TRUE(op.done());
  EXPECT_EQ(op.result().status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(op.result().status().message(), HasSubstr("timed out after 100ms"));
  EXPECT_EQ(pool.Metrics().timeouts, 1u);
  EXPECT_EQ(State(pool, t_), (ShardState{.size = 1, .connections = 1, .leases = 1}));
  CheckAll(pool, t_);
}

TEST_F(PoolTest, AcquireTimeoutCarriesTheLastConnectError) {
  PoolConfig c;
  c.max_size = 2;
  c.acquire_timeout = milliseconds(50);
  FakePool pool = Make(c);
  FakeLease held = Acquire(pool, t_);
  m_->fail_connects = 1;
  Started<AcquireResult> failed = Start(pool, t_);
  ASSERT_TRUE(failed.done());
  ASSERT_FALSE(failed.result().ok());
  // Now the second connection dials slowly and the acquire times out.
  m_->connect_latency = seconds(1);
  Started<AcquireResult> op = Start(pool, t_);
  t_.AdvanceBy(milliseconds(50));
  ASSERT_TRUE(op.done());
  EXPECT_EQ(op.result().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(op.result().status().message(),
              HasSubstr("last connect error: UNAVAILABLE: fake connect #2 refused"));
  // The cancelled dial gave its budget back.
  EXPECT_EQ(State(pool, t_), (ShardState{.size = 1, .connections = 1, .leases = 1}));
  CheckAll(pool, t_);
}

TEST_F(PoolTest, InvalidateRetiresLeasedOnReturnAndIdleOnCheckout) {
  PoolConfig c;
  c.max_size = 2;
  FakePool pool = Make(c);
  FakeLease a = Acquire(pool, t_);
  FakeLease b = Acquire(pool, t_);
  uint64_t b_id = b->id;
  b.Release();
  pool.Invalidate();
  a.Release();  // leased across the bump: destroyed on return
  EXPECT_EQ(pool.Metrics().retired[size_t(RetireReason::kGeneration)], 1u);
  FakeLease d = Acquire(pool, t_);  // b is stale: destroyed, a new one dialled
  EXPECT_NE(d->id, b_id);
  PoolMetrics x = pool.Metrics();
  EXPECT_EQ(x.retired[size_t(RetireReason::kGeneration)], 2u);
  EXPECT_EQ(x.created, 3u);
  EXPECT_FALSE(m_->IsOpen(b_id));
  CheckAll(pool, t_);
}

TEST_F(PoolTest, MaxUsesRetiresAfterThatManyLeases) {
  PoolConfig c;
  c.max_uses = 2;
  FakePool pool = Make(c);
  uint64_t id = Acquire(pool, t_)->id;
  EXPECT_EQ(Acquire(pool, t_)->id, id);  // second use, retired on return
  EXPECT_FALSE(m_->IsOpen(id));
  EXPECT_NE(Acquire(pool, t_)->id, id);
  EXPECT_EQ(pool.Metrics().retired[size_t(RetireReason::kMaxUses)], 1u);
  CheckAll(pool, t_);
}

TEST_F(PoolTest, ReaperRetiresIdleConnectionsWithoutAnyCheckout) {
  PoolConfig c;
  c.idle_timeout = seconds(10);
  c.reap_interval = seconds(1);
  FakePool pool = Make(c);
  uint64_t id = Acquire(pool, t_)->id;
  t_.AdvanceBy(seconds(9));
  EXPECT_TRUE(m_->IsOpen(id));
  t_.AdvanceBy(seconds(1));  // the tick at 10 s sees it idle for 10 s
  EXPECT_FALSE(m_->IsOpen(id));
  EXPECT_EQ(pool.Metrics().retired[size_t(RetireReason::kIdleTimeout)], 1u);
  EXPECT_EQ(State(pool, t_), ShardState{});
  CheckAll(pool, t_);
}

TEST_F(PoolTest, MaxLifetimeRetiresALeasedConnectionOnItsReturn) {
  PoolConfig c;
  c.max_lifetime = seconds(30);
  c.reap_interval = seconds(100);
  FakePool pool = Make(c);
  FakeLease a = Acquire(pool, t_);
  uint64_t id = a->id;
  t_.AdvanceBy(seconds(31));
  EXPECT_TRUE(m_->IsOpen(id));  // in use: not interrupted
  a.Release();
  EXPECT_FALSE(m_->IsOpen(id));
  EXPECT_EQ(pool.Metrics().retired[size_t(RetireReason::kMaxLifetime)], 1u);
  CheckAll(pool, t_);
}

TEST_F(PoolTest, JitterShortensLimitsSoConnectionsDoNotRetireTogether) {
  PoolConfig c;
  c.max_size = 20;
  c.max_lifetime = seconds(100);
  c.lifetime_jitter = 0.1;
  c.reap_interval = milliseconds(500);
  absl::StatusOr<FakePool> p = FakePool::Create(c, m_);
  ASSERT_TRUE(p.ok());
  std::vector<FakeLease> leases;
  for (int i = 0; i < 20; ++i) leases.push_back(Acquire(*p, t_));
  leases.clear();
  t_.AdvanceBy(seconds(90) - milliseconds(1));
  EXPECT_EQ(m_->open(), 20u);  // nothing retires before 90% of the limit
  t_.AdvanceBy(seconds(5));
  size_t at_95 = m_->open();
  EXPECT_GT(at_95, 0u);
  EXPECT_LT(at_95, 20u);  // spread out, not all at once
  t_.AdvanceBy(seconds(6));
  EXPECT_EQ(m_->open(), 0u);  // never later than the limit (plus a tick)
}

TEST_F(PoolTest, ReaperRefillsToMinIdleButNotWhileAWaiterIsParked) {
  PoolConfig c;
  c.max_size = 3;
  c.min_idle = 2;
  c.reap_interval = seconds(1);
  FakePool pool = Make(c);
  (void)State(pool, t_);  // first touch makes the shard and its reaper
  t_.AdvanceBy(seconds(1));
  EXPECT_EQ(State(pool, t_), (ShardState{.size = 2, .connections = 2, .idle = 2, .available = 2}));
  std::vector<FakeLease> leases;
  for (int i = 0; i < 3; ++i) leases.push_back(Acquire(pool, t_));
  Started<AcquireResult> waiter = Start(pool, t_);
  t_.AdvanceBy(seconds(3));
  EXPECT_EQ(pool.Metrics().created, 3u);  // no refill dial while it waits
  leases.clear();
  t_.RunReady();
  ASSERT_TRUE(waiter.done());
  waiter.result()->Release();
  CheckAll(pool, t_);
}

TEST_F(PoolTest, PoisonedConnectionIsDestroyedWhenItsLastLeaseEnds) {
  PoolConfig c;
  c.max_leases_per_connection = 2;
  FakePool pool = Make(c);
  FakeLease a = Acquire(pool, t_);
  FakeLease b = Acquire(pool, t_);
  uint64_t id = a->id;
  a.Poison();
  a.Release();
  EXPECT_TRUE(m_->IsOpen(id));  // b still uses it
  FakeLease d = Acquire(pool, t_);
  EXPECT_NE(d->id, id);  // but it gets no new lease
  b.Release();
  EXPECT_FALSE(m_->IsOpen(id));
  PoolMetrics x = pool.Metrics();
  EXPECT_EQ(x.poisoned, 1u);
  EXPECT_EQ(x.retired[size_t(RetireReason::kPoisoned)], 1u);
  CheckAll(pool, t_);
}

TEST_F(PoolTest, TakeHandsTheConnectionOutForGood) {
  PoolConfig c;
  c.max_leases_per_connection = 2;
  FakePool pool = Make(c);
  FakeLease a = Acquire(pool, t_);
  FakeLease b = Acquire(pool, t_);
  absl::StatusOr<testing::FakeConn> refused = a.Take();
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(static_cast<bool>(a));  // the lease is untouched
  b.Release();
  absl::StatusOr<testing::FakeConn> taken = a.Take();
  ASSERT_TRUE(taken.ok());
  EXPECT_FALSE(static_cast<bool>(a));
  EXPECT_EQ(State(pool, t_), ShardState{});
  EXPECT_EQ(pool.Metrics().taken, 1u);
  EXPECT_TRUE(CheckConservation(pool, *m_, /*taken_still_open=*/1).ok());
  m_->Disconnect(std::move(*taken));
}

TEST_F(PoolTest, CloseFailsAcquiresWakesWaitersAndDrains) {
  PoolConfig c;
  c.max_size = 2;
  FakePool pool = Make(c);
  FakeLease a = Acquire(pool, t_);
  FakeLease b = Acquire(pool, t_);
  uint64_t b_id = b->id;
  b.Release();
  Started<AcquireResult> w = Start(pool, t_);  // b is free: served at once
  ASSERT_TRUE(w.done());
  Started<AcquireResult> waiter = Start(pool, t_);
  EXPECT_FALSE(waiter.done());
  pool.Close();
  t_.RunReady();
  ASSERT_TRUE(waiter.done());
  EXPECT_EQ(waiter.result().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(waiter.result().status().message(), HasSubstr("closed"));
  EXPECT_EQ(pool.TryAcquire().status().code(), absl::StatusCode::kUnavailable);
  a.Release();
  w.result()->Release();
  EXPECT_FALSE(m_->IsOpen(b_id));
  EXPECT_EQ(m_->open(), 0u);
  EXPECT_EQ(pool.Metrics().retired[size_t(RetireReason::kPoolClosed)], 2u);
  CheckAll(pool, t_);
}

// A thread that outlives its pools (a channel per call on long-lived CQ
// threads) keeps none of their shards: a closed pool's shard goes once no
// lease, waiter or acquire uses it, and its counters stay in the metrics.
TEST_F(PoolTest, AClosedPoolsShardIsDestroyedOnceNothingOnItsThreadUsesIt) {
  FakePool keep = Make(PoolConfig{});
  FakeLease k = Acquire(keep, t_);
  PoolConfig c;
  c.max_size = 1;
  FakePool pool = Make(c);
  FakeLease a = Acquire(pool, t_);
  Started<AcquireResult> waiter = Start(pool, t_);  // max_size 1: waits
  ASSERT_FALSE(waiter.done());
  EXPECT_EQ(t_.context().shard_count(), 2u);
  pool.Close();
  t_.RunReady();  // the waiter ends UNAVAILABLE; `a` still holds the shard
  ASSERT_TRUE(waiter.done());
  EXPECT_EQ(waiter.result().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(t_.context().shard_count(), 2u);
  a.Release();
  EXPECT_EQ(t_.context().shard_count(), 2u);  // never inline: on the next turn
  t_.RunReady();
  EXPECT_EQ(t_.context().shard_count(), 1u);
  EXPECT_EQ(pool.Metrics().created, 1u);
  EXPECT_EQ(pool.Metrics().retired[size_t(RetireReason::kPoolClosed)], 1u);
  // A touch after the close makes a shard that goes the same way.
  EXPECT_EQ(t_.Run([&] { return pool.TryAcquire().status().code(); }),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(t_.context().shard_count(), 2u);
  t_.RunReady();
  EXPECT_EQ(t_.context().shard_count(), 1u);
  // The open pool's shard was never touched; the closed one left nothing.
  EXPECT_EQ(State(keep, t_), (ShardState{.size = 1, .connections = 1, .leases = 1}));
  EXPECT_EQ(pool.Metrics().live, 0u);
  EXPECT_EQ(pool.Metrics().leases, 0u);
}

TEST_F(PoolTest, RecycleFailureDestroysAndMovesOn) {
  PoolConfig c;
  c.max_size = 2;
  FakePool pool = Make(c);
  uint64_t id = Acquire(pool, t_)->id;
  m_->fail_recycles = 1;
  FakeLease a = Acquire(pool, t_);
  EXPECT_NE(a->id, id);
  EXPECT_FALSE(m_->IsOpen(id));
  PoolMetrics x = pool.Metrics();
  EXPECT_EQ(x.recycle_failures, 1u);
  EXPECT_EQ(x.retired[size_t(RetireReason::kRecycleFailed)], 1u);
  CheckAll(pool, t_);
}

TEST_F(PoolTest, EachThreadHasItsOwnShard) {
  FakeThread other;
  FakePool pool = Make(PoolConfig{});
  uint64_t here = Acquire(pool, t_)->id;
  FakeLease there = other.Run([&] { return Acquire(pool, other); });
  EXPECT_NE(there->id, here);  // never another thread's connection
  EXPECT_EQ(State(pool, other), (ShardState{.size = 1, .connections = 1, .leases = 1}));
  EXPECT_EQ(pool.Metrics().created, 2u);
  other.Run([&] { there.Release(); });
  EXPECT_TRUE(CheckConservation(pool, *m_).ok());
}

TEST_F(PoolTest, SeveralPoolsCoexistOnOneThread) {
  auto m2 = std::make_shared<FakeManager>();
  FakePool p1 = Make(PoolConfig{});
  FakePool p2 = *FakePool::Create(PoolConfig{}, m2);
  FakeLease a = Acquire(p1, t_);
  FakeLease b = Acquire(p2, t_);
  EXPECT_EQ(m_->open(), 1u);
  EXPECT_EQ(m2->open(), 1u);
  EXPECT_EQ(t_.context().shard_count(), 2u);
}

TEST_F(PoolTest, NoRuntimeAtMaxSizeFailsInsteadOfWaitingForever) {
  ThreadContext bare;  // a thread with no runtime
  ThreadContext::Scope scope(&bare);
  PoolConfig c;
  c.max_size = 1;
  FakePool pool = Make(c);
  Task<AcquireResult> t1 = AcquireTask(pool);
  t1.handle().resume();
  ASSERT_TRUE(t1.done());
  ASSERT_TRUE(t1.result().ok());
  Task<AcquireResult> t2 = AcquireTask(pool);
  t2.handle().resume();
  ASSERT_TRUE(t2.done());
  EXPECT_EQ(t2.result().status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(t2.result().status().message(), HasSubstr("no runtime"));
  t1.result()->Release();
  t2.Reset();
  t1.Reset();
}

// gRPC A105: one dial in flight per thread; a connection that comes back
// serves a queued call before the dial finishes, and the dial is not wasted.
TEST_F(PoolTest, ReturningConnectionServesAWaiterBeforeTheDialFinishes) {
  PoolConfig c;
  c.max_size = 3;
  c.max_concurrent_connects = 1;
  FakePool pool = Make(c);
  FakeLease a = Acquire(pool, t_);
  uint64_t a_id = a->id;
  m_->connect_latency = milliseconds(10);
  Started<AcquireResult> dialler = Start(pool, t_);  // dials
  Started<AcquireResult> queued = Start(pool, t_);   // one dial at a time
  EXPECT_EQ(State(pool, t_).waiters, 1u);
  a.Release();
  t_.RunReady();
  ASSERT_TRUE(queued.done());
  EXPECT_EQ((*queued.result())->id, a_id);
  EXPECT_FALSE(dialler.done());
  t_.AdvanceBy(milliseconds(10));
  ASSERT_TRUE(dialler.done());
  EXPECT_NE((*dialler.result())->id, a_id);
  EXPECT_EQ(pool.Metrics().created, 2u);
  queued.result()->Release();
  dialler.result()->Release();
  CheckAll(pool, t_);
}

TEST_F(PoolTest, OneDialServesEveryQueuedCallItHasRoomFor) {
  PoolConfig c;
  c.max_size = 1;
  c.max_leases_per_connection = 100;
  m_->connect_latency = milliseconds(5);
  FakePool pool = Make(c);
  std::vector<Started<AcquireResult>> ops;
  for (int i = 0; i < 5; ++i) ops.push_back(Start(pool, t_));
  t_.AdvanceBy(milliseconds(5));
  t_.RunReady();
  for (auto& op : ops) {
    ASSERT_TRUE(op.done());
    ASSERT_TRUE(op.result().ok()) << op.result().status();
    EXPECT_EQ((*op.result())->id, 1u);
  }
  EXPECT_EQ(m_->connects_started(), 1u);
  EXPECT_EQ(State(pool, t_),
            (ShardState{.size = 1, .connections = 1, .available = 1, .leases = 5}));
  for (auto& op : ops) op.result()->Release();
  CheckAll(pool, t_);
}

struct RecordingObserver : PoolObserver {
  std::vector<std::pair<PoolEventKind, RetireReason>> events;
  void OnPoolEvent(const PoolEvent& e) override { events.emplace_back(e.kind, e.reason); }
};

TEST_F(PoolTest, ObserverHearsEveryLifecycleEvent) {
  auto observer = std::make_shared<RecordingObserver>();
  PoolConfig c;
  c.observer = observer;
  FakePool pool = Make(c, std::make_shared<Reservoir<FakeDetached>>(2));
  FakeThread other;
  Acquire(pool, t_);                                  // connect, then parked on return
  other.Run([&] { Acquire(pool, other).Poison(); });  // unpark, poisoned
  m_->fail_connects = 1;
  Start(pool, t_);  // a failed dial
  using K = PoolEventKind;
  using R = RetireReason;
  EXPECT_EQ(observer->events, (std::vector<std::pair<K, R>>{{K::kConnect, R::kNone},
                                                            {K::kPark, R::kNone},
                                                            {K::kUnpark, R::kNone},
                                                            {K::kRetire, R::kPoisoned},
                                                            {K::kConnectFailed, R::kNone}}));
}

// ---- the exchange -----------------------------------------------------------

class ExchangeTest : public PoolTest, public ::testing::WithParamInterface<bool> {
 protected:
  std::shared_ptr<Exchange<FakeDetached>> NewExchange(size_t capacity) {
    if (GetParam()) {
      return std::make_shared<Reservoir<FakeDetached>>(capacity);
    }
    return std::make_shared<MutexReservoir<FakeDetached>>(capacity);
  }
};

TEST_P(ExchangeTest, IdleConnectionMovesToAThreadThatNeedsOne) {
  auto ex = NewExchange(4);
  FakePool pool = Make(PoolConfig{}, ex);
  FakeThread other;
  uint64_t id = Acquire(pool, t_)->id;  // returned with idle > min_idle: parked
  EXPECT_EQ(State(pool, t_), ShardState{});
  EXPECT_EQ(ex->parked(), 1u);
  FakeLease there = other.Run([&] { return Acquire(pool, other); });
  EXPECT_EQ(there->id, id);  // attached, not dialled
  PoolMetrics x = pool.Metrics();
  EXPECT_EQ(x.created, 1u);
  EXPECT_EQ(x.parks, 1u);
  EXPECT_EQ(x.unparked, 1u);
  EXPECT_EQ(ex->admitted(), 0u);
  other.Run([&] { there.Release(); });
  EXPECT_TRUE(CheckConservation(pool, *m_).ok()) << CheckConservation(pool, *m_);
}

TEST_P(ExchangeTest, MinIdleConnectionsStayHome) {
  auto ex = NewExchange(4);
  PoolConfig c;
  c.min_idle = 1;
  c.reap_interval = seconds(1000);
  FakePool pool = Make(c, ex);
  Acquire(pool, t_);
  EXPECT_EQ(ex->parked(), 0u);
  EXPECT_EQ(State(pool, t_).idle, 1u);
}

TEST_P(ExchangeTest, FullExchangeRefusesAndTheConnectionStaysLocal) {
  auto ex = NewExchange(1);
  PoolConfig c;
  c.max_size = 2;
  FakePool pool = Make(c, ex);
  FakeLease a = Acquire(pool, t_);
  FakeLease b = Acquire(pool, t_);
  a.Release();  // parked
  b.Release();  // refused: stays
  EXPECT_EQ(ex->parked(), 1u);
  EXPECT_EQ(State(pool, t_), (ShardState{.size = 1, .connections = 1, .idle = 1, .available = 1}));
  CheckAll(pool, t_);
}

TEST_P(ExchangeTest, FailedDetachDestroysAndCountsAndFreesTheClaim) {
  auto ex = NewExchange(1);
  FakePool pool = Make(PoolConfig{}, ex);
  m_->fail_detaches = 1;
  Acquire(pool, t_);
  EXPECT_EQ(ex->admitted(), 0u);
  EXPECT_EQ(pool.Metrics().retired[size_t(RetireReason::kDetachFailed)], 1u);
  Acquire(pool, t_);  // the claim was freed: this one parks
  EXPECT_EQ(ex->parked(), 1u);
  CheckAll(pool, t_);
}

TEST_P(ExchangeTest, ParkedTooLongIsDestroyedNotAttached) {
  auto ex = NewExchange(4);
  PoolConfig c;
  c.max_park_time = seconds(5);
  FakePool pool = Make(c, ex);
  uint64_t id = Acquire(pool, t_)->id;
  t_.AdvanceBy(seconds(5));
  FakeLease a = Acquire(pool, t_);
  EXPECT_NE(a->id, id);
  EXPECT_FALSE(m_->IsOpen(id));
  EXPECT_EQ(pool.Metrics().retired[size_t(RetireReason::kParkTimeout)], 1u);
  CheckAll(pool, t_);
}

TEST_P(ExchangeTest, ReaperParksIdleConnectionsOnceTheManagerSaysTheyAreReady) {
  auto ex = NewExchange(4);
  PoolConfig c;
  c.max_size = 2;
  c.reap_interval = seconds(1);
  FakePool pool = Make(c, ex);
  m_->not_parkable = 3;  // both returns and the first reaper pass: "not yet"
  {
    FakeLease a = Acquire(pool, t_);
    FakeLease b = Acquire(pool, t_);
  }
  EXPECT_EQ(ex->parked(), 0u);
  EXPECT_EQ(State(pool, t_).idle, 2u);
  t_.AdvanceBy(seconds(1));  // first pass: one refused, the other parked
  EXPECT_EQ(ex->parked(), 1u);
  t_.AdvanceBy(seconds(1));  // second pass: the rest
  EXPECT_EQ(ex->parked(), 2u);
  EXPECT_EQ(State(pool, t_), ShardState{});
  EXPECT_EQ(m_->parkable_asked(), 5u);
  EXPECT_EQ(m_->quiesce_asked(), 1u) << "only the reaper nudges, only the refused one";
  EXPECT_EQ(pool.Metrics().parks, 2u);
  CheckAll(pool, t_);
}

TEST_P(ExchangeTest, ReaperParksDownToMinIdle) {
  auto ex = NewExchange(4);
  PoolConfig c;
  c.max_size = 3;
  c.min_idle = 1;
  FakePool pool = Make(c, ex);
  m_->not_parkable = 3;
  {
    FakeLease a = Acquire(pool, t_);
    FakeLease b = Acquire(pool, t_);
    FakeLease d = Acquire(pool, t_);
  }
  t_.AdvanceBy(seconds(1));
  EXPECT_EQ(ex->parked(), 2u);
  EXPECT_EQ(State(pool, t_).idle, 1u) << "min_idle stays home";
  CheckAll(pool, t_);
}

TEST_P(ExchangeTest, FailedAttachFallsThroughToADial) {
  auto ex = NewExchange(4);
  FakePool pool = Make(PoolConfig{}, ex);
  uint64_t id = Acquire(pool, t_)->id;
  m_->fail_attaches = 1;
  FakeLease a = Acquire(pool, t_);
  EXPECT_NE(a->id, id);
  PoolMetrics x = pool.Metrics();
  EXPECT_EQ(x.retired[size_t(RetireReason::kAttachFailed)], 1u);
  EXPECT_EQ(x.created, 2u);
  CheckAll(pool, t_);
}

TEST_P(ExchangeTest, InvalidateAndCloseClearTheExchange) {
  auto ex = NewExchange(4);
  PoolConfig c;
  c.max_size = 2;
  FakePool pool = Make(c, ex);
  {
    FakeLease a = Acquire(pool, t_);
    FakeLease b = Acquire(pool, t_);
  }
  EXPECT_EQ(ex->parked(), 2u);
  pool.Invalidate();
  EXPECT_EQ(ex->parked(), 0u);
  EXPECT_EQ(pool.Metrics().cleared, 2u);
  EXPECT_EQ(m_->open(), 0u);
  Acquire(pool, t_);
  pool.Close();
  EXPECT_EQ(pool.Metrics().cleared, 3u);
  CheckAll(pool, t_);
}

INSTANTIATE_TEST_SUITE_P(LockFreeAndMutex, ExchangeTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "LockFree" : "Mutex"; });

}  // namespace
}  // namespace ringrpc::pool
