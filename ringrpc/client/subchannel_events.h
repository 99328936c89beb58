// ringrpc/client/subchannel_events.h — lifecycle events of a channel's subchannels
// (an address's pooled connections), for a listener the user supplies with
// ChannelArguments::SetSubchannelEventListener.
//
// Threading: OnSubchannelEvent may run on any thread (a CQ thread for
// connection events, the creating or destroying thread for attach/detach),
// so the listener must be thread-safe and quick.
//
//   struct Log : ringrpc::SubchannelEventListener {
//     void OnSubchannelEvent(const ringrpc::SubchannelEvent& e) override { ... }
//   };
#ifndef RINGRPC_CLIENT_SUBCHANNEL_EVENTS_H_
#define RINGRPC_CLIENT_SUBCHANNEL_EVENTS_H_

#include <string>

namespace ringrpc {

struct SubchannelEvent {
  enum class Kind {
    kInit,            // a subchannel (pool) was created for an address
    kAttach,          // a channel started using it (shared ones: each channel)
    kDetach,          // a channel stopped using it
    kClose,           // the last channel detached: its connections close
    kConnect,         // a connection was made
    kConnectFailed,   // a dial failed
    kRetire,          // a connection was retired (reason says why)
    kPark,            // an idle connection went to the reservoir
    kUnpark,          // and was taken by another thread
    kHealth,          // its health check (gRFC A17) changed its answer:
                      // reason starts with SERVING, NOT_SERVING, UNKNOWN, ...
    kConnectionLost,  // the server ended a connection (GOAWAY) or it failed
                      // (socket error, keepalive timeout): reason says how.
                      // The channel asks its resolver to resolve again.
  };
  Kind kind;
  std::string address;
  std::string reason;  // kRetire: generation, max_lifetime, idle_timeout, ...; kHealth: the answer
};

const char* SubchannelEventKindName(SubchannelEvent::Kind kind);

class SubchannelEventListener {
 public:
  virtual ~SubchannelEventListener() = default;
  virtual void OnSubchannelEvent(const SubchannelEvent& event) = 0;
};

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_SUBCHANNEL_EVENTS_H_
