// The channel core's pure parts: the wall-clock deadline conversion; and
// its per-thread state, which debug builds keep to its own CQ thread.
#include "ringrpc/client/channel/channel_state.h"

#include <gtest/gtest.h>

namespace ringrpc::channel {
namespace {

using SysClock = std::chrono::system_clock;
using std::chrono::seconds;

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

// A CQ thread's view of the addresses (its pick, route, failover and
// least_request counts) is that thread's alone: a call from any other
// thread is a data race, which debug builds (ASAN's, TSAN's) stop at once.
TEST(ChannelStateDeathTest, PerThreadStateIsItsCqThreadsAlone) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::shared_ptr<ChannelState> st = ChannelState::Create(ChannelArguments());
  ASSERT_NE(st->cq(), nullptr);
  EXPECT_EQ(st->CurrentIndex(), std::nullopt);  // the test's thread is not a CQ thread
  EXPECT_DEBUG_DEATH((void)st->Pick(0), "RINGRPC_DCHECK failed: CurrentIndex.* == thread");
  EXPECT_DEBUG_DEATH((void)st->WhyNoPick(0), "CurrentIndex.* == thread");
}

}  // namespace
}  // namespace ringrpc::channel
