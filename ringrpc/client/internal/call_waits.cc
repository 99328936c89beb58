// A call's waits before it has a stream (call_waits.h).
#include "ringrpc/client/internal/call_waits.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "ringrpc/base/mutex.h"
#include "ringrpc/client/internal/call_access.h"
#include "ringrpc/client/internal/cancel_wake.h"

namespace ringrpc::internal {

bool Cancelled(const ClientContext& ctx) {
  const std::shared_ptr<CancelState>& cs = CallAccess::cancel(ctx);
  MutexLock lock(&cs->mu);
  return cs->cancelled;
}

Task<void> AwaitFirstResolution(channel::ChannelState& st, size_t index, runtime::EventLoop& loop,
                                const ClientContext& ctx) {
  const TimePoint deadline =
      ctx.deadline() ? channel::ToLoopTime(*ctx.deadline(), loop.Now()) : TimePoint::max();
  for (;;) {
    // Watching before the look: the answer rings the channel's signal
    // (no timer looks again).
    channel::ChangeSignal::Watch watch(st.changes(), index, loop);
    if (st.resolved_once() || loop.Now() >= deadline || Cancelled(ctx)) co_return;
    co_await SleepUnlessCancelled(CallAccess::cancel(ctx), loop, deadline, &watch.changed());
  }
}

Task<std::optional<Status>> WaitToRetry(runtime::EventLoop& loop, const ClientContext& ctx,
                                        Duration delay, TimePoint deadline, std::string last,
                                        StreamCancel stream) {
  const TimePoint until =
      delay < TimePoint::max() - loop.Now() ? loop.Now() + delay : TimePoint::max();
  const TimePoint wake_by = std::min(until, deadline);
  const auto stream_cancelled = [&stream] {
    return stream.cancelled != nullptr && *stream.cancelled;
  };
  if (!stream_cancelled()) {
    co_await SleepUnlessCancelled(CallAccess::cancel(ctx), loop, wake_by, stream.wake);
  }
  if (Cancelled(ctx) || stream_cancelled()) {
    co_return Status(StatusCode::CANCELLED, "cancelled while waiting to retry");
  }
  if (loop.Now() >= deadline) {
    co_return Status(
        StatusCode::DEADLINE_EXCEEDED,
        absl::StrCat("deadline exceeded while waiting to retry; last attempt: ", last));
  }
  co_return std::nullopt;
}

}  // namespace ringrpc::internal
