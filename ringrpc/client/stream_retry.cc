// A stream's next attempt (gRFC A6's retryPolicy and the transparent
// retry, decided by channel::RetryState): opened when an operation finds
// the current attempt ended uncommitted, what was sent replayed on it, and
// swapped in behind the caller's ClientCall.
#include <memory>
#include <utility>

#include "ringrpc/client/channel/channel_state.h"
#include "ringrpc/client/channel/retry_policy.h"
#include "ringrpc/client/internal/call_opener.h"
#include "ringrpc/client/internal/call_waits.h"
#include "ringrpc/client/internal/client_call_impl.h"
#include "ringrpc/client/runtime/event_loop.h"

namespace ringrpc::internal {

using channel::ChannelState;

Task<bool> CallOpener::NextStreamAttempt(ClientCall::Impl* impl, uint64_t generation) {
  ClientCall::Impl::Replay& r = *impl->replay;
  runtime::EventLoop& loop = *impl->loop;
  if (r.hedge != nullptr) {
    // A hedged stream: the watcher (stream_hedging.cc) decides whether
    // another copy takes the ended one's place or its status stands.
    while (r.generation == generation && !r.hedge->stopped) co_await r.progress.Wait();
    co_return r.generation != generation;
  }
  // Another operation of the call is opening the next attempt: wait for it.
  while (r.opening) co_await r.progress.Wait();
  if (r.generation != generation) co_return true;  // already on the next attempt
  const transport::Call& ended = *impl->call;
  // Committed: the call's buffer overflowed, the caller (Cancel, TryCancel)
  // or an interceptor ended it, or it has not ended.
  if (r.committed || r.cancelled || impl->failed || !ended.finished() || Cancelled(*impl->ctx)) {
    impl->Commit();
    co_return false;
  }
  ChannelState& st = *impl->channel;
  const channel::AttemptEnd end{.code = static_cast<int>(ended.status()->code()),
                                .server_answered = ended.initial_metadata_received(),
                                .never_sent = ended.never_sent(),
                                .recv_timeout = r.recv_timed_out == generation + 1,
                                .pushback = channel::ParsePushback(ended.trailing_metadata())};
  const channel::RetryDecision d = r.retry.OnAttemptEnded(end);
  if (d.reason == channel::RetryDecision::Reason::kThrottled)
    st.counters().Count(channel::ChannelCounter::kThrottledRetries);
  if (!d.retry()) {
    if (end.recv_timeout) r.failure = RecvTimeoutStatus(*r.retry.recv_timeout());
    impl->Commit();
    co_return false;
  }
  r.opening = true;
  std::optional<Status> stop =
      co_await WaitToRetry(loop, *impl->ctx, d.delay, r.plan.deadline.value_or(TimePoint::max()),
                           std::string(ended.status()->message()),
                           StreamCancel{.cancelled = &r.cancelled, .wake = &r.cancel_event});
  if (stop) {
    r.failure = std::move(*stop);
    r.opening = false;
    r.progress.NotifyAll();
    impl->Commit();
    co_return false;
  }
  r.plan.previous_attempts = r.retry.attempts() - 1;
  Status out;
  std::unique_ptr<ClientCall> next =
      co_await Open(impl->channel, r.method, impl->ctx, &out, false, &r.plan);
  r.opening = false;
  r.progress.NotifyAll();
  if (next == nullptr) {
    r.failure = std::move(out);
    impl->Commit();
    co_return false;
  }
  if (d.transparent()) {
    st.counters().Count(channel::ChannelCounter::kTransparentRetries);
  } else {
    st.counters().Count(channel::ChannelCounter::kRetries);
  }
  SwapInAttempt(impl, std::move(next), /*replay=*/true);
  co_return true;
}

void CallOpener::SwapInAttempt(ClientCall::Impl* impl, std::unique_ptr<ClientCall> next,
                               bool replay) {
  ClientCall::Impl::Replay& r = *impl->replay;
  // The new attempt takes the call's place (its stream, lease, address,
  // interceptors and cancel registration); the old one leaves with `next`.
  ClientCall::Impl& fresh = *next->impl_;
  std::swap(impl->sc, fresh.sc);
  std::swap(impl->lease, fresh.lease);
  std::swap(impl->call, fresh.call);
  std::swap(impl->interceptors, fresh.interceptors);
  std::swap(impl->alive, fresh.alive);
  std::swap(impl->lb_tracker, fresh.lb_tracker);
  std::swap(impl->attempt_start, fresh.attempt_start);
  if (fresh.metrics != nullptr) {
    // Each attempt's end is recorded with its own start.
    impl->call->set_end_observer(impl);
    fresh.call->set_end_observer(&fresh);
  }
  if (replay) {
    for (const auto& [m, compress] : r.sent) (void)impl->call->Enqueue(m, compress);
    if (r.writes_done) impl->call->WritesDone();
  }
  // TryCancel reaches the new attempt (a hedged copy was registered with
  // its own cancel state); ClientCall::Cancel may have come while it opened.
  RegisterCancel(*impl);
  if (r.cancelled) impl->call->Cancel();
  ++r.generation;
  WatchRecvTimeout(impl);
  // Operations waiting in the old attempt (a hedged copy that lost: it is
  // cancelled now) resume inside it on a later loop pass: it goes once
  // the last of them has left it (Replay::Leave), and they go on with the
  // new attempt (its generation is new).
  if (!fresh.call->finished()) fresh.call->Cancel();
  r.leaving.push_back(std::move(next));
  r.Leave(nullptr);
  r.progress.NotifyAll();
}

void CallOpener::WatchRecvTimeout(ClientCall::Impl* impl) {
  ClientCall::Impl::Replay& r = *impl->replay;
  const std::optional<Duration> timeout = r.retry.recv_timeout();
  if (!timeout || r.committed) return;
  // On the loop, beside the call: if the server has not answered the
  // attempt within the timeout, it is cancelled and marked, and the next
  // operation that finds it ended retries it. The watch holds the call's
  // cancel target weakly: a call gone (or on a later attempt) is left be.
  std::weak_ptr<ClientCall::Impl::CancelTarget> alive = impl->alive;
  const uint64_t generation = r.generation;
  impl->loop->Spawn([](std::weak_ptr<ClientCall::Impl::CancelTarget> alive, ClientCall::Impl* impl,
                       uint64_t generation, Duration timeout) -> Task<void> {
    runtime::EventLoop& loop = *impl->loop;
    co_await SleepUntil(loop, loop.Now() + timeout);
    std::shared_ptr<ClientCall::Impl::CancelTarget> target = alive.lock();
    if (target == nullptr || target->call == nullptr) co_return;
    ClientCall::Impl::Replay& r = *impl->replay;
    if (r.generation != generation || r.committed) co_return;
    transport::Call& call = *target->call;
    if (call.initial_metadata_received() || call.finished()) co_return;
    r.recv_timed_out = generation + 1;
    call.Cancel();
  }(std::move(alive), impl, generation, *timeout));
}

}  // namespace ringrpc::internal
