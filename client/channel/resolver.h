// client/channel/resolver.h — how a channel learns its addresses. A public
// interface (plug in your own discovery), plus the resolvers ringrpc ships:
// static (ipv4:, ipv6:, unix:), DNS (getaddrinfo on its own thread, never
// on a CQ thread, re-resolving on request but no more often than the
// configured minimum interval), and a manual one that tests drive.
//
// Threading: a resolver may call its listener from any thread, but never
// two calls at once and never after Shutdown() returns.
//
//   auto r = std::make_shared<ManualResolver>();
//   ... CreateChannelWithResolver(r, ...);
//   r->Push({addr_b});   // the channel switches to B, bumping its generation
#ifndef RINGRPC_CLIENT_CHANNEL_RESOLVER_H_
#define RINGRPC_CLIENT_CHANNEL_RESOLVER_H_

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "base/time.h"
#include "client/transport/address.h"

namespace ringrpc::channel {

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

// A fixed list, delivered once.
class StaticResolver final : public Resolver {
 public:
  explicit StaticResolver(AddressList addresses) : addresses_(std::move(addresses)) {}
  void Start(ResolverListener listener) override { listener(addresses_); }
  void Shutdown() override {}

 private:
  AddressList addresses_;
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
