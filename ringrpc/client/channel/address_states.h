// ringrpc/client/channel/address_states.h — what the channel concludes from
// its addresses' connectivity states alone (no sockets, no threads, no
// clock): whether a call that met a failing address has another to try,
// why a pick found nothing, and the channel's own state. Which address a call goes to is the LB
// policy's (ringrpc/client/lb).
//
// Threading: pure functions.
//
//   ConnectivityState s = AggregateState(list.size(), [&](size_t k) {
//     return list[k]->record->state();
//   }, resolved_once);
#ifndef RINGRPC_CLIENT_CHANNEL_ADDRESS_STATES_H_
#define RINGRPC_CLIENT_CHANNEL_ADDRESS_STATES_H_

#include <cstddef>

#include "absl/functional/function_ref.h"
#include "ringrpc/client/channel/connectivity_state.h"

namespace ringrpc::channel {

// The state of address k of n.
using StateOf = absl::FunctionRef<ConnectivityState(size_t)>;
// Some address of the `n` other than `except` is not in TRANSIENT_FAILURE
// (a pick that met a failing address may try again).
bool AnotherUsable(size_t n, size_t except, StateOf state_of);

// One address as a pick that found nothing reads it: its connection
// state and what its health check (gRFC A17) last heard.
enum class HealthReading { kUnchecked, kUnknown, kServing, kNotServing };
struct AddressReading {
  ConnectivityState state = ConnectivityState::kIdle;
  HealthReading health = HealthReading::kUnchecked;
};
// The addresses of a pick that found nothing, each counted once:
// unreachable (TRANSIENT_FAILURE, whatever its health), else usable (no
// health check, or SERVING), waiting (no health answer yet), not_serving.
struct NoPickCounts {
  enum Kind {
    kUsable,         // one may take the call now: pick again
    kHealthPending,  // none may, one waits for its first answer: wait
    kNone,           // none may: fail (or wait_for_ready)
  };
  int usable = 0, waiting = 0, not_serving = 0, unreachable = 0;
  Kind kind() const { return usable > 0 ? kUsable : waiting > 0 ? kHealthPending : kNone; }
};
NoPickCounts CountNoPick(size_t n, absl::FunctionRef<AddressReading(size_t)> reading_of);

// The channel's state from its addresses' (gRPC's aggregation): READY if
// any is, else CONNECTING if any is, else IDLE if any is, else
// TRANSIENT_FAILURE. With no addresses: IDLE before the resolver's first
// answer, TRANSIENT_FAILURE after it.
ConnectivityState AggregateState(size_t n, StateOf state_of, bool resolved_once);

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_ADDRESS_STATES_H_
