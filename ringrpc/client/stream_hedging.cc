// A hedged stream (gRFC A6's hedgingPolicy on a streaming method, decided
// by channel::HedgingState). The caller's operations run on one copy, the
// first at first; further copies go hedgingDelay apart, or at once after
// a non-fatal failure, each with what the caller wrote so far and what it
// writes later (Impl::Remember). The first copy whose server answers
// (initial metadata), or that ends OK or with a fatal status, is the
// call's: it takes the caller's place if it was not there, and the other
// copies are cancelled. A copy that ends with a non-fatal status leaves;
// if it was the caller's, an open copy takes its place (the operations
// waiting in it go on there). Until then the messages written are kept
// (grpc.per_rpc_retry_buffer_size): past it the call commits to the
// caller's copy, as it does when a message arrives or the caller cancels.
#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "ringrpc/client/channel/channel_state.h"
#include "ringrpc/client/channel/retry_policy.h"
#include "ringrpc/client/internal/call_opener.h"
#include "ringrpc/client/internal/call_waits.h"
#include "ringrpc/client/internal/client_call_impl.h"
#include "ringrpc/client/internal/stream_hedge.h"
#include "ringrpc/client/runtime/loop_event.h"

namespace ringrpc::internal {

using channel::HedgingState;

namespace {

channel::AttemptEnd EndOf(const transport::Call& c) {
  return {.code = static_cast<int>(c.status()->code()),
          .server_answered = c.initial_metadata_received(),
          .never_sent = c.never_sent(),
          .pushback = channel::ParsePushback(c.trailing_metadata())};
}

TimePoint After(runtime::EventLoop& loop, Duration d) {
  return d < TimePoint::max() - loop.Now() ? loop.Now() + d : TimePoint::max();
}

// A non-fatal end's verdict applied to when the next copy goes; false: the
// end decides the call.
bool Apply(runtime::EventLoop& loop, const HedgingState::CopyDecision& d, bool& more,
           TimePoint& next) {
  using V = HedgingState::CopyVerdict;
  switch (d.verdict) {
    case V::kDecides:
      return false;
    case V::kNextNow:
      next = loop.Now();
      break;
    case V::kNextAfter:
      next = After(loop, d.delay);
      break;
    case V::kNoMore:
      more = false;
      break;
  }
  return true;
}

bool Opening(const StreamHedge& h) {
  return std::any_of(h.copies.begin(), h.copies.end(),
                     [](const StreamHedge::Copy& c) { return c.opening; });
}

}  // namespace

Task<void> CallOpener::OpenCopy(std::shared_ptr<channel::ChannelState> self, ClientCall::Impl* impl,
                                AttemptPlan plan, std::shared_ptr<StreamHedge> h) {
  const std::string method = impl->replay->method;
  const CancelState* me = plan.cancel.get();
  Status s;
  // The context outlives this: the caller's Finish waits for every copy
  // to have opened or given up (cancelled, this one gives up at once).
  std::unique_ptr<ClientCall> call = co_await Open(self, method, impl->ctx, &s, false, &plan);
  auto it = std::find_if(h->copies.begin(), h->copies.end(),
                         [me](const StreamHedge::Copy& c) { return c.cancel.get() == me; });
  h->wake.Set();
  if (it == h->copies.end()) co_return;
  it->opening = false;
  if (h->stopped || call == nullptr) {
    it->open_failure = call == nullptr ? s : Status(StatusCode::CANCELLED, "cancelled");
    co_return;  // a stream opened too late goes (cancelled) with `call`
  }
  // What the caller wrote so far; what it writes from now on reaches the
  // copy from Remember and CloseWrites.
  const ClientCall::Impl::Replay& r = *impl->replay;
  transport::Call& c = *call->impl_->call;
  for (const auto& [m, compress] : r.sent) (void)c.Enqueue(m, compress);
  if (r.writes_done) c.WritesDone();
  c.set_progress_event(&h->wake);
  it->call = std::move(call);
}

CallOpener::HedgeStep CallOpener::LookAtCopies(ClientCall::Impl* impl, StreamHedge& h, bool& more,
                                               TimePoint& next, bool& reported) {
  runtime::EventLoop& loop = *impl->loop;
  ClientCall::Impl::Replay& r = *impl->replay;
  if (r.committed || r.cancelled || impl->failed || Cancelled(*impl->ctx)) return HedgeStep::kStop;
  const transport::Call& mine = *impl->call;
  if (mine.initial_metadata_received()) return HedgeStep::kStop;  // the caller's copy won
  // Another copy answered first, or ended deciding the call: it takes the
  // caller's place. A copy that ended otherwise leaves.
  for (size_t i = 0; i < h.copies.size(); ++i) {
    StreamHedge::Copy& c = h.copies[i];
    if (c.opening) continue;
    const transport::Call* t = c.call != nullptr ? c.call->impl_->call.get() : nullptr;
    if (t != nullptr && !t->initial_metadata_received() && !t->finished()) continue;
    const bool answered = t != nullptr && t->initial_metadata_received();
    if (!answered) {
      channel::AttemptEnd end =
          t != nullptr ? EndOf(*t)
                       : channel::AttemptEnd{.code = static_cast<int>(c.open_failure.error_code())};
      if (Apply(loop, h.state.OnCopyEnded(end), more, next)) {
        h.copies.erase(h.copies.begin() + static_cast<std::ptrdiff_t>(i--));
        continue;
      }
      if (t == nullptr) {
        // It could not open, fatally: that is the call's status.
        r.failure = c.open_failure;
        impl->call->Cancel();
        return HedgeStep::kStop;
      }
    }
    std::unique_ptr<ClientCall> winner = std::move(c.call);
    h.copies.erase(h.copies.begin() + static_cast<std::ptrdiff_t>(i));
    SwapInAttempt(impl, std::move(winner), /*replay=*/false);
    return HedgeStep::kStop;
  }
  if (!mine.finished()) return HedgeStep::kWait;
  if (!reported) {
    reported = true;
    if (!Apply(loop, h.state.OnCopyEnded(EndOf(mine)), more, next)) return HedgeStep::kStop;
  }
  // The caller's copy left: the oldest open copy takes its place.
  for (size_t i = 0; i < h.copies.size(); ++i) {
    if (h.copies[i].call == nullptr) continue;
    std::unique_ptr<ClientCall> next_copy = std::move(h.copies[i].call);
    h.copies.erase(h.copies.begin() + static_cast<std::ptrdiff_t>(i));
    SwapInAttempt(impl, std::move(next_copy), /*replay=*/false);
    reported = false;
    return HedgeStep::kAgain;
  }
  // None open: one opening, or one to send, may still take it; else the
  // caller's copy's status stands.
  if (Opening(h) || (more && h.state.MaySend(h.sent) == HedgingState::SendVerdict::kSend)) {
    return HedgeStep::kWait;
  }
  return HedgeStep::kStop;
}

Task<void> CallOpener::HedgeStream(std::shared_ptr<channel::ChannelState> self,
                                   ClientCall::Impl* impl, std::shared_ptr<StreamHedge> h) {
  runtime::EventLoop& loop = *impl->loop;
  impl->call->set_progress_event(&h->wake);
  TimePoint next = After(loop, h->state.hedging_delay());
  bool more = true;
  bool reported = false;  // the caller's copy's end was told to the policy
  while (!h->stopped) {
    const HedgeStep step = LookAtCopies(impl, *h, more, next, reported);
    if (h->released) break;
    if (step == HedgeStep::kStop) break;
    if (step == HedgeStep::kAgain) continue;
    using Send = HedgingState::SendVerdict;
    if (more && loop.Now() >= next) {
      const Send may = h->state.MaySend(h->sent);
      if (may == Send::kThrottled) {
        self->counters().Count(channel::ChannelCounter::kThrottledRetries);
      }
      if (may != Send::kSend) {
        more = false;
        continue;
      }
      AttemptPlan plan = impl->replay->plan;
      plan.previous_attempts = h->sent++;
      plan.cancel = std::make_shared<CancelState>();
      h->copies.push_back({.cancel = plan.cancel});
      self->counters().Count(channel::ChannelCounter::kHedges);
      next = After(loop, h->state.hedging_delay());
      loop.Spawn(OpenCopy(self, impl, std::move(plan), h));
      continue;
    }
    if (more) {
      (void)co_await runtime::WithTimeout<bool>(loop, runtime::Rung(&h->wake), next - loop.Now());
    } else {
      co_await h->wake.Wait();
    }
    if (h->released) break;
  }
  // Committed (the call's copy is the caller's now) or let go: the other
  // copies are cancelled; the caller's Finish waits until none is opening.
  if (!h->released) impl->Commit();
  h->Stop();
  while (Opening(*h)) co_await h->wake.Wait();
  h->copies.clear();
  h->done = true;
  if (!h->released) impl->replay->progress.NotifyAll();
}

}  // namespace ringrpc::internal
