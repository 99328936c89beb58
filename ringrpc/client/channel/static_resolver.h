// ringrpc/client/channel/static_resolver.h — the static resolver a channel picks for
// ipv4:, ipv6:, unix: and unix-abstract: targets (the interface and the
// manual resolver are public, in ringrpc/client/resolver.h; DNS is
// dns_resolver.h): the list, delivered once.
//
// Threading: as for every Resolver (ringrpc/client/resolver.h).
//
//   auto r = std::make_shared<StaticResolver>(AddressList{...});
//   r->Start([](absl::StatusOr<AddressList> update) { ... });
#ifndef RINGRPC_CLIENT_CHANNEL_STATIC_RESOLVER_H_
#define RINGRPC_CLIENT_CHANNEL_STATIC_RESOLVER_H_

#include "ringrpc/client/resolver.h"
#include "ringrpc/client/transport/address.h"

namespace ringrpc::channel {

// A fixed list, delivered once.
class StaticResolver final : public Resolver {
 public:
  explicit StaticResolver(AddressList addresses) : addresses_(std::move(addresses)) {}
  void Start(ResolverListener listener) override { listener(addresses_); }
  void Shutdown() override {}

 private:
  AddressList addresses_;
};

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_STATIC_RESOLVER_H_
