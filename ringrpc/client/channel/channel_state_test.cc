// The channel core's pure parts: the wall-clock deadline conversion, when
// a channel goes idle, its event counters' text; and its per-thread state,
// which debug builds keep to its own CQ thread.
#include "ringrpc/client/channel/channel_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ringrpc/client/channel/channel_counters.h"
#include "ringrpc/client/channel/idle_policy.h"

namespace ringrpc::channel {
namespace {

using SysClock = std::chrono::system_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

TEST(ToLoopTime, SaturatesAtBothEndsOfTime) {
  const TimePoint now = Clock::now();
  // At or before now: now (the call ends DEADLINE_EXCEEDED at once), never
  // an overflow into the far future.
  EXPECT_EQ(ToLoopTime(SysClock::time_point::min(), now), now);
  EXPECT_EQ(ToLoopTime(SysClock::time_point(), now), now);
  EXPECT_EQ(ToLoopTime(SysClock::now() - seconds(5), now), now);
  // More than a year ahead: no deadline.
  EXPECT_EQ(ToLoopTime(SysClock::time_point::max(), now), TimePoint::max());
  EXPECT_EQ(ToLoopTime(SysClock::now() + std::chrono::hours(24 * 400), now), TimePoint::max());
  // In between: the same distance from `now`.
  TimePoint in5 = ToLoopTime(SysClock::now() + seconds(5), now);
  EXPECT_GT(in5, now + seconds(4));
  EXPECT_LE(in5, now + seconds(5));
}

TEST(IdlePolicy, QuietForTheTimeoutGoesIdle) {
  const TimePoint t0 = TimePoint() + seconds(100);
  IdlePolicy idle(milliseconds(100), t0);
  EXPECT_EQ(idle.every(), milliseconds(25));
  // The first look starts the quiet, whatever the counts.
  EXPECT_FALSE(idle.Look(7, 0, false, t0 + milliseconds(25)));
  EXPECT_FALSE(idle.Look(7, 0, false, t0 + milliseconds(120)));
  EXPECT_TRUE(idle.Look(7, 0, false, t0 + milliseconds(125)));
  // Idle already: not again until a call came.
  EXPECT_FALSE(idle.Look(7, 0, true, t0 + milliseconds(150)));
  EXPECT_FALSE(idle.Look(8, 0, false, t0 + milliseconds(175)));  // a call: quiet again from here
  EXPECT_FALSE(idle.Look(8, 0, false, t0 + milliseconds(250)));
  EXPECT_TRUE(idle.Look(8, 0, false, t0 + milliseconds(275)));
}

TEST(IdlePolicy, AHeldLeaseIsNeverQuiet) {
  const TimePoint t0 = TimePoint() + seconds(100);
  IdlePolicy idle(milliseconds(100), t0);
  // One long call (a stream) takes no new lease but holds one.
  for (int i = 1; i <= 20; ++i) EXPECT_FALSE(idle.Look(1, 1, false, t0 + i * milliseconds(25)));
  EXPECT_FALSE(idle.Look(1, 0, false, t0 + milliseconds(525)));  // it ended: quiet from here
  EXPECT_TRUE(idle.Look(1, 0, false, t0 + milliseconds(625)));
  // A tiny timeout still looks at most every 5 ms.
  EXPECT_EQ(IdlePolicy(milliseconds(1), t0).every(), milliseconds(5));
}

TEST(ChannelCounters, EachCountsAloneAndPrintsAsAPrometheusCounter) {
  ChannelCounters c;
  c.Count(ChannelCounter::kRetries);
  c.Count(ChannelCounter::kRetries);
  c.Count(ChannelCounter::kIdleEntries);
  EXPECT_EQ(c.value(ChannelCounter::kRetries), 2u);
  EXPECT_EQ(c.value(ChannelCounter::kHedges), 0u);
  std::string text;
  c.AppendPrometheus(&text);
  EXPECT_THAT(text, HasSubstr("# TYPE ringrpc_retries_total counter\nringrpc_retries_total 2\n"));
  EXPECT_THAT(text, HasSubstr("\nringrpc_channel_idle_entries_total 1\n"));
  EXPECT_THAT(text, HasSubstr("\nringrpc_hedged_attempts_total 0\n"));
  EXPECT_THAT(text, HasSubstr("# HELP ringrpc_transparent_retries_total Unary calls"));
}

// A CQ thread's view of the addresses (its pick, route, failover and
// least_request counts) is that thread's alone: a call from any other
// thread is a data race, which debug builds (ASAN's, TSAN's) stop at once.
TEST(ChannelStateDeathTest, PerThreadStateIsItsCqThreadsAlone) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::shared_ptr<ChannelState> st = ChannelState::Create(ChannelArguments());
  ASSERT_NE(st->cq(), nullptr);
  EXPECT_EQ(st->CurrentIndex(), std::nullopt);  // the test's thread is not a CQ thread
  EXPECT_DEBUG_DEATH((void)st->Pick(0), "RINGRPC_DCHECK failed: CurrentIndex.* == thread");
  const transport::Metadata none;
  EXPECT_DEBUG_DEATH((void)st->PickForCall(0, {.metadata = &none}), "CurrentIndex.* == thread");
}

}  // namespace
}  // namespace ringrpc::channel
