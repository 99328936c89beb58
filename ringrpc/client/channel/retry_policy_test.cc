#include "ringrpc/client/channel/retry_policy.h"

#include <gtest/gtest.h>

namespace ringrpc::channel {
namespace {

using std::chrono::milliseconds;
using Kind = RetryDecision::Kind;
using Reason = RetryDecision::Reason;

constexpr int kUnavailable = 14;
constexpr int kDeadlineExceeded = 4;
constexpr int kInternal = 13;

RetryPolicy Policy(int max_attempts = 4) {
  RetryPolicy p;
  p.max_attempts = max_attempts;
  p.initial_backoff = milliseconds(100);
  p.max_backoff = milliseconds(300);
  p.backoff_multiplier = 2;
  p.retryable_codes = 1u << kUnavailable;
  return p;
}

AttemptEnd Failed(int code) { return AttemptEnd{.code = code}; }

TEST(RetryState, RetriesARetryableCodeWithJitteredGrowingBackoffUntilMaxAttempts) {
  const RetryPolicy p = Policy(4);
  RetryState r(&p, nullptr, /*seed=*/1);
  // The caps: 100 ms, then x2 = 200 ms, then 400 capped at 300 ms.
  for (Duration cap : {milliseconds(100), milliseconds(200), milliseconds(300)}) {
    RetryDecision d = r.OnAttemptEnded(Failed(kUnavailable));
    ASSERT_EQ(d.kind, Kind::kRetry);
    EXPECT_EQ(d.reason, Reason::kBackoff);
    EXPECT_GE(d.delay, Duration::zero());
    EXPECT_LE(d.delay, cap);
  }
  EXPECT_EQ(r.attempts(), 4);
  RetryDecision last = r.OnAttemptEnded(Failed(kUnavailable));
  EXPECT_EQ(last.kind, Kind::kCommit);
  EXPECT_EQ(last.reason, Reason::kAttemptsExhausted);
}

TEST(RetryState, JitterIsUniformOverZeroToTheCap) {
  const RetryPolicy p = Policy(2);
  double sum = 0;
  const int n = 2000;
  for (int seed = 0; seed < n; ++seed) {
    RetryState r(&p, nullptr, seed);
    RetryDecision d = r.OnAttemptEnded(Failed(kUnavailable));
    ASSERT_LE(d.delay, milliseconds(100));
    sum += std::chrono::duration<double, std::milli>(d.delay).count();
  }
  EXPECT_NEAR(sum / n, 50.0, 5.0);
}

TEST(RetryState, CommitsOnSuccessTheServersAnswerOrACodeNotListed) {
  const RetryPolicy p = Policy();
  RetryState ok(&p, nullptr);
  EXPECT_EQ(ok.OnAttemptEnded(Failed(0)).reason, Reason::kSucceeded);
  RetryState answered(&p, nullptr);
  EXPECT_EQ(answered.OnAttemptEnded({.code = kUnavailable, .server_answered = true}).reason,
            Reason::kServerAnswered);
  RetryState other(&p, nullptr);
  RetryDecision d = other.OnAttemptEnded(Failed(kInternal));
  EXPECT_EQ(d.kind, Kind::kCommit);
  EXPECT_EQ(d.reason, Reason::kNotRetryable);
}

TEST(RetryState, TransparentRetryOnceAndNotCountedAgainstMaxAttempts) {
  const RetryPolicy p = Policy(2);
  RetryState r(&p, nullptr);
  RetryDecision d = r.OnAttemptEnded({.code = kUnavailable, .never_sent = true});
  EXPECT_TRUE(d.retry());
  EXPECT_TRUE(d.transparent());
  EXPECT_EQ(d.delay, Duration::zero());
  EXPECT_EQ(r.attempts(), 1);
  // The second never-sent attempt goes through the policy.
  d = r.OnAttemptEnded({.code = kUnavailable, .never_sent = true});
  EXPECT_EQ(d.reason, Reason::kBackoff);
  EXPECT_EQ(r.attempts(), 2);
  EXPECT_EQ(r.OnAttemptEnded({.code = kUnavailable, .never_sent = true}).reason,
            Reason::kAttemptsExhausted);
}

TEST(RetryState, WithoutAPolicyOnlyTheTransparentRetry) {
  RetryState r(nullptr, nullptr);
  EXPECT_TRUE(r.OnAttemptEnded({.code = kUnavailable, .never_sent = true}).transparent());
  EXPECT_EQ(r.OnAttemptEnded(Failed(kUnavailable)).reason, Reason::kNotRetryable);
  EXPECT_EQ(r.recv_timeout(), std::nullopt);
}

TEST(RetryState, PushbackSetsTheDelayAndRestartsTheBackoff) {
  const RetryPolicy p = Policy(5);
  RetryState r(&p, nullptr, 3);
  (void)r.OnAttemptEnded(Failed(kUnavailable));  // cap 100 ms, next 200
  (void)r.OnAttemptEnded(Failed(kUnavailable));  // cap 200 ms, next 300
  RetryDecision d =
      r.OnAttemptEnded({.code = kUnavailable, .pushback = Pushback{.after = milliseconds(1234)}});
  EXPECT_EQ(d.reason, Reason::kPushbackDelay);
  EXPECT_EQ(d.delay, milliseconds(1234));
  // Back to initialBackoff's cap.
  d = r.OnAttemptEnded(Failed(kUnavailable));
  EXPECT_EQ(d.reason, Reason::kBackoff);
  EXPECT_LE(d.delay, milliseconds(100));
}

TEST(RetryState, NegativePushbackMeansNoRetry) {
  const RetryPolicy p = Policy();
  RetryState r(&p, nullptr);
  EXPECT_EQ(r.OnAttemptEnded({.code = kUnavailable, .pushback = Pushback{.never = true}}).reason,
            Reason::kPushbackNever);
}

TEST(RetryState, ThrottledWhenTokensFallToHalfAndRefilledBySuccesses) {
  const RetryPolicy p = Policy(5);
  RetryThrottle throttle(RetryThrottling{.max_tokens_milli = 3000, .token_ratio_milli = 1000});
  RetryState a(&p, &throttle);
  EXPECT_TRUE(a.OnAttemptEnded(Failed(kUnavailable)).retry());  // 3 -> 2 tokens
  RetryDecision d = a.OnAttemptEnded(Failed(kUnavailable));     // 2 -> 1: at or below 1.5
  EXPECT_EQ(d.reason, Reason::kThrottled);
  RetryState b(&p, &throttle);
  EXPECT_EQ(b.OnAttemptEnded(Failed(0)).reason, Reason::kSucceeded);  // 1 -> 2
  EXPECT_EQ(throttle.tokens_milli(), 2000);
}

TEST(RetryState, AnAttemptCutOffByPerAttemptRecvTimeoutIsRetriedWhateverTheCodes) {
  RetryPolicy p = Policy(3);
  p.per_attempt_recv_timeout = milliseconds(50);
  RetryState r(&p, nullptr);
  EXPECT_EQ(r.recv_timeout(), milliseconds(50));
  EXPECT_TRUE(r.OnAttemptEnded({.code = kDeadlineExceeded, .recv_timeout = true}).retry());
  EXPECT_TRUE(r.OnAttemptEnded({.code = kDeadlineExceeded, .recv_timeout = true}).retry());
  EXPECT_EQ(r.OnAttemptEnded({.code = kDeadlineExceeded, .recv_timeout = true}).reason,
            Reason::kAttemptsExhausted);
  // The same code without the timeout is not retryable.
  RetryState s(&p, nullptr);
  EXPECT_EQ(s.OnAttemptEnded(Failed(kDeadlineExceeded)).reason, Reason::kNotRetryable);
}

TEST(ParsePushback, DigitsAreMillisecondsAnythingElseMeansNever) {
  EXPECT_EQ(ParsePushback({}), std::nullopt);
  EXPECT_EQ(ParsePushback({{"grpc-status", "14"}}), std::nullopt);
  std::optional<Pushback> p = ParsePushback({{"grpc-retry-pushback-ms", "250"}});
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->never);
  EXPECT_EQ(p->after, milliseconds(250));
  for (const char* bad : {"", "-1", "1.5", "12345678901", " 5"}) {
    std::optional<Pushback> q = ParsePushback({{"grpc-retry-pushback-ms", bad}});
    ASSERT_TRUE(q) << bad;
    EXPECT_TRUE(q->never) << bad;
  }
}

HedgingPolicy Hedging(int max_attempts = 3) {
  HedgingPolicy h;
  h.max_attempts = max_attempts;
  h.hedging_delay = milliseconds(10);
  h.non_fatal_codes = 1u << kUnavailable;
  return h;
}

TEST(HedgingState, AnAnswerOkOrFatalStatusDecidesANonFatalOneSendsTheNextCopy) {
  const HedgingPolicy h = Hedging();
  HedgingState s(h, nullptr);
  using V = HedgingState::CopyVerdict;
  EXPECT_EQ(s.OnCopyEnded(Failed(0)).verdict, V::kDecides);
  EXPECT_EQ(s.OnCopyEnded(Failed(kInternal)).verdict, V::kDecides);
  EXPECT_EQ(s.OnCopyEnded({.code = kUnavailable, .server_answered = true}).verdict, V::kDecides);
  EXPECT_EQ(s.OnCopyEnded(Failed(kUnavailable)).verdict, V::kNextNow);
  // Never seen by the server: never fatal.
  EXPECT_EQ(s.OnCopyEnded({.code = kInternal, .never_sent = true}).verdict, V::kNextNow);
  HedgingState::CopyDecision d =
      s.OnCopyEnded({.code = kUnavailable, .pushback = Pushback{.after = milliseconds(70)}});
  EXPECT_EQ(d.verdict, V::kNextAfter);
  EXPECT_EQ(d.delay, milliseconds(70));
  EXPECT_EQ(s.OnCopyEnded({.code = kUnavailable, .pushback = Pushback{.never = true}}).verdict,
            V::kNoMore);
}

TEST(HedgingState, CopiesStopAtMaxAttemptsOrWhenThrottled) {
  const HedgingPolicy h = Hedging(3);
  using S = HedgingState::SendVerdict;
  HedgingState s(h, nullptr);
  EXPECT_EQ(s.MaySend(0), S::kSend);
  EXPECT_EQ(s.MaySend(2), S::kSend);
  EXPECT_EQ(s.MaySend(3), S::kAttemptsExhausted);
  RetryThrottle throttle(RetryThrottling{.max_tokens_milli = 2000, .token_ratio_milli = 500});
  HedgingState t(h, &throttle);
  EXPECT_EQ(t.OnCopyEnded(Failed(kUnavailable)).verdict, HedgingState::CopyVerdict::kNextNow);
  // 1 token of 2: at half, so only the first copy may go.
  EXPECT_EQ(t.MaySend(0), S::kSend);
  EXPECT_EQ(t.MaySend(1), S::kThrottled);
  // A winning copy gives tokens back.
  EXPECT_EQ(t.OnCopyEnded(Failed(0)).verdict, HedgingState::CopyVerdict::kDecides);
  EXPECT_EQ(throttle.tokens_milli(), 1500);
  EXPECT_EQ(t.MaySend(1), S::kSend);
}

}  // namespace
}  // namespace ringrpc::channel
