// ringrpc/client/xds/xds_router.h — per-call routing for an xds: channel (gRFC
// A27, A28): the virtual host's routes, in order, matched against the
// call's path and metadata; the first that matches (and whose runtime
// fraction lets it) names the cluster, one of its weighted clusters drawn
// at random by weight, then (for a cluster with several localities) one
// of its localities by weight. The channel then picks an address among
// that cluster's or locality's endpoints (ResolverResult::groups). The
// route's max_stream_duration (grpc_timeout_header_max first), else the
// Listener's, caps the call's deadline (A31).
//
// Header matching as A28: names are lower case; a "-bin" header never
// matches (as if absent); "content-type" is "application/grpc"; several
// values of one name are joined with ",".
//
// Threading: immutable once made; Route() is called from every CQ thread.
//
//   auto router = std::make_shared<XdsRouter>("routes", vh.routes, failed);
//   absl::StatusOr<std::string> cluster = router->Route(
//       {.method = "/pkg.S/M", .metadata = md, .random = r});
#ifndef RINGRPC_CLIENT_XDS_XDS_ROUTER_H_
#define RINGRPC_CLIENT_XDS_XDS_ROUTER_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ringrpc/client/resolver.h"
#include "ringrpc/client/xds/resources.h"

namespace re2 {
class RE2;
}  // namespace re2

namespace ringrpc::xds {

class XdsRouter final : public CallRouter {
 public:
  // A cluster's localities (their groups) and weights: a call routed to
  // the cluster goes to one of them, drawn by weight (A27's
  // weighted_target).
  using Localities = std::vector<std::pair<std::string, uint32_t>>;

  // `routes`: the chosen virtual host's, of RouteConfiguration
  // `route_config` (for messages). `failed`: clusters whose calls fail,
  // with the reason (UNAVAILABLE "xDS: Cluster "b" does not exist").
  // `localities`: clusters whose calls go to a locality's group rather
  // than the cluster's.
  // `max_stream_duration_ms`: the Listener's, for routes without their
  // own (A31; 0 or none: no limit).
  XdsRouter(std::string route_config, std::vector<XdsRoute> routes,
            std::map<std::string, std::string> failed,
            std::map<std::string, Localities> localities = {},
            std::optional<int64_t> max_stream_duration_ms = std::nullopt);
  ~XdsRouter() override;

  absl::StatusOr<CallRoute> Route(const CallRouteInfo& call) const override;

  // The clusters some route may send calls to.
  std::vector<std::string> Clusters() const;

 private:
  struct Compiled;
  bool Matches(const Compiled& c, const CallRouteInfo& call) const;
  // `cluster`'s locality group drawn with `random` (or `cluster` itself).
  std::string Locality(const std::string& cluster, uint64_t random) const;

  const std::string route_config_;
  const std::map<std::string, std::string> failed_;
  const std::map<std::string, Localities> localities_;
  const std::optional<int64_t> max_stream_duration_ms_;
  std::vector<Compiled> routes_;
};

}  // namespace ringrpc::xds

#endif  // RINGRPC_CLIENT_XDS_XDS_ROUTER_H_
