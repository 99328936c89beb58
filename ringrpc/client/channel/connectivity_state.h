// ringrpc/client/channel/connectivity_state.h — the connectivity state of an
// address or a channel, inside the channel (the public enum is
// ringrpc::ConnectivityState in ringrpc/client/channel.h; ringrpc/client/channel.cc
// converts between them).
//
//   ConnectivityState s = record.state();
//   std::printf("%s\n", ConnectivityStateName(s));
#ifndef RINGRPC_CLIENT_CHANNEL_CONNECTIVITY_STATE_H_
#define RINGRPC_CLIENT_CHANNEL_CONNECTIVITY_STATE_H_

namespace ringrpc::channel {

enum class ConnectivityState { kIdle, kConnecting, kReady, kTransientFailure, kShutdown };

// "IDLE", "CONNECTING", "READY", "TRANSIENT_FAILURE" or "SHUTDOWN".
const char* ConnectivityStateName(ConnectivityState s);

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_CONNECTIVITY_STATE_H_
