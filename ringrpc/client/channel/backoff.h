// ringrpc/client/channel/backoff.h — gRPC's connection backoff (connection-backoff
// .md): initial 1 s, x1.6, jitter 0.2, at most 120 s; a connect attempt is
// given at least min_connect_timeout (20 s). Pure: the caller supplies the
// random numbers, so tests are exact.
//
//   ConnectionBackoff b(config);
//   Duration wait = b.NextDelay(rng());   // after a failed attempt
//   b.Reset();                            // after the server's SETTINGS
#ifndef RINGRPC_CLIENT_CHANNEL_BACKOFF_H_
#define RINGRPC_CLIENT_CHANNEL_BACKOFF_H_

#include <algorithm>
#include <cstdint>

#include "ringrpc/base/time.h"
#include "ringrpc/client/channel/channel_config.h"

namespace ringrpc::channel {

class ConnectionBackoff {
 public:
  explicit ConnectionBackoff(const BackoffConfig& c) : c_(c), current_(c.initial) {}

  // The wait before the next attempt: the current backoff with jitter
  // (uniform in [-jitter, +jitter] of it, from `random`), then the backoff
  // grows by the multiplier up to max.
  Duration NextDelay(uint64_t random) {
    double u = static_cast<double>(random >> 11) * 0x1.0p-53;  // [0, 1)
    double factor = 1.0 + c_.jitter * (2.0 * u - 1.0);
    Duration delay = std::chrono::duration_cast<Duration>(current_ * factor);
    auto grown = std::chrono::duration_cast<Duration>(current_ * c_.multiplier);
    current_ = std::min(grown, c_.max);
    return delay;
  }
  void Reset() { current_ = c_.initial; }
  Duration current() const { return current_; }
  // How long a connect attempt may take: max(min_connect_timeout, backoff).
  Duration ConnectDeadline() const { return std::max(c_.min_connect_timeout, current_); }

 private:
  BackoffConfig c_;
  Duration current_;
};

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_BACKOFF_H_
