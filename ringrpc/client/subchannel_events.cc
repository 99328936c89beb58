#include "ringrpc/client/subchannel_events.h"

namespace ringrpc {

const char* SubchannelEventKindName(SubchannelEvent::Kind kind) {
  switch (kind) {
    case SubchannelEvent::Kind::kInit:
      return "init";
    case SubchannelEvent::Kind::kAttach:
      return "attach";
    case SubchannelEvent::Kind::kDetach:
      return "detach";
    case SubchannelEvent::Kind::kClose:
      return "close";
    case SubchannelEvent::Kind::kConnect:
      return "connect";
    case SubchannelEvent::Kind::kConnectFailed:
      return "connect_failed";
    case SubchannelEvent::Kind::kRetire:
      return "retire";
    case SubchannelEvent::Kind::kPark:
      return "park";
    case SubchannelEvent::Kind::kUnpark:
      return "unpark";
    case SubchannelEvent::Kind::kHealth:
      return "health";
    case SubchannelEvent::Kind::kConnectionLost:
      return "connection_lost";
  }
  return "?";
}

}  // namespace ringrpc
