// client/channel/resolver.h — the resolvers a channel picks from its
// target (the interface and the manual resolver are public, in
// client/resolver.h): static (ipv4:, ipv6:, unix:), delivered once, and
// DNS (getaddrinfo on its own thread, never on a CQ thread, re-resolving on
// request but no more often than the configured minimum interval).
//
// Threading: as for every Resolver (client/resolver.h).
//
//   auto r = std::make_shared<DnsResolver>("svc.local", 50051, seconds(30));
//   r->Start([](absl::StatusOr<AddressList> update) { ... });
#ifndef RINGRPC_CLIENT_CHANNEL_RESOLVER_H_
#define RINGRPC_CLIENT_CHANNEL_RESOLVER_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "base/time.h"
#include "client/resolver.h"
#include "client/transport/address.h"

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

// getaddrinfo on a thread of its own.
class DnsResolver final : public Resolver {
 public:
  DnsResolver(std::string host, uint16_t port, Duration min_interval);
  ~DnsResolver() override;
  void Start(ResolverListener listener) override;
  void RequestReresolution() override;
  void Shutdown() override;
  int resolutions() const { return resolutions_; }

 private:
  void Loop();

  const std::string host_;
  const uint16_t port_;
  const Duration min_interval_;
  Mutex mu_;
  CondVar cv_;
  bool requested_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  ResolverListener listener_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
  std::atomic<int> resolutions_{0};
};

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_RESOLVER_H_
