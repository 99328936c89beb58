// One round of a call's pick -> lease (pick_loop.h).
#include "ringrpc/client/internal/pick_loop.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ringrpc/base/mutex.h"
#include "ringrpc/client/internal/cancel_wake.h"
#include "ringrpc/client/runtime/loop_event.h"

namespace ringrpc::internal {
namespace {

Task<absl::StatusOr<SubchannelLease>> Acquire(channel::SubchannelPool p) {
  co_return co_await p.Acquire();
}

Step Fail(Attempt& a, Status s) {
  a.failure = std::move(s);
  return Step::kFail;
}

// When a wait inside the pick must end: at `t`, or at the deadline.
TimePoint WakeBy(const Attempt& a, TimePoint t) { return std::min(t, a.deadline); }

// Waits until `t` (WakeBy's bound), or until TryCancel, at once: a
// wait_for_ready call backing off for minutes still ends the moment it is
// cancelled (the caller's next Ended() says so).
Task<void> Pause(Attempt& a, TimePoint t) {
  co_await SleepUnlessCancelled(a.cancel, a.loop, WakeBy(a, t));
}

// The call may still start: not cancelled, deadline not passed.
std::optional<Status> Ended(Attempt& a) {
  {
    MutexLock lock(&a.cancel->mu);
    if (a.cancel->cancelled)
      return Status(StatusCode::CANCELLED, "cancelled before the call started");
  }
  if (a.loop.Now() < a.deadline) return std::nullopt;
  if (!a.st.resolved_once()) {
    // The wait was for the resolver, not for a connection: say which.
    return Status(StatusCode::DEADLINE_EXCEEDED,
                  "deadline exceeded before the target was resolved (the resolver has not "
                  "answered yet)");
  }
  return Status(StatusCode::DEADLINE_EXCEEDED,
                a.last.ok() ? std::string("deadline exceeded before a connection was ready")
                            : absl::StrCat("deadline exceeded waiting for a connection; last "
                                           "error: ",
                                           a.last.message()));
}

// The lease failed: another address, a wait (wait_for_ready) or the end.
Task<Step> OnLeaseFailed(Attempt& a, absl::Status error) {
  a.last = std::move(error);
  a.st.RequestReresolution();
  // The address just failed (its record is now TRANSIENT_FAILURE): like
  // gRPC's pickers, try another address before failing the call.
  if (a.repicks < kMaxRepicks && a.st.AnotherUsable(a.index, a.sc, a.group)) {
    ++a.repicks;
    co_return Step::kAgain;
  }
  if (!a.wait_for_ready || a.last.code() == absl::StatusCode::kFailedPrecondition) {
    co_return Fail(a, Status(StatusCode::UNAVAILABLE, std::string(a.last.message())));
  }
  // Wait for the address's backoff (shared by all threads) to allow a new
  // attempt, or a little while, within the deadline.
  TimePoint retry = std::max(a.sc->record->next_attempt(), a.loop.Now() + kMinLeaseRetryDelay);
  co_await Pause(a, retry);
  co_return Step::kAgain;
}

ChannelState::CallPickArgs PickArgs(const Attempt& a) {
  return {.method = a.method,
          .metadata = a.metadata,
          .wait_for_ready = a.wait_for_ready,
          .now = a.loop.Now()};  // the loop's time, as the backoff checks use
}

// The channel's pick applied to the call: kLeased, kNoLease (picked, no
// free stream at once), kAgain (pick again at once), kFail, or kNoAddress
// (queue until a change).
Step TakePick(Attempt& a, ChannelState::CallPick p) {
  a.resolved = p.resolved;
  // The route's limit on the call's length shortens its deadline (A31);
  // a later round's, counted from later, never lengthens it.
  if (p.max_duration) {
    const TimePoint now = a.loop.Now();
    const Duration limit = std::chrono::duration_cast<Duration>(*p.max_duration);
    if (a.deadline - now > limit) a.deadline = now + limit;
  }
  a.group = std::move(p.group);
  if (p.kind == ChannelState::CallPick::kPicked) {
    a.sc = std::move(p.sc);
    a.tracker = std::move(p.tracker);
    // The warm path: a connection this thread has, with a free stream. No
    // await, no timer.
    absl::StatusOr<SubchannelLease> lease = a.sc->pool.TryAcquire();
    if (!lease.ok()) return Step::kNoLease;
    a.lease = std::move(*lease);
    return Step::kLeased;
  }
  a.last = std::move(p.error);
  // An address became usable after the pick looked: pick again at once
  // (bounded: a policy that keeps choosing none ends as the channel said).
  if (p.usable_now && a.repicks < kMaxRepicks) {
    ++a.repicks;
    return Step::kAgain;
  }
  if (p.kind == ChannelState::CallPick::kFail) return Fail(a, Status::FromAbsl(a.last));
  a.recheck = p.recheck;
  return Step::kNoAddress;
}

}  // namespace

Step PickAndTryLease(Attempt& a) {
  if (std::optional<Status> ended = Ended(a)) return Fail(a, *ended);
  return TakePick(a, a.st.PickForCall(a.index, PickArgs(a)));
}

Task<Step> FinishPick(Attempt& a, Step step) {
  if (step == Step::kNoAddress) {
    // Queued: watching from before the channel is asked again, so a change
    // after that pick (the resolver's answer, a health answer, a
    // connection) ends the wait, and one before it is in what it read.
    channel::ChangeSignal::Watch watch(a.st.changes(), a.index, a.loop);
    step = TakePick(a, a.st.PickForCall(a.index, PickArgs(a)));
    if (step == Step::kNoAddress) {
      // Until something changes, or (a policy that chose none of the
      // usable addresses) kNoPickRecheck.
      const TimePoint until = a.recheck ? a.loop.Now() + kNoPickRecheck : TimePoint::max();
      co_await SleepUnlessCancelled(a.cancel, a.loop, WakeBy(a, until), &watch.changed());
      co_return Step::kAgain;
    }
    if (step != Step::kNoLease) co_return step;
  }
  // While the address backs off (for every thread), fail fast (or wait,
  // if wait_for_ready): no dial, no waiting in the pool.
  if (absl::Status backoff = a.sc->record->CheckBackoff(a.loop.Now()); !backoff.ok()) {
    a.last = backoff;
    // Picked while another thread's dial was failing: another address
    // that is READY or connecting takes the call (a fail-fast call fails
    // only when there is none).
    if (a.repicks < kMaxRepicks && a.st.AnotherUsable(a.index, a.sc, a.group)) {
      ++a.repicks;
      co_return Step::kAgain;
    }
    if (!a.wait_for_ready) co_return Fail(a, Status::FromAbsl(backoff));
    co_await Pause(a, a.sc->record->next_attempt());
    co_return Step::kAgain;
  }
  Duration left = a.deadline == TimePoint::max() ? Duration(std::chrono::hours(24 * 365))
                                                 : a.deadline - a.loop.Now();
  runtime::WithTimeout<absl::StatusOr<SubchannelLease>> wait(a.loop, Acquire(a.sc->pool), left);
  std::optional<absl::StatusOr<SubchannelLease>> waited;
  {
    // Behind another call's dial this wait can last the connect timeout:
    // TryCancel ends it at once (the dial goes on for the others).
    CancelWake wake(a.cancel, a.loop, [&wait] { wait.Interrupt(); });
    waited = co_await wait;
  }
  if (!waited) co_return Step::kAgain;  // the deadline or cancel check reports it
  absl::StatusOr<SubchannelLease> lease = std::move(*waited);
  if (!lease.ok() && a.sc->pool.closed() && a.closed_pool_repicks++ < kMaxClosedPoolRepicks) {
    // A resolver update dropped this address after the pick (the fault
    // suite's flapping test): pick again once this thread has the new list.
    co_await SleepUntil(a.loop, WakeBy(a, a.loop.Now() + kClosedPoolRepickDelay));
    co_return Step::kAgain;
  }
  if (!lease.ok()) co_return co_await OnLeaseFailed(a, lease.status());
  a.lease = std::move(*lease);
  co_return Step::kLeased;
}

}  // namespace ringrpc::internal
