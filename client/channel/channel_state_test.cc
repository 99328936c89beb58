// The channel core's pure parts: the wall-clock deadline conversion.
#include "client/channel/channel_state.h"

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

}  // namespace
}  // namespace ringrpc::channel
