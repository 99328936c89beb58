#include "ringrpc/pool/retire.h"

#include <gtest/gtest.h>

#include <set>

#include "ringrpc/base/random.h"

namespace ringrpc::pool {
namespace {

using std::chrono::seconds;
const TimePoint kT0 = TimePoint{} + std::chrono::hours(5);

TEST(Retirement, FreshConnectionStays) {
  PoolConfig c;
  c.max_lifetime = seconds(60);
  c.idle_timeout = seconds(10);
  c.max_uses = 3;
  SlotMeta m = NewSlotMeta(c, kT0, 7, 1234);
  EXPECT_EQ(CheckRetirement(m, c, kT0, 7, true), RetireReason::kNone);
}

TEST(Retirement, EachReasonIsReportedForWhatItIs) {
  PoolConfig c;
  c.max_lifetime = seconds(60);
  c.idle_timeout = seconds(10);
  c.max_uses = 3;
  c.lifetime_jitter = 0;
  SlotMeta m = NewSlotMeta(c, kT0, 7, 0);
  EXPECT_EQ(CheckRetirement(m, c, kT0, 8, true), RetireReason::kGeneration);
  SlotMeta used = m;
  used.uses = 3;
  EXPECT_EQ(CheckRetirement(used, c, kT0, 7, false), RetireReason::kMaxUses);
  EXPECT_EQ(CheckRetirement(m, c, kT0 + seconds(60), 7, false), RetireReason::kMaxLifetime);
  EXPECT_EQ(CheckRetirement(m, c, kT0 + seconds(10), 7, true), RetireReason::kIdleTimeout);
  // Idle time only counts when the connection has no lease.
  EXPECT_EQ(CheckRetirement(m, c, kT0 + seconds(10), 7, false), RetireReason::kNone);
  EXPECT_EQ(CheckRetirement(m, c, kT0 + seconds(10) - std::chrono::nanoseconds(1), 7, true),
            RetireReason::kNone);
}

TEST(Retirement, GenerationTakesPrecedence) {
  PoolConfig c;
  c.max_lifetime = seconds(1);
  c.max_uses = 1;
  SlotMeta m = NewSlotMeta(c, kT0, 1, 0);
  m.uses = 5;
  EXPECT_EQ(CheckRetirement(m, c, kT0 + seconds(9), 2, true), RetireReason::kGeneration);
}

TEST(Retirement, JitterOnlyShortensAndSpreadsLimits) {
  PoolConfig c;
  c.max_lifetime = seconds(100);
  c.idle_timeout = seconds(50);
  c.lifetime_jitter = 0.1;
  uint64_t rng = 42;
  std::set<TimePoint::rep> expiries;
  for (int i = 0; i < 200; ++i) {
    SlotMeta m = NewSlotMeta(c, kT0, 0, NextRandom(rng));
    EXPECT_LE(m.expires_at, kT0 + seconds(100));
    EXPECT_GT(m.expires_at, kT0 + seconds(90));
    EXPECT_LE(m.idle_limit, seconds(50));
    EXPECT_GT(m.idle_limit, seconds(45));
    expiries.insert(m.expires_at.time_since_epoch().count());
  }
  EXPECT_GT(expiries.size(), 190u);
}

TEST(Retirement, NoLimitsMeansNeverByTime) {
  PoolConfig c;
  SlotMeta m = NewSlotMeta(c, kT0, 0, 99);
  EXPECT_EQ(m.expires_at, TimePoint::max());
  EXPECT_EQ(CheckRetirement(m, c, kT0 + std::chrono::hours(10000), 0, true), RetireReason::kNone);
}

TEST(Retirement, EveryReasonHasAName) {
  for (size_t i = 0; i < kRetireReasonCount; ++i) {
    EXPECT_NE(RetireReasonName(static_cast<RetireReason>(i)), "unknown") << i;
  }
}

}  // namespace
}  // namespace ringrpc::pool
