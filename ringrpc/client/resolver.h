// ringrpc/client/resolver.h — how a channel learns its addresses: the interface
// to plug in your own discovery (CreateChannelWithResolver), and a manual
// resolver you push address lists into (tests, or discovery you drive).
// The resolvers ringrpc picks from a target (static ipv4:/ipv6:/unix:
// lists, DNS) are in ringrpc/client/channel/static_resolver.h and dns_resolver.h.
//
// A resolver may also deliver a service config with its addresses
// (ResolverResult): the channel uses it instead of its default
// (grpc.service_config) unless grpc.service_config_disable_resolution is
// set; an invalid one is reported and the last valid one kept (gRFC A21;
// docs/service-config.md).
//
// Threading: a resolver may call its listener from any thread, but never
// two calls at once and never after Shutdown() returns. ManualResolver's
// methods may be called from any thread.
//
//   auto r = std::make_shared<ManualResolver>();
//   auto channel = CreateChannelWithResolver("backend", r, args);
//   r->Push(AddressList{*transport::Address::Parse("10.0.0.2:50051")});
//   r->PushResult(ResolverResult{.addresses = {...}, .service_config = R"({...})"});
#ifndef RINGRPC_CLIENT_RESOLVER_H_
#define RINGRPC_CLIENT_RESOLVER_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ringrpc/base/mutex.h"
#include "ringrpc/client/lb/lb_policy.h"
#include "ringrpc/client/transport/address.h"

namespace ringrpc {

class ChannelArguments;
using AddressList = std::vector<transport::Address>;

// What a CallRouter sees of a call.
struct CallRouteInfo {
  std::string_view method;  // "/package.Service/Method"
  // The call's metadata as it will be sent (after call credentials and
  // interceptors), lower-case names.
  const std::vector<std::pair<std::string, std::string>>& metadata;
  uint64_t random;  // uniform over 64 bits, for weighted and fractional choices
};

// Per-call routing, as xDS's routes and weighted clusters need (gRPC's
// "config selector"): each call, before it picks an address, is sent to
// one named group of the resolver's addresses, and the channel's policy
// picks within that group. Called on CQ threads, concurrently: const and
// without locks.
// Where a call goes: a group of the resolver's addresses, and at most how
// long it may last (xDS's max_stream_duration, gRFC A31: the call's own
// deadline is shortened to it, never lengthened).
struct CallRoute {
  std::string group;
  std::optional<std::chrono::milliseconds> max_duration;
};

class CallRouter {
 public:
  virtual ~CallRouter() = default;
  // The group the call goes to (a key of ResolverResult::groups), or the
  // status the call fails with (UNAVAILABLE "no route matches ...").
  virtual absl::StatusOr<CallRoute> Route(const CallRouteInfo& call) const = 0;
};

// What a resolver found: the addresses and, if it carries one, a service
// config (JSON, as for grpc.service_config). No service config: the
// channel's default applies.
struct ResolverResult {
  AddressList addresses;
  std::optional<std::string> service_config;
  // Not OK: the resolver found a service config it could not read (a DNS
  // TXT record that is not a list of choices); the channel treats it as an
  // invalid config (the last valid one is kept), saying this.
  absl::Status service_config_error;
  // The LB policy for these addresses, typed (ringrpc/client/lb), over the
  // service config's loadBalancingConfig (xDS's clusters name theirs this
  // way). Null: the service config's, else grpc.lb_policy_name's.
  std::shared_ptr<const LbConfig> lb_config;
  // With a router: every call is routed to one of these groups, each a
  // list of indexes into `addresses` (an address may be in several), and
  // picks among that group's addresses only. Without: one group, all.
  std::shared_ptr<const CallRouter> router;
  std::map<std::string, std::vector<size_t>> groups;
  // Priority failover (xDS's `priority` policy): while every address of
  // group g is failing (TRANSIENT_FAILURE and backing off, or unhealthy),
  // the calls routed to g go to fallback[g] (and on down the chain); back
  // to g as soon as one of its addresses may be dialled again.
  std::map<std::string, std::string> fallback;
};

// Where a resolver sends what it finds. Call it with an address list (or
// an error) alone, or Update() it with a whole ResolverResult. It can be
// made from a function of either.
class ResolverListener {
 public:
  ResolverListener() = default;
  ResolverListener(std::nullptr_t) {}  // NOLINT: like std::function
  template <typename F>
  requires std::is_invocable_v<F&, absl::StatusOr<ResolverResult>> ResolverListener(F f)
      : fn_(std::move(f)) {}  // NOLINT: like std::function
  template <typename F>
  requires(std::is_invocable_v<F&, absl::StatusOr<AddressList>> &&
           !std::is_invocable_v<F&, absl::StatusOr<ResolverResult>>)
      ResolverListener(F f)  // NOLINT: like std::function
      : fn_([f = std::move(f)](absl::StatusOr<ResolverResult> r) mutable {
          if (!r.ok()) {
            f(r.status());
          } else {
            f(std::move(r->addresses));
          }
        }) {}

  // Addresses without a service config (or the resolver's error).
  void operator()(absl::StatusOr<AddressList> update) const {
    if (!update.ok()) {
      fn_(update.status());
    } else {
      fn_(ResolverResult{std::move(*update), std::nullopt});
    }
  }
  void Update(absl::StatusOr<ResolverResult> result) const { fn_(std::move(result)); }
  explicit operator bool() const { return static_cast<bool>(fn_); }

 private:
  std::function<void(absl::StatusOr<ResolverResult>)> fn_;
};

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
  // Addresses with the resolver's service config (or without: nullopt).
  void PushResult(absl::StatusOr<ResolverResult> result);
  void RequestReresolution() override { ++reresolution_requests_; }
  void Shutdown() override;
  int reresolution_requests() const { return reresolution_requests_; }

 private:
  Mutex mu_;
  ResolverListener listener_ ABSL_GUARDED_BY(mu_);
  std::optional<absl::StatusOr<ResolverResult>> pending_
      ABSL_GUARDED_BY(mu_);  // pushed before Start
  std::atomic<int> reresolution_requests_{0};
};

// A target's scheme and what follows it, for a resolver a scheme names
// (RFC 3986's shape, as gRPC reads targets): "consul://agent:8500/orders"
// is scheme "consul", authority "agent:8500", endpoint "orders";
// "consul:///orders" has no authority; "consul:orders" neither.
struct ResolverArgs {
  std::string target;     // the whole target, as the channel got it
  std::string scheme;     // lower case as written: "dns", "consul"
  std::string authority;  // between "//" and the next "/" (empty: none)
  std::string endpoint;   // the rest, without its leading "/"
  // The channel's arguments (never null; valid during the factory call).
  const ChannelArguments* channel_args = nullptr;
};

// Target schemes and the resolvers they make. ringrpc registers dns,
// ipv4, ipv6, unix and unix-abstract itself; the xDS resolver
// (ringrpc/client/xds) registers xds when it is linked; a program
// registers its own schemes (or replaces one of ringrpc's) before it
// creates channels to them. A target whose scheme is registered goes to
// its factory; one without a scheme ("host:port", "localhost:50051") is
// dns:///target, as in grpc++. The channel's :authority for a scheme of
// the program's own is the endpoint (grpc.default_authority overrides
// it). Registering a scheme twice keeps the last. Any thread.
//
//   RegisterResolverFactory("consul", [](const ResolverArgs& a)
//       -> absl::StatusOr<std::shared_ptr<Resolver>> {
//     return std::make_shared<ConsulResolver>(a.endpoint);
//   });
//   auto channel = CreateChannel("consul:///orders", InsecureChannelCredentials());
using ResolverFactory =
    std::function<absl::StatusOr<std::shared_ptr<Resolver>>(const ResolverArgs& args)>;
void RegisterResolverFactory(const std::string& scheme, ResolverFactory factory);
// The factory registered for `scheme`, or an empty function.
ResolverFactory FindResolverFactory(const std::string& scheme);
// `target` split as ResolverArgs says (channel_args left null); the scheme
// is empty when the target does not start with one ("host:port" does: its
// host is a scheme-shaped word, so callers fall back to DNS when that
// scheme is not registered).
ResolverArgs SplitTarget(const std::string& target);

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_RESOLVER_H_
