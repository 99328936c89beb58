// A resolver's new address list against the old (address_diff.h).
#include "ringrpc/client/channel/address_diff.h"

#include <algorithm>
#include <set>

namespace ringrpc::channel {

bool SameAddressSet(const std::vector<std::string>& before, const std::vector<std::string>& after) {
  return std::set<std::string>(before.begin(), before.end()) ==
         std::set<std::string>(after.begin(), after.end());
}

AddressDiff DiffAddresses(const std::vector<std::string>& before,
                          const std::vector<std::string>& after, bool reattach) {
  AddressDiff d;
  d.keep.reserve(after.size());
  for (const std::string& name : after) {
    auto it = reattach ? before.end() : std::find(before.begin(), before.end(), name);
    d.keep.push_back(it != before.end() ? std::optional<size_t>(it - before.begin())
                                        : std::nullopt);
  }
  for (size_t i = 0; i < before.size(); ++i) {
    if (reattach || std::find(after.begin(), after.end(), before[i]) == after.end()) {
      d.gone.push_back(i);
    }
  }
  return d;
}

}  // namespace ringrpc::channel
