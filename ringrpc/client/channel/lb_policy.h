// ringrpc/client/channel/lb_policy.h — which address a new call goes to, and what
// the channel's connectivity state is, decided from the addresses'
// connectivity states alone: no sockets, no threads, no clock.
//
// The channel keeps one AddressPicker per CQ thread (its round-robin
// cursor is that thread's); the states come from the address records every
// thread shares, so READY means some thread has a connection there.
//
// Threading: an AddressPicker belongs to one thread. The free functions
// are pure.
//
//   AddressPicker picker(LbPolicy::kRoundRobin);
//   std::optional<size_t> i = picker.Pick(list.size(), [&](size_t k) {
//     return list[k]->record->state();
//   });
#ifndef RINGRPC_CLIENT_CHANNEL_LB_POLICY_H_
#define RINGRPC_CLIENT_CHANNEL_LB_POLICY_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/functional/function_ref.h"
#include "ringrpc/client/channel/channel_config.h"
#include "ringrpc/client/channel/connectivity_state.h"

namespace ringrpc::channel {

// The state of address k of n.
using StateOf = absl::FunctionRef<ConnectivityState(size_t)>;
// Calls outstanding on address k of n (least_request).
using LoadOf = absl::FunctionRef<uint32_t(size_t)>;

class AddressPicker {
 public:
  explicit AddressPicker(LbPolicy policy, int choice_count = 2, uint64_t seed = 0x5eed)
      : policy_(policy), choice_count_(choice_count), rng_(seed) {}

  // The address for the next call among `n`, or nullopt when n == 0.
  // pick_first: the first READY address, else the first not in
  // TRANSIENT_FAILURE, else the first. round_robin: the next address from
  // this picker's cursor that is not in TRANSIENT_FAILURE (IDLE ones
  // included: ours connect lazily, per thread, so an IDLE address is one
  // this rotation is about to connect), else simply the next one.
  std::optional<size_t> Pick(size_t n, StateOf state_of);
  // least_request (gRFC A48, power of `choice_count` choices): that many
  // random addresses not in TRANSIENT_FAILURE, the one with the fewest
  // outstanding calls (the first drawn on a tie). Other policies ignore
  // `load_of`.
  std::optional<size_t> Pick(size_t n, StateOf state_of, LoadOf load_of);

  LbPolicy policy() const { return policy_; }
  int choice_count() const { return choice_count_; }
  // A new address list: the cursor starts over.
  void Reset() { next_ = 0; }

 private:
  LbPolicy policy_;
  int choice_count_;
  size_t next_ = 0;  // round_robin: where the next pick starts looking
  uint64_t rng_;     // least_request: NextRandom's state (ringrpc/base/random.h)
};

// Some address of the `n` other than `except` is not in TRANSIENT_FAILURE
// (a pick that met a failing address may try again).
bool AnotherUsable(size_t n, size_t except, StateOf state_of);

// The channel's state from its addresses' (gRPC's aggregation): READY if
// any is, else CONNECTING if any is, else IDLE if any is, else
// TRANSIENT_FAILURE. With no addresses: IDLE before the resolver's first
// answer, TRANSIENT_FAILURE after it.
ConnectivityState AggregateState(size_t n, StateOf state_of, bool resolved_once);

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_LB_POLICY_H_
