// ringrpc/base/time.h — the clock every layer of ringrpc measures time with.
//
// One monotonic clock (std::chrono::steady_clock) and its point and duration
// types; CoarseNow() for a thread with no event loop (pool checkouts outside
// a CQ thread), where a few milliseconds of resolution are plenty.
//
// Threading: any thread.
//
//   TimePoint deadline = Clock::now() + std::chrono::seconds(1);
//   Duration left = deadline - CoarseNow();
#ifndef RINGRPC_BASE_TIME_H_
#define RINGRPC_BASE_TIME_H_

#include <chrono>

namespace ringrpc {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = Clock::duration;

// The time on a thread with no Runtime: CLOCK_MONOTONIC_COARSE (steady
// clock's epoch, a few ms resolution, a few ns to read instead of ~25 ns),
// plenty for idle and lifetime limits measured in seconds.
TimePoint CoarseNow();

}  // namespace ringrpc

#endif  // RINGRPC_BASE_TIME_H_
