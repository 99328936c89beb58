// client/resolver.h — how a channel learns its addresses: the interface
// to plug in your own discovery (CreateChannelWithResolver), and a manual
// resolver you push address lists into (tests, or discovery you drive).
// The resolvers ringrpc picks from a target (static ipv4:/ipv6:/unix:
// lists, DNS) are in client/channel/resolver.h.
//
// Threading: a resolver may call its listener from any thread, but never
// two calls at once and never after Shutdown() returns. ManualResolver's
// methods may be called from any thread.
//
//   auto r = std::make_shared<ManualResolver>();
//   auto channel = CreateChannelWithResolver("backend", r, args);
//   r->Push(AddressList{*transport::Address::Parse("10.0.0.2:50051")});
#ifndef RINGRPC_CLIENT_RESOLVER_H_
#define RINGRPC_CLIENT_RESOLVER_H_

#include <atomic>
#include <functional>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "client/transport/address.h"

namespace ringrpc {

using AddressList = std::vector<transport::Address>;
using ResolverListener = std::function<void(absl::StatusOr<AddressList>)>;

class Resolver {
 public:
  virtual ~Resolver() = default;
  // Begins resolving; results (or errors) go to `listener`.
  virtual void Start(ResolverListener listener) = 0;
  // A connection failed: resolve again when allowed.
  virtual void RequestReresolution() {}
  // No listener call happens after this returns.
  virtual void Shutdown() = 0;
};

// Tests push updates; each Push reaches the listener at once.
class ManualResolver final : public Resolver {
 public:
  void Start(ResolverListener listener) override;
  void Push(absl::StatusOr<AddressList> update);
  void RequestReresolution() override { ++reresolution_requests_; }
  void Shutdown() override;
  int reresolution_requests() const { return reresolution_requests_; }

 private:
  Mutex mu_;
  ResolverListener listener_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::StatusOr<AddressList>> pending_ ABSL_GUARDED_BY(mu_);  // pushed before Start
  std::atomic<int> reresolution_requests_{0};
};

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_RESOLVER_H_
