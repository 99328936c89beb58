// ringrpc/client/transport/keepalive.h — when a connection sends a keepalive PING
// and when it gives the peer up for dead (gRPC keepalive.md), as a policy
// with no socket and no clock of its own.
//
// The connection feeds it events (a frame received, DATA or HEADERS sent)
// and asks it, when its single timer fires, what to do now and when to ask
// again. Keepalive time counts from the last PING's answer (or the start);
// a PING unanswered for keepalive_timeout declares the peer dead. With no
// calls, PINGs go out only when permit_without_calls; at most
// max_pings_without_data PINGs go out between two DATA/HEADERS frames sent
// (0: no limit).
//
// Threading: owned by its connection's loop thread.
//
//   KeepalivePolicy ka(settings, loop.Now());
//   timer.Schedule(ka.deadline());
//   ... on the timer: KeepalivePolicy::Action a = ka.OnTimer(now, has_calls);
//       a == kSendPing: send one; kDeclareDead: close; then
//       timer.Schedule(ka.deadline()) unless dead.
#ifndef RINGRPC_CLIENT_TRANSPORT_KEEPALIVE_H_
#define RINGRPC_CLIENT_TRANSPORT_KEEPALIVE_H_

#include <string_view>

#include "ringrpc/base/time.h"

namespace ringrpc::transport {

struct KeepaliveSettings {
  Duration time{};     // between PINGs; > 0
  Duration timeout{};  // to wait for a PING's answer
  bool permit_without_calls = false;
  int max_pings_without_data = 2;  // 0: no limit
};

class KeepalivePolicy {
 public:
  enum class Action {
    kWait,         // nothing now; come back at deadline()
    kSendPing,     // send one PING now; come back at deadline()
    kDeclareDead,  // the PING went unanswered: close the connection
  };

  KeepalivePolicy(KeepaliveSettings settings, TimePoint now)
      : settings_(settings), deadline_(now + settings.time) {}

  // When the connection's timer should next call OnTimer().
  TimePoint deadline() const { return deadline_; }
  // A PING is out and unanswered: the connection is not quiescent.
  bool awaiting_ack() const { return awaiting_ack_; }
  int pings_without_data() const { return pings_without_data_; }

  // A frame from the peer proves it alive. True when that moved deadline()
  // (a PING was out: the next one is keepalive time from now).
  bool OnFrameReceived(TimePoint now);
  // A DATA or HEADERS frame went out: PINGs are allowed again.
  void OnDataSent() { pings_without_data_ = 0; }
  // The timer fired at `now` (at or after deadline()).
  Action OnTimer(TimePoint now, bool has_calls);
  // The connection was off its loop (parked) and is back at `now`: no PING
  // is out; the next is keepalive time away. The count of PINGs without
  // data carries over.
  void Restart(TimePoint now) {
    awaiting_ack_ = false;
    deadline_ = now + settings_.time;
  }

 private:
  KeepaliveSettings settings_;
  TimePoint deadline_;
  bool awaiting_ack_ = false;
  int pings_without_data_ = 0;
};

std::string_view KeepaliveActionName(KeepalivePolicy::Action a);

}  // namespace ringrpc::transport

#endif  // RINGRPC_CLIENT_TRANSPORT_KEEPALIVE_H_
