#include "ringrpc/client/channel/connectivity_state.h"

namespace ringrpc::channel {

const char* ConnectivityStateName(ConnectivityState s) {
  switch (s) {
    case ConnectivityState::kIdle:
      return "IDLE";
    case ConnectivityState::kConnecting:
      return "CONNECTING";
    case ConnectivityState::kReady:
      return "READY";
    case ConnectivityState::kTransientFailure:
      return "TRANSIENT_FAILURE";
    case ConnectivityState::kShutdown:
      return "SHUTDOWN";
  }
  return "?";
}

}  // namespace ringrpc::channel
