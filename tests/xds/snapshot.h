// tests/xds/snapshot.h — building the control plane's snapshot file
// (tests/xds/control_plane.cc) in tests and examples: resources as
// protobuf JSON, written whole (to a temporary file renamed into place, so
// the control plane never reads half of one). Test-only.
//
//   Snapshot s("1");
//   s.Add(ListenerJson("greeter", "greeter-routes"));
//   s.Add(RouteConfigJson("greeter-routes", {{"c1", 1}}));
//   s.Add(ClusterJson("c1"));
//   s.Add(EndpointsJson("c1", {{"127.0.0.1:50051"}}));
//   s.WriteTo(path);
#ifndef RINGRPC_TESTS_XDS_SNAPSHOT_H_
#define RINGRPC_TESTS_XDS_SNAPSHOT_H_

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ringrpc::testing::xds {

inline std::string ListenerJson(const std::string& name, const std::string& rds_name) {
  return absl::StrCat(
      R"({"@type": "type.googleapis.com/envoy.config.listener.v3.Listener", "name": ")", name,
      R"(", "apiListener": {"apiListener": {)",
      R"("@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",)",
      R"("rds": {"routeConfigName": ")", rds_name, R"(", "configSource": {"ads": {}}},)",
      R"("httpFilters": [{"name": "router", "typedConfig": {"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]}}})");
}

// A Listener the client must NACK: no ApiListener.
inline std::string InvalidListenerJson(const std::string& name) {
  return absl::StrCat(
      R"({"@type": "type.googleapis.com/envoy.config.listener.v3.Listener", "name": ")", name,
      R"("})");
}

// One route: `match` (a RouteMatch in JSON) to the weighted clusters (a
// single one: weight 1); `action`: more RouteAction fields in JSON
// (`"maxStreamDuration": {...}`).
inline std::string RouteJson(const std::string& match,
                             const std::vector<std::pair<std::string, int>>& clusters,
                             const std::string& action = "") {
  std::vector<std::string> wc;
  for (const auto& [c, w] : clusters)
    wc.push_back(absl::StrCat(R"({"name": ")", c, R"(", "weight": )", w, "}"));
  return absl::StrCat(R"({"match": )", match, R"(, "route": {"weightedClusters": {"clusters": [)",
                      absl::StrJoin(wc, ", "), "]}", action.empty() ? "" : ", ", action, "}}");
}

// One virtual host for `domain` (every domain by default), with these
// routes in order.
inline std::string RouteConfigWithRoutes(const std::string& name,
                                         const std::vector<std::string>& routes,
                                         const std::string& domain = "*") {
  return absl::StrCat(
      R"({"@type": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration", "name": ")",
      name, R"(", "virtualHosts": [{"name": "all", "domains": [")", domain, R"("], "routes": [)",
      absl::StrJoin(routes, ", "), "]}]}");
}

// One route (prefix `prefix`) to the weighted clusters.
inline std::string RouteConfigJson(const std::string& name,
                                   const std::vector<std::pair<std::string, int>>& clusters,
                                   const std::string& prefix = "") {
  return RouteConfigWithRoutes(
      name, {RouteJson(absl::StrCat(R"({"prefix": ")", prefix, R"("})"), clusters)});
}

inline std::string ClusterJson(const std::string& name,
                               const std::string& lb_policy = "ROUND_ROBIN") {
  return absl::StrCat(
      R"({"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": ")", name,
      R"(", "type": "EDS", "edsClusterConfig": {"edsConfig": {"ads": {}}}, "lbPolicy": ")",
      lb_policy, R"("})");
}

struct Locality {
  std::vector<std::string> endpoints;  // "127.0.0.1:port"
  int weight = 1;
  int priority = 0;
  std::string zone = "z1";
};

inline std::string EndpointsJson(const std::string& cluster,
                                 const std::vector<Locality>& localities) {
  std::vector<std::string> ls;
  for (const Locality& l : localities) {
    std::vector<std::string> eps;
    for (const std::string& e : l.endpoints) {
      const size_t colon = e.rfind(':');
      eps.push_back(absl::StrCat(R"({"endpoint": {"address": {"socketAddress": {"address": ")",
                                 e.substr(0, colon), R"(", "portValue": )", e.substr(colon + 1),
                                 R"(}}}, "healthStatus": "HEALTHY"})"));
    }
    ls.push_back(absl::StrCat(R"({"locality": {"region": "r1", "zone": ")", l.zone,
                              R"("}, "loadBalancingWeight": )", l.weight, R"(, "priority": )",
                              l.priority, R"(, "lbEndpoints": [)", absl::StrJoin(eps, ", "), "]}"));
  }
  return absl::StrCat(
      R"({"@type": "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment", "clusterName": ")",
      cluster, R"(", "endpoints": [)", absl::StrJoin(ls, ", "), "]}");
}

class Snapshot {
 public:
  explicit Snapshot(std::string version) : version_(std::move(version)) {}
  const std::string& version() const { return version_; }
  Snapshot& Add(std::string resource_json) {
    resources_.push_back(std::move(resource_json));
    return *this;
  }
  std::string Json() const {
    return absl::StrCat(R"({"versionInfo": ")", version_, R"(", "resources": [)",
                        absl::StrJoin(resources_, ",\n"), "]}\n");
  }
  // Written to `path` whole (rename).
  bool WriteTo(const std::string& path) const {
    const std::string tmp = path + ".tmp";
    {
      std::ofstream f(tmp, std::ios::trunc);
      f << Json();
      if (!f) return false;
    }
    return std::rename(tmp.c_str(), path.c_str()) == 0;
  }

 private:
  std::string version_;
  std::vector<std::string> resources_;
};

}  // namespace ringrpc::testing::xds

#endif  // RINGRPC_TESTS_XDS_SNAPSHOT_H_
