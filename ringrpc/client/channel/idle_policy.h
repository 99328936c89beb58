// ringrpc/client/channel/idle_policy.h — when a channel goes idle
// (grpc.client_idle_timeout_ms), on plain time points and counts: quiet
// is no lease taken (every call takes one) and none held since the last
// look; quiet for the timeout puts the channel idle (its connections
// close, its state is IDLE; the next call leaves it). Looks come every
// quarter of the timeout, so a channel is idle after 1 to 1.25 timeouts of
// quiet. The execution (a task on CQ thread 0) is ChannelState::IdleWatch.
//
// Threading: one owner (the watch task).
//
//   IdlePolicy idle(timeout, now);
//   if (idle.Look(m.acquires, m.leases, channel_idle, now)) EnterIdle();
//   sleep until now + idle.every();
#ifndef RINGRPC_CLIENT_CHANNEL_IDLE_POLICY_H_
#define RINGRPC_CLIENT_CHANNEL_IDLE_POLICY_H_

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "ringrpc/base/time.h"

namespace ringrpc::channel {

class IdlePolicy {
 public:
  IdlePolicy(Duration timeout, TimePoint now) : timeout_(timeout), quiet_since_(now) {}
  // How often to look.
  Duration every() const { return std::max<Duration>(timeout_ / 4, std::chrono::milliseconds(5)); }
  // A look at the channel's pools: `acquires` leases taken in all, `leases`
  // held now; `idle` whether the channel is idle already. True: it goes
  // idle now.
  bool Look(uint64_t acquires, uint64_t leases, bool idle, TimePoint now) {
    if (acquires != last_acquires_ || leases != 0) {
      last_acquires_ = acquires;
      quiet_since_ = now;
      return false;
    }
    return !idle && now - quiet_since_ >= timeout_;
  }

 private:
  const Duration timeout_;
  uint64_t last_acquires_ = ~uint64_t{0};  // the first look starts the quiet
  TimePoint quiet_since_;
};

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_IDLE_POLICY_H_
