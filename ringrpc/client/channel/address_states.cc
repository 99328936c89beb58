#include "ringrpc/client/channel/address_states.h"

namespace ringrpc::channel {

bool AnotherUsable(size_t n, size_t except, StateOf state_of) {
  for (size_t i = 0; i < n; ++i) {
    if (i != except && state_of(i) != ConnectivityState::kTransientFailure) return true;
  }
  return false;
}

NoPickCounts CountNoPick(size_t n, absl::FunctionRef<AddressReading(size_t)> reading_of) {
  NoPickCounts c;
  for (size_t i = 0; i < n; ++i) {
    const AddressReading r = reading_of(i);
    if (r.state == ConnectivityState::kTransientFailure) {
      ++c.unreachable;
    } else if (r.health == HealthReading::kUnchecked || r.health == HealthReading::kServing) {
      ++c.usable;
    } else if (r.health == HealthReading::kUnknown) {
      ++c.waiting;
    } else {
      ++c.not_serving;
    }
  }
  return c;
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
