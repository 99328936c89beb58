// A unary call and its attempts: the transparent retry and the
// retryPolicy's (gRFC A6, decided by channel::RetryState), or hedged
// copies (hedging.cc).
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/channel/channel_state.h"
#include "ringrpc/client/channel/retry_policy.h"
#include "ringrpc/client/internal/call_access.h"
#include "ringrpc/client/internal/call_opener.h"
#include "ringrpc/client/internal/call_waits.h"
#include "ringrpc/client/internal/client_call_impl.h"
#include "ringrpc/client/runtime/loop_event.h"

namespace ringrpc::internal {

using channel::ChannelState;

namespace {

Task<bool> HeadersArrive(transport::Call* call) {
  co_await call->WaitForInitialMetadata();
  co_return true;
}

}  // namespace

Status RecvTimeoutStatus(Duration timeout) {
  return Status(
      StatusCode::DEADLINE_EXCEEDED,
      absl::StrCat("the attempt had no answer from the server within "
                   "perAttemptRecvTimeout (",
                   std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count(), " ms)"));
}

Task<bool> CallOpener::AnsweredWithin(ClientCall& call, Duration timeout) {
  runtime::EventLoop& loop = *call.impl_->loop;
  transport::Call* stream = call.impl_->call.get();
  std::optional<bool> answered =
      co_await runtime::WithTimeout<bool>(loop, HeadersArrive(stream), timeout);
  if (answered || stream->initial_metadata_received() || stream->finished()) co_return true;
  stream->Cancel();  // perAttemptRecvTimeout: this attempt is given up
  co_return false;
}

// What a unary call keeps across its attempts, fixed at its start.
struct CallOpener::UnaryPlan {
  channel::CallMetricsTable* metrics = nullptr;
  channel::MethodRow* metrics_row = nullptr;  // null: not recorded
  TimePoint start = Clock::now();
  AttemptPlan plan;
  bool hedged = false;                       // the method's hedgingPolicy applies
  std::optional<channel::RetryState> retry;  // none: one attempt
};

CallOpener::UnaryPlan CallOpener::PlanUnary(ChannelState& st, const std::optional<size_t>& index,
                                            const std::string& method, ClientContext* ctx,
                                            size_t request_size) {
  UnaryPlan p;
  // The call's telemetry: its attempts record themselves (Open), the call
  // is recorded by Unary, with the status its caller gets.
  p.metrics = st.call_metrics();
  if (p.metrics != nullptr && index && ctx != nullptr) {
    p.metrics_row = p.metrics->Method(*index, method);
  }
  const channel::ActiveConfig& active = st.active();  // for the whole call
  const channel::MethodConfig* mc =
      active.service_config ? active.service_config->Find(method) : nullptr;
  p.plan = AttemptPlan{.config = &active,
                       .method_config_known = true,
                       .method_config = mc,
                       .metrics_row = p.metrics_row};
  // Retries need a loop to wait on and a context to watch (without them
  // Open fails the call anyway); a request over the per-call retry buffer
  // commits the call at once: no policy, no hedging (the transparent
  // retry still applies). Every attempt keeps the call's deadline, fixed
  // now (a method's timeout counts from the call's start).
  if (!index || ctx == nullptr || !st.config().enable_retries) return p;
  p.plan.deadline = CallDeadline(st.cq()->loop(*index), *ctx, mc);
  const bool fits = request_size <= st.config().per_rpc_retry_buffer_size;
  p.hedged = fits && mc != nullptr && mc->hedging_policy;
  p.retry.emplace(fits && mc != nullptr && mc->retry_policy ? &*mc->retry_policy : nullptr,
                  active.throttle.get());
  return p;
}

std::optional<Status> CallOpener::AfterUnaryAttempt(ChannelState& st, UnaryPlan& p,
                                                    ClientCall* call, Status& s,
                                                    std::optional<ByteBuffer>& reply,
                                                    bool recv_timed_out, ResponseSink response,
                                                    channel::RetryDecision* retry) {
  channel::AttemptEnd end{.code = static_cast<int>(s.error_code()), .recv_timeout = recv_timed_out};
  if (call != nullptr) {
    const transport::Call& ended = *call->impl_->call;
    end.server_answered = ended.initial_metadata_received();
    end.never_sent = call->never_sent();
    end.pushback = channel::ParsePushback(ended.trailing_metadata());
  }
  const channel::RetryDecision d =
      p.retry ? p.retry->OnAttemptEnded(end) : channel::RetryDecision{};
  if (s.ok()) {
    if (!reply) {
      return Status(StatusCode::INTERNAL,
                    "the server ended a unary call OK without a response message");
    }
    response.Set(std::move(*reply));
    return s;
  }
  if (d.reason == channel::RetryDecision::Reason::kThrottled)
    st.counters().Count(channel::ChannelCounter::kThrottledRetries);
  if (!d.retry()) return std::move(s);
  if (d.transparent()) st.counters().Count(channel::ChannelCounter::kTransparentRetries);
  *retry = d;
  return std::nullopt;
}

Task<Status> CallOpener::Unary(std::shared_ptr<channel::ChannelState> self, std::string method,
                               ClientContext* ctx, std::string serialized, ResponseSink response) {
  if (response.null()) {
    co_return Status(StatusCode::INVALID_ARGUMENT, "the unary call's response pointer is null");
  }
  if (ctx != nullptr) CallAccess::set_call_kind(*ctx, CallKind::kUnary);
  ChannelState& st = *self;
  const std::optional<size_t> index = st.CurrentIndex();
  // Serialized once; a large request is sent from this string by every
  // attempt (and hedged copy) without being copied.
  OutgoingMessage request(std::move(serialized));
  if (index && ctx != nullptr && Unresolved(st)) {
    co_await AwaitFirstResolution(st, *index, st.cq()->loop(*index), *ctx);
  }
  UnaryPlan p = PlanUnary(st, index, method, ctx, request.size());
  std::optional<Status> done;
  if (p.hedged)
    done = co_await UnaryHedged(self, method, ctx, std::move(request), response, p.plan);
  // The attempts, in this frame (a unary call's warm path allocates no
  // coroutine frame of its own beyond Unary's and Open's).
  while (!done) {
    p.plan.previous_attempts = p.retry ? p.retry->attempts() - 1 : 0;
    const std::optional<Duration> recv_timeout = p.retry ? p.retry->recv_timeout() : std::nullopt;
    Status s;
    std::unique_ptr<ClientCall> call = co_await Open(self, method, ctx, &s, false, &p.plan);
    std::optional<ByteBuffer> reply;
    bool timed_out = false;
    if (call != nullptr) {
      // One message: no wait for room (a failed write ends the call, and
      // Finish says why), unless an interceptor answers later.
      (void)co_await call->AwaitWriteNow(request);
      (void)co_await call->AwaitWritesDone();
      if (recv_timeout) timed_out = !co_await AnsweredWithin(*call, *recv_timeout);
      reply = co_await call->ReadBuffer();
      // (No co_await inside ?: — GCC 12 mishandles the temporaries there.)
      if (call->finished()) {
        s = co_await call->AwaitFinishNow();
      } else {
        s = co_await call->Finish();
      }
      if (timed_out) s = RecvTimeoutStatus(*recv_timeout);
    }
    channel::RetryDecision retry;
    done = AfterUnaryAttempt(st, p, call.get(), s, reply, timed_out, response, &retry);
    call.reset();
    if (done || retry.transparent()) continue;
    done = co_await WaitToRetry(st.cq()->loop(*index), *ctx, retry.delay,
                                p.plan.deadline.value_or(TimePoint::max()), s.error_message());
    if (!done) st.counters().Count(channel::ChannelCounter::kRetries);
  }
  if (p.metrics_row != nullptr) {
    p.metrics->CallEnded(p.metrics_row, done->error_code(), Clock::now() - p.start);
  }
  co_return std::move(*done);
}

}  // namespace ringrpc::internal
