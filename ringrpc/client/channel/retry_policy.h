// ringrpc/client/channel/retry_policy.h — gRFC A6's decisions for one call, as
// policies with no socket and no clock of their own: after an attempt of a
// retried call ends, commit it or send another after a delay
// (RetryState); after a copy of a hedged call ends, let it decide the call
// or send the next copy (HedgingState). Unary calls, streams and hedging
// all decide here; ringrpc/client/ only executes (waits, opens, replays).
//
// What the policies see of an attempt is an AttemptEnd: its status code,
// whether the server answered (its initial metadata: the call is
// committed), whether the server never saw it (transparent retry), the
// server's pushback, and whether it was cut off by perAttemptRecvTimeout.
// Jitter comes from a generator the caller may seed (tests replay it).
//
// Threading: one call's state, on the call's CQ thread; the RetryThrottle
// it points to is the channel's and is shared (atomic).
//
//   RetryState retry(policy, throttle);
//   ... the attempt ended:
//   RetryDecision d = retry.OnAttemptEnded(end);
//   d.kind == kRetry: wait d.delay (within the deadline), open the next
//   attempt; kCommit: the attempt's status is the call's.
#ifndef RINGRPC_CLIENT_CHANNEL_RETRY_POLICY_H_
#define RINGRPC_CLIENT_CHANNEL_RETRY_POLICY_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "ringrpc/base/random.h"
#include "ringrpc/base/time.h"
#include "ringrpc/client/channel/retry_throttle.h"
#include "ringrpc/client/channel/service_config.h"
#include "ringrpc/client/transport/metadata.h"

namespace ringrpc::channel {

// The server's grpc-retry-pushback-ms (A6). nullopt: none sent.
struct Pushback {
  bool never = false;  // negative or malformed: "do not retry"
  Duration after{};    // otherwise: the next attempt no sooner than this
};
std::optional<Pushback> ParsePushback(const transport::Metadata& trailing);

// How one attempt (or hedged copy) ended, as the policies need it.
struct AttemptEnd {
  int code = 0;                      // the gRPC status code (0: OK)
  bool server_answered = false;      // its initial metadata arrived
  bool never_sent = false;           // the server never processed it
  bool recv_timeout = false;         // perAttemptRecvTimeout cut it off
  std::optional<Pushback> pushback;  // the server's
};

struct RetryDecision {
  enum class Kind {
    kCommit,  // the attempt's status is the call's
    kRetry,   // another attempt after `delay`
  };
  // Why (for counters and tests).
  enum class Reason {
    kSucceeded,          // OK
    kServerAnswered,     // the server committed the call
    kNotRetryable,       // no policy, or its code is not retryable
    kThrottled,          // the channel's retry tokens ran low
    kAttemptsExhausted,  // maxAttempts reached
    kPushbackNever,      // the server said not to retry
    kTransparent,        // never processed: sent again at once (kRetry)
    kBackoff,            // retried after a jittered backoff (kRetry)
    kPushbackDelay,      // retried after the server's pushback (kRetry)
  };
  Kind kind = Kind::kCommit;
  Reason reason = Reason::kNotRetryable;
  Duration delay{};

  bool retry() const { return kind == Kind::kRetry; }
  bool transparent() const { return reason == Reason::kTransparent; }
};
std::string_view RetryReasonName(RetryDecision::Reason r);

// One retried call (unary or stream): gRFC A6's retryPolicy, its
// throttling, and the transparent retry of a stream the server never saw
// (once per call, not counted against maxAttempts).
class RetryState {
 public:
  // `policy` null: transparent retries only; `throttle` null: none.
  RetryState(const RetryPolicy* policy, RetryThrottle* throttle, uint64_t seed = RandomSeed())
      : policy_(policy),
        throttle_(throttle),
        backoff_(policy != nullptr ? policy->initial_backoff : Duration::zero()),
        rng_(seed) {}

  RetryDecision OnAttemptEnded(const AttemptEnd& end);
  // Attempts the policy counts so far, the current one included.
  int attempts() const { return attempts_; }
  // The per-attempt limit on waiting for the server's first answer
  // (perAttemptRecvTimeout), if the policy has one.
  std::optional<Duration> recv_timeout() const {
    return policy_ != nullptr ? policy_->per_attempt_recv_timeout : std::nullopt;
  }

 private:
  RetryDecision Commit(RetryDecision::Reason r) const { return {.reason = r}; }

  const RetryPolicy* policy_;
  RetryThrottle* throttle_;
  int attempts_ = 1;
  bool transparent_used_ = false;
  Duration backoff_;  // the cap of the next jittered backoff
  Random rng_;
};

// One hedged unary call: gRFC A6's hedgingPolicy. Copies go out
// hedgingDelay apart (or at once after a non-fatal failure, or after the
// server's pushback); the first answer, an OK or a fatal status decides.
class HedgingState {
 public:
  HedgingState(const HedgingPolicy& policy, RetryThrottle* throttle)
      : policy_(policy), throttle_(throttle) {}

  enum class CopyVerdict {
    kDecides,    // this copy's status (and answer) is the call's
    kNextNow,    // non-fatal: the next copy goes at once
    kNextAfter,  // non-fatal, with the server's pushback: next after `delay`
    kNoMore,     // non-fatal, but the server said not to retry: no more copies
  };
  struct CopyDecision {
    CopyVerdict verdict = CopyVerdict::kDecides;
    Duration delay{};  // with kNextAfter
  };
  // A copy that may still decide the call ended (a copy that lost to
  // another is not reported). Records the throttle's success or failure.
  CopyDecision OnCopyEnded(const AttemptEnd& end);
  enum class SendVerdict {
    kSend,               // the next copy may go
    kAttemptsExhausted,  // maxAttempts copies went
    kThrottled,          // the channel's retry tokens are at or below half
  };
  // Whether copy number `sent + 1` may go: below maxAttempts and, after the
  // first, while the throttle has tokens.
  SendVerdict MaySend(int sent) const;
  Duration hedging_delay() const { return policy_.hedging_delay; }

 private:
  const HedgingPolicy& policy_;
  RetryThrottle* throttle_;
};

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_RETRY_POLICY_H_
