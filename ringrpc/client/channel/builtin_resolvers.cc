#include "ringrpc/client/channel/builtin_resolvers.h"

#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "ringrpc/client/channel/channel_config.h"
#include "ringrpc/client/channel/dns_resolver.h"
#include "ringrpc/client/channel/static_resolver.h"
#include "ringrpc/client/channel/target.h"
#include "ringrpc/client/resolver.h"

namespace ringrpc::channel {
namespace {

absl::StatusOr<std::shared_ptr<Resolver>> MakeStatic(const ResolverArgs& a) {
  absl::StatusOr<Target> t = ParseTarget(a.target);
  if (!t.ok()) return t.status();
  if (t->kind != Target::Kind::kStatic) {
    return absl::InvalidArgumentError("target \"" + a.target + "\" is not an address list");
  }
  return std::make_shared<StaticResolver>(std::move(t->addresses));
}

absl::StatusOr<std::shared_ptr<Resolver>> MakeDns(const ResolverArgs& a) {
  absl::StatusOr<Target> t = ParseTarget(a.target);
  if (!t.ok()) return t.status();
  if (t->kind != Target::Kind::kDns) {
    return absl::InvalidArgumentError("target \"" + a.target + "\" is not a DNS name");
  }
  if (std::optional<AddressList> local = ResolveLocally(t->host, t->port)) {
    // An IP literal or localhost: a fixed list, no resolver thread (a
    // channel per call would start one each) and no DNS server asked.
    return std::make_shared<StaticResolver>(*std::move(local));
  }
  // The DNS settings among the channel's arguments (validated already,
  // when the channel read them).
  absl::StatusOr<ChannelConfig> c = ParseChannelArguments(*a.channel_args);
  if (!c.ok()) return c.status();
  return std::make_shared<DnsResolver>(
      t->host, t->port,
      DnsResolver::Options{.server = t->dns_server,
                           .min_interval = c->dns_min_time_between_resolutions,
                           .query_timeout = c->dns_query_timeout,
                           .request_service_config = c->dns_txt_service_config});
}

}  // namespace

void RegisterBuiltinResolvers() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto add = [](const char* scheme, ResolverFactory f) {
      if (!FindResolverFactory(scheme)) RegisterResolverFactory(scheme, std::move(f));
    };
    add("dns", MakeDns);
    for (const char* scheme : {"ipv4", "ipv6", "unix", "unix-abstract"}) add(scheme, MakeStatic);
  });
}

}  // namespace ringrpc::channel
