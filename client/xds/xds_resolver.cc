// client/xds/xds_resolver.cc — see xds_resolver.h. The chain of watches
// (Listener -> RouteConfiguration -> Cluster -> ClusterLoadAssignment) is
// kept on the XdsClient's thread, where every watcher runs; the channel's
// listener is called under a mutex so that none runs after Shutdown.
#include "client/xds/xds_resolver.h"

#include <array>
#include <optional>
#include <set>
#include <variant>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/mutex.h"
#include "client/xds/xds_client.h"
#include "client/xds/xds_target.h"

namespace ringrpc::xds {
namespace {

// The domain match kinds of A27, best first.
enum class DomainMatch { kExact, kSuffix, kPrefix, kAny, kNone };

DomainMatch Match(const std::string& pattern_in, const std::string& host_in) {
  const std::string pattern = absl::AsciiStrToLower(pattern_in);
  const std::string host = absl::AsciiStrToLower(host_in);
  if (pattern == "*") return DomainMatch::kAny;
  if (pattern.size() > 1 && pattern.front() == '*') {
    const std::string suffix = pattern.substr(1);
    return host.size() > suffix.size() && host.ends_with(suffix) ? DomainMatch::kSuffix : DomainMatch::kNone;
  }
  if (pattern.size() > 1 && pattern.back() == '*') {
    const std::string prefix = pattern.substr(0, pattern.size() - 1);
    return host.size() > prefix.size() && host.starts_with(prefix) ? DomainMatch::kPrefix : DomainMatch::kNone;
  }
  return pattern == host ? DomainMatch::kExact : DomainMatch::kNone;
}

class XdsResolverImpl final : public Resolver, public std::enable_shared_from_this<XdsResolverImpl> {
 public:
  XdsResolverImpl(std::string listener_name, std::string authority, std::shared_ptr<XdsClient> client)
      : listener_name_(std::move(listener_name)), authority_(std::move(authority)), client_(std::move(client)) {}

  void Start(ResolverListener listener) override {
    {
      MutexLock lock(&mu_);
      listener_ = std::move(listener);
    }
    std::shared_ptr<XdsResolverImpl> self = shared_from_this();
    client_->Post([self] { self->Watch(ResourceType::kListener, self->listener_name_); });
  }

  void Shutdown() override {
    {
      MutexLock lock(&mu_);
      listener_ = nullptr;
    }
    std::shared_ptr<XdsResolverImpl> self = shared_from_this();
    client_->Post([self] { self->UnwatchFrom(ResourceType::kListener); });
  }

 private:
  // Forwards one resource's events to the resolver (on the client's thread).
  class Link final : public XdsWatcher {
   public:
    Link(std::weak_ptr<XdsResolverImpl> r, ResourceType type) : r_(std::move(r)), type_(type) {}
    void OnUpdate(std::shared_ptr<const XdsResource> res) override {
      if (auto r = r_.lock()) r->OnUpdate(type_, *res);
    }
    void OnDoesNotExist() override {
      if (auto r = r_.lock()) r->OnDoesNotExist(type_);
    }
    void OnError(absl::Status s) override {
      if (auto r = r_.lock()) r->OnError(std::move(s));
    }

   private:
    std::weak_ptr<XdsResolverImpl> r_;
    ResourceType type_;
  };

  struct Watched {
    std::string name;  // empty: nothing watched at this step
    std::shared_ptr<Link> link;
  };

  static size_t Index(ResourceType t) { return static_cast<size_t>(t); }

  // Watches `name` at step `type` (replacing what that step watched, and
  // dropping every later step).
  void Watch(ResourceType type, const std::string& name) {
    Watched& w = chain_[Index(type)];
    if (w.name == name && w.link != nullptr) return;
    UnwatchFrom(type);
    w.name = name;
    w.link = std::make_shared<Link>(weak_from_this(), type);
    client_->Watch(type, name, w.link);
  }

  void UnwatchFrom(ResourceType type) {
    for (size_t i = Index(type); i < chain_.size(); ++i) {
      if (chain_[i].link != nullptr) client_->Unwatch(static_cast<ResourceType>(i), chain_[i].name, chain_[i].link);
      chain_[i] = Watched{};
    }
    if (Index(type) <= Index(ResourceType::kCluster)) lb_config_.clear();
  }

  void OnUpdate(ResourceType type, const XdsResource& r) {
    switch (type) {
      case ResourceType::kListener: {
        const XdsListener& l = std::get<XdsListener>(r);
        if (l.inline_routes) {
          UnwatchFrom(ResourceType::kRouteConfig);
          OnRoutes(*l.inline_routes);
        } else {
          Watch(ResourceType::kRouteConfig, l.rds_name);
        }
        return;
      }
      case ResourceType::kRouteConfig:
        OnRoutes(std::get<XdsRouteConfig>(r));
        return;
      case ResourceType::kCluster:
        OnCluster(std::get<XdsCluster>(r));
        return;
      case ResourceType::kEndpoints:
        OnEndpoints(std::get<XdsEndpoints>(r));
        return;
    }
  }

  void OnRoutes(const XdsRouteConfig& rc) {
    const XdsVirtualHost* vh = PickVirtualHost(rc, authority_);
    if (vh == nullptr) {
      return Fail(absl::StrCat("xDS: RouteConfiguration \"", rc.name, "\" has no virtual host for \"",
                               authority_, "\""));
    }
    std::set<std::string> clusters;
    for (const XdsRoute& route : vh->routes) {
      for (const XdsRoute::WeightedCluster& c : route.clusters) clusters.insert(c.name);
    }
    if (clusters.empty()) {
      return Fail(absl::StrCat("xDS: RouteConfiguration \"", rc.name, "\": the virtual host for \"",
                               authority_, "\" has no route to a cluster"));
    }
    if (clusters.size() > 1) {
      return Fail(absl::StrCat("xDS: RouteConfiguration \"", rc.name, "\" routes \"", authority_,
                               "\" to several clusters (", absl::StrJoin(clusters, ", "),
                               "): weighted clusters and per-route clusters are not supported yet"));
    }
    Watch(ResourceType::kCluster, *clusters.begin());
  }

  void OnCluster(const XdsCluster& c) {
    if (c.kind != XdsCluster::Kind::kEds) {
      return Fail(absl::StrCat("xDS: Cluster \"", c.name, "\" is ",
                               c.kind == XdsCluster::Kind::kAggregate ? "an aggregate" : "a LOGICAL_DNS",
                               " cluster: not supported yet (EDS clusters are)"));
    }
    lb_config_ = c.lb_policy == "least_request"
                     ? absl::StrCat(R"({"loadBalancingConfig": [{"least_request_experimental": {"choiceCount": )",
                                    c.least_request_choices, "}}]}")
                     : R"({"loadBalancingConfig": [{"round_robin": {}}]})";
    Watch(ResourceType::kEndpoints, c.eds_service_name.empty() ? c.name : c.eds_service_name);
    if (endpoints_) Publish();  // the policy changed, the endpoints did not
  }

  void OnEndpoints(const XdsEndpoints& e) {
    AddressList addresses;
    for (const std::vector<XdsLocality>& priority : e.priorities) {
      for (const XdsLocality& l : priority) {
        for (const XdsEndpoint& ep : l.endpoints) {
          absl::StatusOr<transport::Address> a = transport::Address::Parse(ep.address);
          if (a.ok()) addresses.push_back(*a);
        }
      }
      if (!addresses.empty()) break;  // the lowest priority with endpoints
    }
    if (addresses.empty()) {
      endpoints_.reset();
      return Fail(absl::StrCat("xDS: ClusterLoadAssignment \"", e.name, "\" has no healthy endpoint"));
    }
    endpoints_ = std::move(addresses);
    Publish();
  }

  void OnDoesNotExist(ResourceType type) {
    // A27: a missing Listener or RouteConfiguration fails calls; a missing
    // Cluster or ClusterLoadAssignment too (nothing to send them to).
    if (type != ResourceType::kEndpoints) UnwatchFrom(static_cast<ResourceType>(Index(type) + 1));
    endpoints_.reset();
    Fail(absl::StrCat("xDS: ", std::string(TypeName(type)), " \"", chain_[Index(type)].name,
                      "\" does not exist"));
  }

  void OnError(absl::Status s) {
    // With a configuration in force, calls go on with it (A27).
    if (endpoints_) return;
    Fail(std::string(s.message()));
  }

  void Publish() {
    MutexLock lock(&mu_);
    if (!listener_) return;
    listener_.Update(ResolverResult{.addresses = *endpoints_, .service_config = lb_config_});
  }

  void Fail(const std::string& why) {
    MutexLock lock(&mu_);
    if (!listener_) return;
    listener_.Update(absl::UnavailableError(why));
  }

  const std::string listener_name_;
  const std::string authority_;
  const std::shared_ptr<XdsClient> client_;
  // The client's thread only.
  std::array<Watched, 4> chain_;  // by ResourceType
  std::string lb_config_;
  std::optional<AddressList> endpoints_;  // the last published

  Mutex mu_;
  ResolverListener listener_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

const XdsVirtualHost* PickVirtualHost(const XdsRouteConfig& routes, const std::string& authority) {
  const XdsVirtualHost* best = nullptr;
  DomainMatch best_kind = DomainMatch::kNone;
  size_t best_len = 0;
  for (const XdsVirtualHost& vh : routes.virtual_hosts) {
    for (const std::string& d : vh.domains) {
      const DomainMatch m = Match(d, authority);
      if (m == DomainMatch::kNone) continue;
      if (best == nullptr || m < best_kind || (m == best_kind && d.size() > best_len)) {
        best = &vh;
        best_kind = m;
        best_len = d.size();
      }
    }
  }
  return best;
}

absl::StatusOr<std::shared_ptr<Resolver>> MakeXdsResolver(const std::string& target,
                                                          std::shared_ptr<XdsClient> client) {
  absl::StatusOr<std::string> listener = ListenerResourceName(target, client->bootstrap());
  if (!listener.ok()) return listener.status();
  // The name calls carry as :authority (A27): what follows "xds:" and an
  // authority, if any.
  std::string authority = target.substr(4);
  if (authority.rfind("//", 0) == 0) authority = authority.substr(std::min(authority.size(), authority.find('/', 2) + 1));
  return std::shared_ptr<Resolver>(
      std::make_shared<XdsResolverImpl>(std::move(*listener), std::move(authority), std::move(client)));
}

absl::StatusOr<std::shared_ptr<Resolver>> MakeXdsResolver(const std::string& target) {
  absl::StatusOr<std::shared_ptr<XdsClient>> client = XdsClient::FromEnvironment();
  if (!client.ok()) return client.status();
  return MakeXdsResolver(target, *std::move(client));
}

namespace {
// Linking this file makes "xds:" targets work.
const bool kRegistered = [] {
  RegisterResolverFactory("xds", [](const std::string& target) { return MakeXdsResolver(target); });
  return true;
}();
}  // namespace

}  // namespace ringrpc::xds
