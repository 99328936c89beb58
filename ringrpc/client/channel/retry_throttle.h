// ringrpc/client/channel/retry_throttle.h — gRFC A6's retry throttling for one
// channel: a token count every CQ thread shares. A retryable failure takes
// a token; a success gives back tokenRatio; retries stop while the count is
// at or below half of maxTokens.
//
// Threading: any thread; no lock. A success when the bucket is full (the
// common case) is one relaxed load; the rest are compare-exchange loops on
// one atomic, taken only when a call fails or the bucket is refilling.
#ifndef RINGRPC_CLIENT_CHANNEL_RETRY_THROTTLE_H_
#define RINGRPC_CLIENT_CHANNEL_RETRY_THROTTLE_H_

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "ringrpc/client/channel/service_config.h"

namespace ringrpc::channel {

class RetryThrottle {
 public:
  explicit RetryThrottle(const RetryThrottling& t)
      : max_(t.max_tokens_milli), ratio_(t.token_ratio_milli), tokens_(t.max_tokens_milli) {}

  // A retryable failure: takes a token. False when retries are throttled.
  bool RecordFailure() {
    int64_t cur = tokens_.load(std::memory_order_relaxed);
    int64_t next;
    do {
      next = std::max<int64_t>(0, cur - 1000);
    } while (!tokens_.compare_exchange_weak(cur, next, std::memory_order_relaxed));
    return next > max_ / 2;
  }
  void RecordSuccess() {
    int64_t cur = tokens_.load(std::memory_order_relaxed);
    while (cur < max_ && !tokens_.compare_exchange_weak(cur, std::min(max_, cur + ratio_),
                                                        std::memory_order_relaxed)) {
    }
  }
  // A hedged attempt after the first may be sent (tokens above half).
  bool Allows() const { return tokens_.load(std::memory_order_relaxed) > max_ / 2; }
  int64_t tokens_milli() const { return tokens_.load(std::memory_order_relaxed); }

 private:
  const int64_t max_;
  const int64_t ratio_;
  std::atomic<int64_t> tokens_;
};

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_RETRY_THROTTLE_H_
