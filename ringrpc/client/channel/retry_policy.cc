// gRFC A6's retry and hedging decisions (retry_policy.h).
#include "ringrpc/client/channel/retry_policy.h"

namespace ringrpc::channel {

std::optional<Pushback> ParsePushback(const transport::Metadata& trailing) {
  for (const auto& [k, v] : trailing) {
    if (k != "grpc-retry-pushback-ms") continue;
    // At most 10 digits: no overflow, and a value past ~115 days is
    // "later than any deadline" either way.
    if (v.empty() || v.size() > 10) return Pushback{.never = true};
    int64_t ms = 0;
    for (char c : v) {
      if (c < '0' || c > '9') return Pushback{.never = true};
      ms = ms * 10 + (c - '0');
    }
    return Pushback{.after = std::chrono::milliseconds(ms)};
  }
  return std::nullopt;
}

namespace {

// A uniformly random duration in [0, cap] (A6's jittered backoff).
Duration Jittered(Duration cap, Random& rng) {
  const double ns = static_cast<double>(cap.count()) * rng.Uniform01();
  return ns >= static_cast<double>(cap.count()) ? cap : Duration(static_cast<Duration::rep>(ns));
}

// The backoff cap after one more failed attempt: multiplied, capped at
// maxBackoff; grown in double seconds so that a multiplier on a huge
// maxBackoff cannot overflow the nanosecond count.
Duration GrowBackoff(const RetryPolicy& policy, Duration backoff) {
  const double next = std::chrono::duration<double>(backoff).count() * policy.backoff_multiplier;
  return next >= std::chrono::duration<double>(policy.max_backoff).count()
             ? policy.max_backoff
             : std::chrono::duration_cast<Duration>(std::chrono::duration<double>(next));
}

}  // namespace

RetryDecision RetryState::OnAttemptEnded(const AttemptEnd& end) {
  using Reason = RetryDecision::Reason;
  if (end.code == 0) {
    if (throttle_ != nullptr) throttle_->RecordSuccess();
    return Commit(Reason::kSucceeded);
  }
  if (end.server_answered) return Commit(Reason::kServerAnswered);
  // Never processed by the server (GOAWAY above its stream,
  // REFUSED_STREAM): sent again at once, once per call, whatever the
  // policy says.
  if (end.never_sent && !transparent_used_) {
    transparent_used_ = true;
    return {.kind = RetryDecision::Kind::kRetry, .reason = Reason::kTransparent};
  }
  // A perAttemptRecvTimeout is retried whatever the codes (as gRPC does).
  if (policy_ == nullptr || !(end.recv_timeout || policy_->Retryable(end.code))) {
    return Commit(Reason::kNotRetryable);
  }
  if (throttle_ != nullptr && !throttle_->RecordFailure()) return Commit(Reason::kThrottled);
  if (attempts_ >= policy_->max_attempts) return Commit(Reason::kAttemptsExhausted);
  if (end.pushback && end.pushback->never) return Commit(Reason::kPushbackNever);
  ++attempts_;
  if (end.pushback) {
    // The server's delay replaces the backoff, which starts over (A6).
    backoff_ = policy_->initial_backoff;
    return {.kind = RetryDecision::Kind::kRetry,
            .reason = Reason::kPushbackDelay,
            .delay = end.pushback->after};
  }
  const Duration delay = Jittered(backoff_, rng_);
  backoff_ = GrowBackoff(*policy_, backoff_);
  return {.kind = RetryDecision::Kind::kRetry, .reason = Reason::kBackoff, .delay = delay};
}

std::string_view RetryReasonName(RetryDecision::Reason r) {
  using Reason = RetryDecision::Reason;
  switch (r) {
    case Reason::kSucceeded:
      return "succeeded";
    case Reason::kServerAnswered:
      return "server answered";
    case Reason::kNotRetryable:
      return "not retryable";
    case Reason::kThrottled:
      return "throttled";
    case Reason::kAttemptsExhausted:
      return "attempts exhausted";
    case Reason::kPushbackNever:
      return "pushback: never";
    case Reason::kTransparent:
      return "transparent";
    case Reason::kBackoff:
      return "backoff";
    case Reason::kPushbackDelay:
      return "pushback delay";
  }
  return "?";
}

HedgingState::CopyDecision HedgingState::OnCopyEnded(const AttemptEnd& end) {
  // A6: an OK, the server's answer or a fatal status decides the call; a
  // copy the server never saw is never fatal.
  const bool decides =
      end.code == 0 || end.server_answered || (!end.never_sent && !policy_.NonFatal(end.code));
  if (decides) {
    if (end.code == 0 && throttle_ != nullptr) throttle_->RecordSuccess();
    return {.verdict = CopyVerdict::kDecides};
  }
  if (throttle_ != nullptr) (void)throttle_->RecordFailure();
  if (!end.pushback) return {.verdict = CopyVerdict::kNextNow};
  if (end.pushback->never) return {.verdict = CopyVerdict::kNoMore};
  return {.verdict = CopyVerdict::kNextAfter, .delay = end.pushback->after};
}

HedgingState::SendVerdict HedgingState::MaySend(int sent) const {
  if (sent >= policy_.max_attempts) return SendVerdict::kAttemptsExhausted;
  if (sent > 0 && throttle_ != nullptr && !throttle_->Allows()) return SendVerdict::kThrottled;
  return SendVerdict::kSend;
}

}  // namespace ringrpc::channel
