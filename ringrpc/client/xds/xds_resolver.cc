// ringrpc/client/xds/xds_resolver.cc — see xds_resolver.h. The chain of watches
// (Listener -> RouteConfiguration -> Cluster -> ClusterLoadAssignment) is
// kept on the XdsClient's thread, where every watcher runs; the channel's
// listener is called under a mutex so that none runs after Shutdown.
#include "ringrpc/client/xds/xds_resolver.h"

#include <array>
#include <optional>
#include <set>
#include <variant>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "ringrpc/base/mutex.h"
#include "ringrpc/client/lb/builtin.h"
#include "ringrpc/client/xds/xds_client.h"
#include "ringrpc/client/xds/xds_router.h"
#include "ringrpc/client/xds/xds_target.h"

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
    return host.size() > suffix.size() && host.ends_with(suffix) ? DomainMatch::kSuffix
                                                                 : DomainMatch::kNone;
  }
  if (pattern.size() > 1 && pattern.back() == '*') {
    const std::string prefix = pattern.substr(0, pattern.size() - 1);
    return host.size() > prefix.size() && host.starts_with(prefix) ? DomainMatch::kPrefix
                                                                   : DomainMatch::kNone;
  }
  return pattern == host ? DomainMatch::kExact : DomainMatch::kNone;
}

// Every call fails with one status (the Listener or its routes are
// missing or unusable).
class FailingRouter final : public CallRouter {
 public:
  explicit FailingRouter(std::string why) : why_(std::move(why)) {}
  absl::StatusOr<CallRoute> Route(const CallRouteInfo&) const override {
    return absl::UnavailableError(why_);
  }

 private:
  const std::string why_;
};

class XdsResolverImpl final : public Resolver,
                              public std::enable_shared_from_this<XdsResolverImpl> {
 public:
  XdsResolverImpl(std::string listener_name, std::string authority,
                  std::shared_ptr<XdsClient> client)
      : listener_name_(std::move(listener_name)),
        authority_(std::move(authority)),
        client_(std::move(client)) {}

  void Start(ResolverListener listener) override {
    {
      MutexLock lock(&mu_);
      listener_ = std::move(listener);
    }
    std::shared_ptr<XdsResolverImpl> self = shared_from_this();
    client_->Post([self] {
      self->Watch(self->listener_watch_, ResourceType::kListener, self->listener_name_, "");
    });
  }

  void Shutdown() override {
    {
      MutexLock lock(&mu_);
      listener_ = nullptr;
    }
    std::shared_ptr<XdsResolverImpl> self = shared_from_this();
    client_->Post([self] {
      self->Unwatch(self->listener_watch_);
      self->DropRoutes();
    });
  }

 private:
  // Forwards one resource's events to the resolver (on the client's
  // thread). `cluster`: the cluster a CDS or EDS watch is for.
  class Link final : public XdsWatcher {
   public:
    Link(std::weak_ptr<XdsResolverImpl> r, ResourceType type, std::string cluster)
        : r_(std::move(r)), type_(type), cluster_(std::move(cluster)) {}
    void OnUpdate(std::shared_ptr<const XdsResource> res) override {
      if (auto r = r_.lock()) r->OnUpdate(type_, cluster_, *res);
    }
    void OnDoesNotExist() override {
      if (auto r = r_.lock()) r->OnDoesNotExist(type_, cluster_);
    }
    void OnError(absl::Status s) override {
      if (auto r = r_.lock()) r->OnError(std::move(s));
    }

   private:
    std::weak_ptr<XdsResolverImpl> r_;
    ResourceType type_;
    std::string cluster_;
  };

  struct Watched {
    ResourceType type = ResourceType::kListener;
    std::string name;  // empty: nothing watched
    std::shared_ptr<Link> link;
  };

  // One cluster some route leads to: its CDS and EDS watches and what they
  // said. Settled once it has endpoints or a failure.
  struct ClusterState {
    Watched cds, eds;
    std::optional<XdsCluster> cluster;
    // By priority, those with endpoints only (never empty).
    std::optional<std::vector<AddressList>> endpoints;
    // The first of those priorities' localities that have endpoints and a
    // weight: their names, weights and endpoints.
    struct Locality {
      std::string name;
      uint32_t weight;
      AddressList addresses;
    };
    std::vector<Locality> localities;
    std::string failure;  // set: calls routed here fail with it
    bool settled() const { return endpoints.has_value() || !failure.empty(); }
  };

  // Watches `name` of `type` in `w` (replacing what `w` watched).
  void Watch(Watched& w, ResourceType type, const std::string& name, const std::string& cluster) {
    if (w.link != nullptr && w.type == type && w.name == name) return;
    Unwatch(w);
    w = Watched{.type = type,
                .name = name,
                .link = std::make_shared<Link>(weak_from_this(), type, cluster)};
    client_->Watch(type, name, w.link);
  }

  void Unwatch(Watched& w) {
    if (w.link != nullptr) client_->Unwatch(w.type, w.name, w.link);
    w = Watched{};
  }

  void DropRoutes() {
    Unwatch(routes_watch_);
    routes_.reset();
    for (auto& [name, c] : clusters_) {
      Unwatch(c.cds);
      Unwatch(c.eds);
    }
    clusters_.clear();
  }

  void OnUpdate(ResourceType type, const std::string& cluster, const XdsResource& r) {
    switch (type) {
      case ResourceType::kListener: {
        const XdsListener& l = std::get<XdsListener>(r);
        listener_max_duration_ms_ = l.max_stream_duration_ms;
        if (l.inline_routes) {
          Unwatch(routes_watch_);
          OnRoutes(*l.inline_routes);
        } else {
          Watch(routes_watch_, ResourceType::kRouteConfig, l.rds_name, "");
          MaybePublish();  // the same routes, maybe another max_stream_duration
        }
        return;
      }
      case ResourceType::kRouteConfig:
        OnRoutes(std::get<XdsRouteConfig>(r));
        return;
      case ResourceType::kCluster:
        OnCluster(cluster, std::get<XdsCluster>(r));
        return;
      case ResourceType::kEndpoints:
        OnEndpoints(cluster, std::get<XdsEndpoints>(r));
        return;
    }
  }

  void OnRoutes(const XdsRouteConfig& rc) {
    const XdsVirtualHost* vh = PickVirtualHost(rc, authority_);
    if (vh == nullptr) {
      routes_.reset();  // no later update of a cluster publishes the old routes again
      return Fail(absl::StrCat("xDS: RouteConfiguration \"", rc.name,
                               "\" has no virtual host for \"", authority_, "\""));
    }
    routes_ = Routes{.config = rc.name, .routes = vh->routes};
    std::set<std::string> wanted;
    for (const XdsRoute& route : vh->routes) {
      for (const XdsRoute::WeightedCluster& c : route.clusters) wanted.insert(c.name);
    }
    for (auto it = clusters_.begin(); it != clusters_.end();) {
      if (wanted.contains(it->first)) {
        ++it;
        continue;
      }
      Unwatch(it->second.cds);
      Unwatch(it->second.eds);
      it = clusters_.erase(it);
    }
    for (const std::string& name : wanted) {
      auto [it, added] = clusters_.try_emplace(name);
      if (added) Watch(it->second.cds, ResourceType::kCluster, name, name);
    }
    MaybePublish();
  }

  void OnCluster(const std::string& name, const XdsCluster& c) {
    auto it = clusters_.find(name);
    if (it == clusters_.end()) return;
    ClusterState& cs = it->second;
    if (c.kind != XdsCluster::Kind::kEds) {
      Unwatch(cs.eds);
      cs.cluster.reset();
      cs.endpoints.reset();
      cs.failure =
          absl::StrCat("xDS: Cluster \"", c.name, "\" is ",
                       c.kind == XdsCluster::Kind::kAggregate ? "an aggregate" : "a LOGICAL_DNS",
                       " cluster: not supported yet (EDS clusters are)");
      return MaybePublish();
    }
    const std::string eds = c.eds_service_name.empty() ? c.name : c.eds_service_name;
    if (cs.eds.link == nullptr || cs.eds.name != eds) {
      // New endpoints to wait for: not settled (an earlier failure, or
      // another service name's endpoints, no longer say anything).
      cs.endpoints.reset();
      cs.failure.clear();
    }
    cs.cluster = c;
    Watch(cs.eds, ResourceType::kEndpoints, eds, name);
    MaybePublish();  // the policy may have changed, the endpoints not
  }

  void OnEndpoints(const std::string& name, const XdsEndpoints& e) {
    auto it = clusters_.find(name);
    if (it == clusters_.end()) return;
    ClusterState& cs = it->second;
    std::vector<AddressList> priorities;
    std::vector<ClusterState::Locality> localities;
    for (const std::vector<XdsLocality>& priority : e.priorities) {
      AddressList addresses;
      std::vector<ClusterState::Locality> here;
      for (const XdsLocality& l : priority) {
        ClusterState::Locality loc{.name = l.Name(), .weight = l.weight};
        for (const XdsEndpoint& ep : l.endpoints) {
          absl::StatusOr<transport::Address> a = transport::Address::Parse(ep.address);
          if (!a.ok()) continue;
          addresses.push_back(*a);
          loc.addresses.push_back(*a);
        }
        if (!loc.addresses.empty() && loc.weight > 0) here.push_back(std::move(loc));
      }
      if (addresses.empty()) continue;
      if (priorities.empty()) localities = std::move(here);
      priorities.push_back(std::move(addresses));
    }
    cs.localities = std::move(localities);
    if (priorities.empty()) {
      cs.endpoints.reset();
      cs.failure = absl::StrCat("xDS: ClusterLoadAssignment \"", e.name, "\" (cluster \"", name,
                                "\") has no healthy endpoint");
    } else {
      cs.endpoints = std::move(priorities);
      cs.failure.clear();
    }
    MaybePublish();
  }

  void OnDoesNotExist(ResourceType type, const std::string& cluster) {
    // A27: a missing Listener or RouteConfiguration fails every call; a
    // missing Cluster or ClusterLoadAssignment the calls routed to it.
    if (type == ResourceType::kListener || type == ResourceType::kRouteConfig) {
      const std::string name =
          type == ResourceType::kListener ? listener_name_ : routes_watch_.name;
      if (type == ResourceType::kListener) {
        DropRoutes();
      } else {
        routes_.reset();
      }
      return Fail(
          absl::StrCat("xDS: ", std::string(TypeName(type)), " \"", name, "\" does not exist"));
    }
    auto it = clusters_.find(cluster);
    if (it == clusters_.end()) return;
    ClusterState& cs = it->second;
    if (type == ResourceType::kCluster) {
      Unwatch(cs.eds);
      cs.cluster.reset();
    }
    cs.endpoints.reset();
    cs.failure =
        absl::StrCat("xDS: ", std::string(TypeName(type)), " \"",
                     type == ResourceType::kCluster ? cluster : cs.eds.name, "\" does not exist");
    MaybePublish();
  }

  void OnError(absl::Status s) {
    // With a configuration in force, calls go on with it (A27).
    if (published_) return;
    Fail(std::string(s.message()));
  }

  // Once the routes are known and every cluster they name is settled: the
  // union of the clusters' endpoints, a group per cluster, the router,
  // and one policy for all (least_request if every cluster asks for it,
  // else round_robin).
  void MaybePublish() {
    if (!routes_) return;
    for (const auto& [name, cs] : clusters_) {
      if (!cs.settled()) return;
    }
    ResolverResult result;
    std::map<std::string, std::string> failed;
    std::map<std::string, XdsRouter::Localities> localities;
    std::map<std::string, size_t> index;  // address -> its place in result.addresses
    auto add = [&](std::vector<size_t>& members, const transport::Address& a) {
      auto [it, added] = index.try_emplace(a.ToString(), result.addresses.size());
      if (added) result.addresses.push_back(a);
      members.push_back(it->second);
    };
    bool least_request = !clusters_.empty();
    uint32_t choices = 2;
    for (const auto& [name, cs] : clusters_) {
      if (!cs.endpoints) {
        failed[name] = cs.failure;
        continue;
      }
      least_request = least_request && cs.cluster->lb_policy == "least_request";
      choices = std::max(choices, cs.cluster->least_request_choices);
      // A group per priority: the cluster's name for the first, the calls
      // routed to it failing over down the priorities (A27's priority
      // policy, by connectivity; decision 0038).
      for (size_t p = 0; p < cs.endpoints->size(); ++p) {
        const std::string group = PriorityGroup(name, p);
        if (p + 1 < cs.endpoints->size()) result.fallback[group] = PriorityGroup(name, p + 1);
        std::vector<size_t>& members = result.groups[group];
        for (const transport::Address& a : (*cs.endpoints)[p]) add(members, a);
      }
      // Several weighted localities in the first priority: the router
      // draws one by weight; a locality whose endpoints all fail falls
      // back to the whole priority (then down the priorities).
      if (cs.localities.size() > 1) {
        for (const ClusterState::Locality& l : cs.localities) {
          const std::string group = absl::StrCat(name, " ", l.name);
          localities[name].emplace_back(group, l.weight);
          result.fallback[group] = name;
          std::vector<size_t>& members = result.groups[group];
          for (const transport::Address& a : l.addresses) add(members, a);
        }
      }
    }
    // An empty service config (the channel's default does not apply to an
    // xDS target) and the clusters' policy, typed.
    result.service_config = "{}";
    result.lb_config =
        least_request ? lb::LeastRequestConfig(static_cast<int>(choices)) : lb::RoundRobinConfig();
    result.router = std::make_shared<XdsRouter>(routes_->config, routes_->routes, std::move(failed),
                                                std::move(localities), listener_max_duration_ms_);
    published_ = true;
    MutexLock lock(&mu_);
    if (!listener_) return;
    listener_.Update(std::move(result));
  }

  // The group of `cluster`'s priority `p` (the router names the first).
  static std::string PriorityGroup(const std::string& cluster, size_t p) {
    return p == 0 ? cluster : absl::StrCat(cluster, " [priority ", p, "]");
  }

  // Every call fails with `why`.
  void Fail(const std::string& why) {
    MutexLock lock(&mu_);
    if (!listener_) return;
    listener_.Update(ResolverResult{.router = std::make_shared<FailingRouter>(why)});
  }

  const std::string listener_name_;
  const std::string authority_;
  const std::shared_ptr<XdsClient> client_;
  // The client's thread only.
  Watched listener_watch_, routes_watch_;
  struct Routes {
    std::string config;  // the RouteConfiguration's name
    std::vector<XdsRoute> routes;
  };
  std::optional<Routes> routes_;                     // the virtual host's, once known
  std::optional<int64_t> listener_max_duration_ms_;  // the Listener's max_stream_duration
  std::map<std::string, ClusterState> clusters_;
  bool published_ = false;

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
  if (authority.rfind("//", 0) == 0)
    authority = authority.substr(std::min(authority.size(), authority.find('/', 2) + 1));
  return std::shared_ptr<Resolver>(std::make_shared<XdsResolverImpl>(
      std::move(*listener), std::move(authority), std::move(client)));
}

absl::StatusOr<std::shared_ptr<Resolver>> MakeXdsResolver(const std::string& target) {
  absl::StatusOr<std::shared_ptr<XdsClient>> client = XdsClient::FromEnvironment();
  if (!client.ok()) return client.status();
  return MakeXdsResolver(target, *std::move(client));
}

namespace {
// Linking this file makes "xds:" targets work.
const bool kRegistered = [] {
  RegisterResolverFactory("xds", [](const ResolverArgs& a) { return MakeXdsResolver(a.target); });
  return true;
}();
}  // namespace

}  // namespace ringrpc::xds
