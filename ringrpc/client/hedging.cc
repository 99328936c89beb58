// A hedged unary call (gRFC A6's hedgingPolicy, decided by
// channel::HedgingState): copies sent hedgingDelay apart, or at once after
// a non-fatal failure; the first answer, OK or fatal status wins and the
// other copies are cancelled.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ringrpc/client/channel/channel_state.h"
#include "ringrpc/client/channel/retry_policy.h"
#include "ringrpc/client/internal/call_access.h"
#include "ringrpc/client/internal/call_opener.h"
#include "ringrpc/client/internal/call_waits.h"
#include "ringrpc/client/internal/cancel_wake.h"
#include "ringrpc/client/internal/client_call_impl.h"
#include "ringrpc/client/runtime/loop_event.h"

namespace ringrpc::internal {

using channel::ChannelState;

// What the copies of one hedged unary call share. They run on the call's
// loop, and the call waits for every one of them to end before it returns
// (they read its context and its request).
struct CallOpener::Hedge {
  Hedge(runtime::EventLoop& loop, const channel::HedgingPolicy& policy,
        channel::RetryThrottle* throttle)
      : loop(loop), wake(loop), state(policy, throttle) {}
  runtime::EventLoop& loop;
  // A copy ended, its server answered first, or TryCancel came.
  runtime::LoopEvent wake;
  channel::HedgingState state;
  int running = 0;  // copies not ended
  // Each copy's own cancel state (the context's is the call's): how the
  // call ends a copy it needs no more, opening or open.
  std::vector<std::shared_ptr<CancelState>> copies;
  const CancelState* committed = nullptr;  // its server answered first: the call's
  std::optional<Status> final;             // the call's status, once decided
  std::optional<ByteBuffer> reply;
  Status last = Status(StatusCode::UNAVAILABLE, "no hedged attempt was sent");
  bool next_now = false;             // a non-fatal failure: the next copy goes at once
  std::optional<TimePoint> next_at;  // the server's pushback: the next copy then
  bool no_more = false;              // the server said not to retry: no more copies
};

namespace {

// Every copy but `keep` is cancelled, opening or open.
void CancelOthers(const CallOpener::Hedge& h, const CancelState* keep) {
  for (const std::shared_ptr<CancelState>& c : h.copies) {
    if (c.get() != keep) c->Cancel();
  }
}

}  // namespace

// One copy: opens, sends, and reports how it ended (A6: an answer or a
// fatal status decides the call; a non-fatal one sends the next copy).
Task<void> CallOpener::HedgedCopy(std::shared_ptr<ChannelState> self, const std::string* method,
                                  ClientContext* ctx, const OutgoingMessage* request,
                                  AttemptPlan plan, std::shared_ptr<Hedge> h) {
  Status s;
  // Cancelled (through plan.cancel) before it opened, it opens cancelled.
  const CancelState* me = plan.cancel.get();
  std::unique_ptr<ClientCall> call = co_await Open(self, *method, ctx, &s, false, &plan);
  std::optional<ByteBuffer> reply;
  channel::AttemptEnd end;
  if (call != nullptr) {
    (void)co_await call->AwaitWriteNow(*request);  // a failed write ends the call
    (void)co_await call->AwaitWritesDone();
    co_await call->impl_->call->WaitForInitialMetadata();
    if (call->impl_->call->initial_metadata_received() && !h->final && h->committed == nullptr) {
      h->committed = me;  // its server answered first
      CancelOthers(*h, me);
      h->wake.Set();
    }
    reply = co_await call->ReadBuffer();
    (void)co_await call->impl_->call->Finish();  // the context is not touched yet
    end.never_sent = call->never_sent();
    end.server_answered = h->committed == me;
    end.pushback = channel::ParsePushback(call->impl_->call->trailing_metadata());
  }
  const bool lost = h->final.has_value() || (h->committed != nullptr && h->committed != me);
  if (!lost) {
    // Only a copy that may be the call's writes its results into the
    // context (and runs the interceptors' status hooks).
    if (call != nullptr) s = co_await call->AwaitFinishNow();
    end.code = static_cast<int>(s.error_code());
    const channel::HedgingState::CopyDecision d = h->state.OnCopyEnded(end);
    using V = channel::HedgingState::CopyVerdict;
    if (d.verdict == V::kDecides) {
      h->final = s;
      h->reply = std::move(reply);
      CancelOthers(*h, me);
    } else {
      h->last = s;
      h->next_now = d.verdict == V::kNextNow;
      h->no_more = d.verdict == V::kNoMore;
      if (d.verdict == V::kNextAfter) h->next_at = h->loop.Now() + d.delay;
    }
  }
  call.reset();
  --h->running;
  h->wake.Set();
}

Task<Status> CallOpener::UnaryHedged(std::shared_ptr<channel::ChannelState> self,
                                     const std::string& method, ClientContext* ctx,
                                     OutgoingMessage request, ResponseSink response,
                                     const AttemptPlan& call_plan) {
  ChannelState& st = *self;
  runtime::EventLoop& loop = st.cq()->loop(*st.CurrentIndex());
  auto h = std::make_shared<Hedge>(loop, *call_plan.method_config->hedging_policy,
                                   call_plan.config->throttle.get());
  AttemptPlan plan = call_plan;
  // TryCancel reaches the call here (its copies have cancel states of
  // their own): it wakes the loop below, which cancels them all.
  CancelWake on_cancel(CallAccess::cancel(*ctx), loop, [&h] { h->wake.Set(); });
  int sent = 0;
  bool more = true;  // further copies may go
  TimePoint next = loop.Now();
  for (;;) {
    using Send = channel::HedgingState::SendVerdict;
    if (h->final || h->committed != nullptr || h->no_more ||
        h->state.MaySend(sent) == Send::kAttemptsExhausted) {
      more = false;
    }
    if (more && h->next_at) {
      next = *std::exchange(h->next_at, std::nullopt);
      h->next_now = false;
    }
    if (more && (h->next_now || loop.Now() >= next)) {
      const Send may = h->state.MaySend(sent);
      if (may != Send::kSend) {
        if (may == Send::kThrottled)
          st.counters().Count(channel::ChannelCounter::kThrottledRetries);
        more = false;
        continue;
      }
      plan.previous_attempts = sent;
      plan.cancel = h->copies.emplace_back(std::make_shared<CancelState>());
      ++sent;
      ++h->running;
      h->next_now = false;
      if (sent > 1) st.counters().Count(channel::ChannelCounter::kHedges);
      const Duration delay = h->state.hedging_delay();
      next = delay < TimePoint::max() - loop.Now() ? loop.Now() + delay : TimePoint::max();
      loop.Spawn(HedgedCopy(self, &method, ctx, &request, plan, h));
      continue;
    }
    if (h->running == 0 && (h->final || !more)) break;
    // Wait for a copy's news, the next copy's time, or TryCancel.
    if (more) {
      (void)co_await runtime::WithTimeout<bool>(loop, runtime::Rung(&h->wake), next - loop.Now());
    } else {
      co_await h->wake.Wait();
    }
    if (Cancelled(*ctx) && !h->final) {
      h->final = Status(StatusCode::CANCELLED, "cancelled");
      CancelOthers(*h, nullptr);
    }
  }
  Status s = h->final ? *h->final : h->last;
  if (!s.ok()) co_return s;
  if (!h->reply) {
    co_return Status(StatusCode::INTERNAL,
                     "the server ended a unary call OK without a response message");
  }
  response.Set(std::move(*h->reply));
  co_return s;
}

}  // namespace ringrpc::internal
