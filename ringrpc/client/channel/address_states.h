// ringrpc/client/channel/address_states.h — what the channel concludes from
// its addresses' connectivity states alone (no sockets, no threads, no
// clock): whether a call that met a failing address has another to try,
// and the channel's own state. Which address a call goes to is the LB
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

// The channel's state from its addresses' (gRPC's aggregation): READY if
// any is, else CONNECTING if any is, else IDLE if any is, else
// TRANSIENT_FAILURE. With no addresses: IDLE before the resolver's first
// answer, TRANSIENT_FAILURE after it.
ConnectivityState AggregateState(size_t n, StateOf state_of, bool resolved_once);

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_ADDRESS_STATES_H_
