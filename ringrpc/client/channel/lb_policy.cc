#include "ringrpc/client/channel/lb_policy.h"

#include "ringrpc/base/random.h"

namespace ringrpc::channel {

std::optional<size_t> AddressPicker::Pick(size_t n, StateOf state_of) {
  if (n == 0) return std::nullopt;
  auto usable = [&](size_t i) { return state_of(i) != ConnectivityState::kTransientFailure; };
  if (policy_ == LbPolicy::kPickFirst) {
    for (size_t i = 0; i < n; ++i) {
      if (state_of(i) == ConnectivityState::kReady) return i;
    }
    for (size_t i = 0; i < n; ++i) {
      if (usable(i)) return i;
    }
    return 0;
  }
  // round_robin rotates over every address that is not failing (gRPC's
  // connects all eagerly, then rotates over READY ones; a READY-first
  // rotation here starved the lazily connected backends).
  for (size_t k = 0; k < n; ++k) {
    size_t i = (next_ + k) % n;
    if (usable(i)) {
      next_ = (i + 1) % n;
      return i;
    }
  }
  return next_++ % n;
}

std::optional<size_t> AddressPicker::Pick(size_t n, StateOf state_of, LoadOf load_of) {
  if (policy_ != LbPolicy::kLeastRequest) return Pick(n, state_of);
  if (n == 0) return std::nullopt;
  std::optional<size_t> best;
  uint32_t best_load = 0;
  // Draws among the usable addresses; if none is usable, among all.
  const bool any_usable = AnotherUsable(n, n, state_of);
  for (int drawn = 0, tries = 0; drawn < choice_count_ && tries < 4 * choice_count_ + 8; ++tries) {
    const size_t i = NextRandom(rng_) % n;
    if (any_usable && state_of(i) == ConnectivityState::kTransientFailure) continue;
    ++drawn;
    const uint32_t load = load_of(i);
    if (!best || load < best_load) {
      best = i;
      best_load = load;
    }
  }
  if (!best) {  // unlucky draws: the first usable one
    for (size_t i = 0; i < n; ++i) {
      if (state_of(i) != ConnectivityState::kTransientFailure) return i;
    }
    return 0;
  }
  return best;
}

bool AnotherUsable(size_t n, size_t except, StateOf state_of) {
  for (size_t i = 0; i < n; ++i) {
    if (i != except && state_of(i) != ConnectivityState::kTransientFailure) return true;
  }
  return false;
}

ConnectivityState AggregateState(size_t n, StateOf state_of, bool resolved_once) {
  if (n == 0) {
    // Before the resolver's first answer the channel is starting, not
    // failing.
    return resolved_once ? ConnectivityState::kTransientFailure : ConnectivityState::kIdle;
  }
  bool connecting = false, idle = false;
  for (size_t i = 0; i < n; ++i) {
    switch (state_of(i)) {
      case ConnectivityState::kReady:
        return ConnectivityState::kReady;
      case ConnectivityState::kConnecting:
        connecting = true;
        break;
      case ConnectivityState::kIdle:
        idle = true;
        break;
      case ConnectivityState::kTransientFailure:
      case ConnectivityState::kShutdown:
        break;
    }
  }
  if (connecting) return ConnectivityState::kConnecting;
  if (idle) return ConnectivityState::kIdle;
  return ConnectivityState::kTransientFailure;
}

}  // namespace ringrpc::channel
