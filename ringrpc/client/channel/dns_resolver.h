// ringrpc/client/channel/dns_resolver.h — the `dns` resolver: c-ares (what grpc++
// uses) on a thread of its own, never on a CQ thread.
//
// A and AAAA records (sorted by c-ares as RFC 6724 says), /etc/hosts first;
// an IP literal is itself, and "localhost" and names under it are the
// loopback addresses [::1] and 127.0.0.1, without asking anyone (RFC 6761;
// ResolveLocally below, which channels use to skip this resolver). The DNS server is the system's
// (/etc/resolv.conf) unless the target names one (dns://10.0.0.53:5353/name).
// With request_service_config it also asks for the TXT record
// _grpc_config.<name> (gRFC A2) and delivers the service config it chooses.
//
// It resolves when started, then only when asked (a connection to one of
// its addresses failed or was lost), never more often than min_interval; a
// failed resolution is retried by itself with gRPC's backoff (1 s, x1.6,
// up to 120 s). A query that has no answer within query_timeout fails
// UNAVAILABLE saying so. Shutdown cancels a query in flight.
//
// Threading: as for every Resolver (ringrpc/client/resolver.h): the listener is
// called on the resolver's thread, one call at a time. In a child of the
// process that started it (fork()) it resolves no more (its thread stays
// in the parent) and its shutdown joins nothing.
//
//   auto r = std::make_shared<DnsResolver>("svc.local", 50051, DnsResolver::Options{});
//   r->Start([](absl::StatusOr<ResolverResult> update) { ... });
#ifndef RINGRPC_CLIENT_CHANNEL_DNS_RESOLVER_H_
#define RINGRPC_CLIENT_CHANNEL_DNS_RESOLVER_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/statusor.h"
#include "ringrpc/base/fork.h"
#include "ringrpc/base/mutex.h"
#include "ringrpc/base/random.h"
#include "ringrpc/base/time.h"
#include "ringrpc/client/resolver.h"

namespace ringrpc::channel {

class DnsResolver final : public Resolver {
 public:
  struct Options {
    // "ip:port", "ip" (port 53) or "[ipv6]:port"; empty: the system's.
    std::string server;
    Duration min_interval = std::chrono::seconds(30);
    // Zero: no limit but c-ares' own retries.
    Duration query_timeout = std::chrono::seconds(120);
    bool request_service_config = false;
  };

  DnsResolver(std::string host, uint16_t port, Options options);
  ~DnsResolver() override;
  void Start(ResolverListener listener) override;
  void RequestReresolution() override;
  void Shutdown() override;
  int resolutions() const { return resolutions_; }

 private:
  struct Lookup;
  void Loop();
  bool ForkedAway() const;  // this process is a child of the one that made it
  absl::StatusOr<ResolverResult> ResolveOnce(void* ares_channel);

  const std::string host_;
  const uint16_t port_;
  const Options options_;
  int wake_fd_ = -1;  // an eventfd: Shutdown ends a query in flight
  Mutex mu_;
  CondVar cv_;
  bool requested_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  ResolverListener listener_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
  const uint64_t fork_generation_ = ForkGeneration();
  std::atomic<int> resolutions_{0};
  Random rng_;  // the resolver thread's: backoff, A2's percentage
};

// The addresses `host` stands for without asking anyone, as gRPC resolves
// them: an IP literal ("10.0.0.7", "::1") is itself, "localhost" and names
// under it are [::1] and 127.0.0.1 (RFC 6761); nullopt for a name only DNS
// can answer. c-ares 1.18 sends even a literal to the DNS server as a name
// (and uses the literal only once NXDOMAIN comes back): a server that drops
// the query held the channel's first resolution for c-ares' 5 s retry.
std::optional<AddressList> ResolveLocally(std::string_view host, uint16_t port);

// The service config the TXT record `payload` (what follows "grpc_config=")
// chooses for this client (gRFC A2): the first choice whose clientLanguage
// (if any) lists "c++", whose clientHostname (if any) lists `hostname`,
// and whose percentage (if any) exceeds `percent` (0..99, drawn once per
// resolution); nullopt when none does. INVALID_ARGUMENT naming the field
// when the record is not a list of choices as A2 defines them.
absl::StatusOr<std::optional<std::string>> ChooseServiceConfig(std::string_view payload,
                                                               std::string_view hostname,
                                                               int percent);

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_DNS_RESOLVER_H_
