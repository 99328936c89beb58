#include "ringrpc/client/transport/keepalive.h"

namespace ringrpc::transport {

bool KeepalivePolicy::OnFrameReceived(TimePoint now) {
  if (!awaiting_ack_) return false;
  awaiting_ack_ = false;
  deadline_ = now + settings_.time;
  return true;
}

KeepalivePolicy::Action KeepalivePolicy::OnTimer(TimePoint now, bool has_calls) {
  if (awaiting_ack_) return Action::kDeclareDead;
  bool allowed = has_calls || settings_.permit_without_calls;
  if (allowed && (settings_.max_pings_without_data == 0 ||
                  pings_without_data_ < settings_.max_pings_without_data)) {
    ++pings_without_data_;
    awaiting_ack_ = true;
    deadline_ = now + settings_.timeout;
    return Action::kSendPing;
  }
  deadline_ = now + settings_.time;
  return Action::kWait;
}

std::string_view KeepaliveActionName(KeepalivePolicy::Action a) {
  switch (a) {
    case KeepalivePolicy::Action::kWait:
      return "wait";
    case KeepalivePolicy::Action::kSendPing:
      return "send-ping";
    case KeepalivePolicy::Action::kDeclareDead:
      return "declare-dead";
  }
  return "?";
}

}  // namespace ringrpc::transport
