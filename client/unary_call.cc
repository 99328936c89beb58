// A unary call and its attempts: the transparent retry and the
// retryPolicy's (gRFC A6, decided by channel::RetryState), or hedged
// copies (hedging.cc).
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/channel/channel_state.h"
#include "client/channel/retry_policy.h"
#include "client/internal/call_opener.h"
#include "client/internal/call_waits.h"
#include "client/internal/client_call_impl.h"
#include "client/runtime/loop_event.h"

namespace ringrpc::internal {

using channel::ChannelState;

namespace {

Task<bool> HeadersArrive(transport::Call* call) {
  co_await call->WaitForInitialMetadata();
  co_return true;
}

}  // namespace

Status RecvTimeoutStatus(Duration timeout) {
  return Status(StatusCode::DEADLINE_EXCEEDED,
                absl::StrCat("the attempt had no answer from the server within "
                             "perAttemptRecvTimeout (",
                             std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count(),
                             " ms)"));
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

Task<CallOpener::UnaryEnd> CallOpener::UnaryAttempt(std::shared_ptr<ChannelState> self,
                                                    const std::string& method, ClientContext* ctx,
                                                    const OutgoingMessage& request,
                                                    const AttemptPlan& plan,
                                                    std::optional<Duration> recv_timeout) {
  UnaryEnd u;
  std::unique_ptr<ClientCall> call = co_await Open(self, method, ctx, &u.status, false, &plan);
  if (call == nullptr) {
    u.end.code = static_cast<int>(u.status.error_code());
    co_return u;
  }
  (void)call->WriteNow(request);  // one message: no need to wait for room; a
                                  // failed write ends the call (Finish says why)
  call->WritesDone();
  if (recv_timeout) u.end.recv_timeout = !co_await AnsweredWithin(*call, *recv_timeout);
  u.reply = co_await call->ReadBuffer();
  // (No co_await inside ?: — GCC 12 mishandles the temporaries there.)
  if (call->finished()) {
    u.status = call->FinishNow();
  } else {
    u.status = co_await call->Finish();
  }
  if (u.end.recv_timeout) u.status = RecvTimeoutStatus(*recv_timeout);
  const transport::Call& ended = *call->impl_->call;
  u.end.code = static_cast<int>(u.status.error_code());
  u.end.server_answered = ended.initial_metadata_received();
  u.end.never_sent = call->never_sent();
  u.end.pushback = channel::ParsePushback(ended.trailing_metadata());
  co_return u;
}

Task<Status> CallOpener::UnaryAttempts(std::shared_ptr<ChannelState> self,
                                       const std::string& method, ClientContext* ctx,
                                       const OutgoingMessage& request, ResponseSink response,
                                       AttemptPlan plan, std::optional<channel::RetryState> retry) {
  ChannelState& st = *self;
  for (;;) {
    plan.previous_attempts = retry ? retry->attempts() - 1 : 0;
    UnaryEnd u = co_await UnaryAttempt(self, method, ctx, request, plan,
                                       retry ? retry->recv_timeout() : std::nullopt);
    const channel::RetryDecision d =
        retry ? retry->OnAttemptEnded(u.end) : channel::RetryDecision{};
    if (u.status.ok()) {
      if (!u.reply) {
        co_return Status(StatusCode::INTERNAL,
                         "the server ended a unary call OK without a response message");
      }
      response.Set(std::move(*u.reply));
      co_return u.status;
    }
    if (d.reason == channel::RetryDecision::Reason::kThrottled) st.CountThrottledRetry();
    if (!d.retry()) co_return u.status;
    if (d.transparent()) {
      st.CountTransparentRetry();
      continue;
    }
    runtime::EventLoop& loop = st.cq()->loop(*st.CurrentIndex());
    std::optional<Status> ended = co_await WaitToRetry(
        loop, *ctx, d.delay, plan.deadline.value_or(TimePoint::max()), u.status.error_message());
    if (ended) co_return *ended;
    st.CountRetry();
  }
}

Task<Status> CallOpener::Unary(std::shared_ptr<channel::ChannelState> self, std::string method,
                               ClientContext* ctx, std::string serialized, ResponseSink response) {
  if (response.null()) {
    co_return Status(StatusCode::INVALID_ARGUMENT, "the unary call's response pointer is null");
  }
  ChannelState& st = *self;
  const std::optional<size_t> index = st.CurrentIndex();
  // The call's telemetry: its attempts record themselves (Open), the call
  // is recorded here, with the status its caller gets.
  channel::CallMetricsTable* metrics = st.call_metrics();
  channel::MethodRow* metrics_row =
      metrics != nullptr && index && ctx != nullptr ? metrics->Method(*index, method) : nullptr;
  const TimePoint start = Clock::now();
  // Serialized once; a large request is sent from this string by every
  // attempt (and hedged copy) without being copied.
  OutgoingMessage request(std::move(serialized));
  if (index && ctx != nullptr && Unresolved(st)) {
    co_await AwaitFirstResolution(st, st.cq()->loop(*index), *ctx);
  }
  const channel::ActiveConfig& active = st.active();  // for the whole call
  const channel::MethodConfig* mc =
      active.service_config ? active.service_config->Find(method) : nullptr;
  // Every attempt keeps the call's deadline, fixed now (a method's timeout
  // counts from the call's start, not each attempt's).
  AttemptPlan plan{.config = &active,
                   .method_config_known = true,
                   .method_config = mc,
                   .metrics_row = metrics_row};
  // Retries need a loop to wait on and a context to watch (without them
  // Open fails the call anyway); a request over the per-call retry buffer
  // commits the call at once: no policy, no hedging (the transparent
  // retry still applies).
  const bool retries = index && ctx != nullptr && st.config().enable_retries;
  const bool fits = request.size() <= st.config().per_rpc_retry_buffer_size;
  if (retries) plan.deadline = CallDeadline(st.cq()->loop(*index), *ctx, mc);
  Status s;
  if (retries && fits && mc != nullptr && mc->hedging_policy) {
    s = co_await UnaryHedged(self, method, ctx, std::move(request), response, plan);
  } else {
    std::optional<channel::RetryState> retry;
    if (retries) {
      retry.emplace(fits && mc != nullptr && mc->retry_policy ? &*mc->retry_policy : nullptr,
                    active.throttle.get());
    }
    s = co_await UnaryAttempts(self, method, ctx, request, response, plan, std::move(retry));
  }
  if (metrics_row != nullptr) metrics->CallEnded(metrics_row, s.error_code(), Clock::now() - start);
  co_return s;
}

}  // namespace ringrpc::internal
