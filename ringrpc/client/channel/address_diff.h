// ringrpc/client/channel/address_diff.h — what a resolver's new address
// list keeps of the old one, on the addresses' names alone: which of the
// new addresses carry on with an old subchannel (its connections stay),
// which are new (attached), which old ones went (detached). The channel
// core (ChannelState::OnResolverUpdate) applies it.
//
// Threading: pure functions.
//
//   if (SameAddressSet(before, after)) { /* routing only */ }
//   AddressDiff d = DiffAddresses(before, after, /*reattach=*/false);
#ifndef RINGRPC_CLIENT_CHANNEL_ADDRESS_DIFF_H_
#define RINGRPC_CLIENT_CHANNEL_ADDRESS_DIFF_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace ringrpc::channel {

// The same addresses, whatever their order and repeats.
bool SameAddressSet(const std::vector<std::string>& before, const std::vector<std::string>& after);

struct AddressDiff {
  // One per address of `after`: the index in `before` of the same address
  // (the first, if repeated), whose subchannel it keeps; nullopt: a new
  // subchannel.
  std::vector<std::optional<size_t>> keep;
  // The indexes in `before` of the addresses `after` no longer has.
  std::vector<size_t> gone;
};

// `reattach`: nothing is kept (every address is checked anew, e.g. the
// health-check service changed): all of `before` is gone.
AddressDiff DiffAddresses(const std::vector<std::string>& before,
                          const std::vector<std::string>& after, bool reattach);

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_ADDRESS_DIFF_H_
