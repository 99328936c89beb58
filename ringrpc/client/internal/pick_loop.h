// ringrpc/client/internal/pick_loop.h — one round of a call's way to a stream:
// pick an address (the channel's routing, failover and LB pick), lease a
// stream on this thread's pool for it, or wait (the resolver's first
// answer, a health check's, an address's backoff, a dial) or fail, as
// gRPC's pickers decide: fail fast unless wait_for_ready, try another
// address before failing, TryCancel and the deadline end every wait; a
// call with no address to pick waits for the channel's change signal, not
// a timer.
// CallOpener::Open runs rounds until kLeased or kFail. Private to ringrpc/client/.
//
// Threading: the call's CQ thread.
//
//   Step step = PickAndTryLease(a);  // the warm path: no coroutine frame
//   if (step == Step::kNoAddress || step == Step::kNoLease)
//     step = co_await FinishPick(a, step);
#ifndef RINGRPC_CLIENT_INTERNAL_PICK_LOOP_H_
#define RINGRPC_CLIENT_INTERNAL_PICK_LOOP_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "ringrpc/base/task.h"
#include "ringrpc/base/time.h"
#include "ringrpc/client/channel/change_signal.h"
#include "ringrpc/client/channel/channel_state.h"
#include "ringrpc/client/channel/subchannel.h"
#include "ringrpc/client/client_context.h"
#include "ringrpc/client/runtime/event_loop.h"
#include "ringrpc/client/status.h"
#include "ringrpc/client/transport/metadata.h"

namespace ringrpc::internal {

using std::chrono::milliseconds;

// How many times one call may pick again at once (another address after
// the picked one failed or was backing off, or after a pick that found
// nothing raced a health answer), before it reports the failure: enough to walk
// a typical address list once or twice, few enough that a call facing a
// dead cluster fails in microseconds, not after a scan of every address.
constexpr int kMaxRepicks = 8;
// How often a call whose pick raced a resolver update that dropped its
// address picks again (kClosedPoolRepickDelay apart) before reporting
// "pool is closed": the new list reaches the thread within a loop turn, so
// 100 ms is far more than it needs.
constexpr int kMaxClosedPoolRepicks = 100;
constexpr milliseconds kClosedPoolRepickDelay{1};
// How often a call whose connection stopped taking streams between the
// lease and the stream's start (GOAWAY, close) tries another lease: each
// try poisons that connection, so a few cover a burst of closing ones.
constexpr int kMaxStartRetries = 4;
// A call with no address to pick (before the resolver's first answer,
// while health checks have not answered, wait_for_ready with none usable)
// waits for the channel's ChangeSignal: the resolver's answer, a health
// answer, a connection or a failed dial wakes it on its own thread, and no
// timer looks again. Only when the LB policy chose none of the usable
// addresses (a policy of the program's own may, with no change to wait
// for) is it asked again after this long.
constexpr milliseconds kNoPickRecheck{1000};
// The shortest wait of a wait_for_ready call whose lease failed before it
// tries again (the address's backoff usually asks for longer).
constexpr milliseconds kMinLeaseRetryDelay{5};

using channel::ChannelState;
using channel::Subchannel;
using channel::SubchannelLease;

// What one call's attempts to reach a stream share.
struct Attempt {
  ChannelState& st;
  size_t index;  // the CQ thread's
  runtime::EventLoop& loop;
  ClientContext* ctx;
  TimePoint deadline;   // TimePoint::max(): none
  bool wait_for_ready;  // the context's, else the service config's
  // The context's, or a hedged copy's own (which the hedged call cancels
  // when it needs the copy no more): every wait ends at its Cancel.
  std::shared_ptr<CancelState> cancel;
  // What the resolver's CallRouter (xDS routes) routes by, if it has one.
  std::string_view method;
  const transport::Metadata* metadata = nullptr;
  std::string group;  // the route's answer for this round ("": the whole list)
  // Each bound counts its own event, not the call's rounds (a call that
  // waited for many changes or backoffs still gets its full share).
  int repicks = 0;              // kMaxRepicks: picks again at once
  int start_retries = 0;        // kMaxStartRetries
  int closed_pool_repicks = 0;  // kMaxClosedPoolRepicks
  absl::Status last;            // the latest failure, for the message of the final one
  std::shared_ptr<Subchannel> sc;
  std::unique_ptr<LbCallTracker> tracker;  // the policy's for this pick (null: none)
  std::optional<SubchannelLease> lease;
  Status failure;         // with Step::kFail
  bool resolved = false;  // this round's pick saw a resolver answer
  bool recheck = false;   // with Step::kNoAddress: no change may end the wait
};

enum class Step { kLeased, kAgain, kFail, kNoAddress, kNoLease };

// One round of pick -> lease, its warm path without a coroutine frame:
// the channel's typed pick (ChannelState::PickForCall) applied: kLeased
// (a.sc and a.lease are set), kFail (a.failure), kAgain, or kNoAddress
// (queued) / kNoLease, which FinishPick goes on with.
Step PickAndTryLease(Attempt& a);
// The rest of a round PickAndTryLease could not finish: kNoAddress (the
// pick queued: watch the channel's changes, ask again, wait) or kNoLease
// (the picked address has no free stream on this thread). kAgain: run
// another round.
Task<Step> FinishPick(Attempt& a, Step step);

}  // namespace ringrpc::internal

#endif  // RINGRPC_CLIENT_INTERNAL_PICK_LOOP_H_
