// ringrpc/client/internal/call_waits.h — a call's waits before it has a stream
// that are not the pick's: the resolver's first answer, and a retry's
// delay (gRFC A6). Both end early for TryCancel and at the deadline.
// Private to ringrpc/client/.
//
// Threading: the call's CQ thread.
//
//   if (Unresolved(st)) co_await AwaitFirstResolution(st, index, loop, ctx);
//   std::optional<Status> ended = co_await WaitToRetry(loop, ctx, delay, deadline, last);
#ifndef RINGRPC_CLIENT_INTERNAL_CALL_WAITS_H_
#define RINGRPC_CLIENT_INTERNAL_CALL_WAITS_H_

#include <optional>
#include <string_view>

#include "ringrpc/base/task.h"
#include "ringrpc/base/time.h"
#include "ringrpc/client/channel/channel_state.h"
#include "ringrpc/client/client_context.h"
#include "ringrpc/client/runtime/event_loop.h"
#include "ringrpc/client/runtime/loop_event.h"
#include "ringrpc/client/status.h"

namespace ringrpc::internal {

// The context's TryCancel came.
bool Cancelled(const ClientContext& ctx);

// Until the resolver has answered once, the service config in force is not
// known (the resolver may deliver one, gRFC A21): a call waits for that
// answer before reading it, as gRPC queues calls until the resolver has
// answered, within the call's own deadline (a cancelled call or one past
// its deadline goes on to fail as such). The warm path: one acquire load
// (Unresolved, checked before the wait is made: no coroutine frame for it).
// A misconfigured channel never starts its resolver: its calls fail at once.
inline bool Unresolved(const channel::ChannelState& st) {
  return !st.resolved_once() && st.config_error().ok();
}
// On CQ thread `index`, whose loop is `loop`.
Task<void> AwaitFirstResolution(channel::ChannelState& st, size_t index, runtime::EventLoop& loop,
                                const ClientContext& ctx);

// A stream's own Cancel (ClientCall::Cancel): the flag it sets and the
// event it rings.
struct StreamCancel {
  const bool* cancelled = nullptr;
  runtime::LoopEvent* wake = nullptr;
};

// A retry's delay, bounded by the deadline (TimePoint::max(): none); one
// timer, which TryCancel and the stream's own Cancel (if given) end at
// once. nullopt: waited, the next attempt may go; else the call's status
// (CANCELLED, or DEADLINE_EXCEEDED naming `last`, the last attempt's
// message).
Task<std::optional<Status>> WaitToRetry(runtime::EventLoop& loop, const ClientContext& ctx,
                                        Duration delay, TimePoint deadline, std::string last,
                                        StreamCancel stream = {});

}  // namespace ringrpc::internal

#endif  // RINGRPC_CLIENT_INTERNAL_CALL_WAITS_H_
