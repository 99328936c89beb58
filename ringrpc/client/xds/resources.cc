// ringrpc/client/xds/resources.cc — decoding and validating xDS resources (see
// resources.h). The checks are those gRFC A27/A28 ask of a client, with
// grpc++'s wording where it has one.
#include "ringrpc/client/xds/resources.h"

#include <cstdlib>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/clusters/aggregate/v3/cluster.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"

namespace ringrpc::xds {
namespace {

namespace route = envoy::config::route::v3;
namespace core = envoy::config::core::v3;
using HCM = envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;

constexpr std::string_view kHcmType =
    "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3."
    "HttpConnectionManager";
constexpr std::string_view kRouterType =
    "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router";
constexpr std::string_view kAggregateType =
    "type.googleapis.com/envoy.extensions.clusters.aggregate.v3.ClusterConfig";

absl::Status Invalid(const std::string& type, const std::string& name, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(type, " \"", name, "\": ", what));
}

int64_t Millis(const google::protobuf::Duration& d) {
  return d.seconds() * 1000 + d.nanos() / 1000000;
}

uint32_t PerMillion(const envoy::type::v3::FractionalPercent& p) {
  uint64_t n = p.numerator();
  switch (p.denominator()) {
    case envoy::type::v3::FractionalPercent::HUNDRED:
      n *= 10000;
      break;
    case envoy::type::v3::FractionalPercent::TEN_THOUSAND:
      n *= 100;
      break;
    default:
      break;
  }
  return static_cast<uint32_t>(std::min<uint64_t>(n, 1000000));
}

// A config source the client can follow: the ADS stream itself.
bool IsAdsSource(const core::ConfigSource& s) { return s.has_ads() || s.has_self(); }

absl::StatusOr<XdsHeaderMatcher> DecodeHeader(const route::HeaderMatcher& h) {
  XdsHeaderMatcher m;
  m.name = h.name();
  m.invert = h.invert_match();
  using K = XdsHeaderMatcher::Kind;
  switch (h.header_match_specifier_case()) {
    case route::HeaderMatcher::kExactMatch:
      m.kind = K::kExact;
      m.value = h.exact_match();
      break;
    case route::HeaderMatcher::kSafeRegexMatch:
      m.kind = K::kRegex;
      m.value = h.safe_regex_match().regex();
      break;
    case route::HeaderMatcher::kRangeMatch:
      m.kind = K::kRange;
      m.range_start = h.range_match().start();
      m.range_end = h.range_match().end();
      if (m.range_end < m.range_start) {
        return absl::InvalidArgumentError(
            absl::StrCat("header matcher \"", h.name(), "\": range end < start"));
      }
      break;
    case route::HeaderMatcher::kPresentMatch:
      m.kind = K::kPresent;
      m.present = h.present_match();
      break;
    case route::HeaderMatcher::kPrefixMatch:
      m.kind = K::kPrefix;
      m.value = h.prefix_match();
      break;
    case route::HeaderMatcher::kSuffixMatch:
      m.kind = K::kSuffix;
      m.value = h.suffix_match();
      break;
    case route::HeaderMatcher::kContainsMatch:
      m.kind = K::kContains;
      m.value = h.contains_match();
      break;
    case route::HeaderMatcher::kStringMatch: {
      const auto& s = h.string_match();
      m.ignore_case = s.ignore_case();
      switch (s.match_pattern_case()) {
        case envoy::type::matcher::v3::StringMatcher::kExact:
          m.kind = K::kExact;
          m.value = s.exact();
          break;
        case envoy::type::matcher::v3::StringMatcher::kPrefix:
          m.kind = K::kPrefix;
          m.value = s.prefix();
          break;
        case envoy::type::matcher::v3::StringMatcher::kSuffix:
          m.kind = K::kSuffix;
          m.value = s.suffix();
          break;
        case envoy::type::matcher::v3::StringMatcher::kContains:
          m.kind = K::kContains;
          m.value = s.contains();
          break;
        case envoy::type::matcher::v3::StringMatcher::kSafeRegex:
          m.kind = K::kRegex;
          m.value = s.safe_regex().regex();
          break;
        default:
          return absl::InvalidArgumentError(
              absl::StrCat("header matcher \"", h.name(), "\": string_match has no pattern"));
      }
      break;
    }
    default:
      // No specifier: present (Envoy's default).
      m.kind = K::kPresent;
      break;
  }
  return m;
}

// One route; nullopt: a route the client skips (A28: a match it cannot
// evaluate, e.g. a CONNECT matcher).
absl::StatusOr<std::optional<XdsRoute>> DecodeRoute(const route::Route& r) {
  XdsRoute out;
  const route::RouteMatch& m = r.match();
  switch (m.path_specifier_case()) {
    case route::RouteMatch::kPrefix:
      out.path_kind = XdsRoute::PathKind::kPrefix;
      out.path = m.prefix();
      break;
    case route::RouteMatch::kPath:
      out.path_kind = XdsRoute::PathKind::kPath;
      out.path = m.path();
      break;
    case route::RouteMatch::kSafeRegex:
      out.path_kind = XdsRoute::PathKind::kRegex;
      out.path = m.safe_regex().regex();
      break;
    case route::RouteMatch::PATH_SPECIFIER_NOT_SET:
      return absl::InvalidArgumentError("a route with no path matcher");
    default:
      return std::optional<XdsRoute>();  // connect_matcher, path templates: skipped
  }
  if (m.has_case_sensitive()) out.case_sensitive = m.case_sensitive().value();
  for (const route::HeaderMatcher& h : m.headers()) {
    absl::StatusOr<XdsHeaderMatcher> hm = DecodeHeader(h);
    if (!hm.ok()) return hm.status();
    out.headers.push_back(std::move(*hm));
  }
  if (m.has_runtime_fraction())
    out.fraction_per_million = PerMillion(m.runtime_fraction().default_value());
  if (r.action_case() != route::Route::kRoute) {
    out.non_forwarding = true;
    return std::optional<XdsRoute>(std::move(out));
  }
  const route::RouteAction& a = r.route();
  switch (a.cluster_specifier_case()) {
    case route::RouteAction::kCluster:
      if (a.cluster().empty())
        return absl::InvalidArgumentError("route action: empty cluster name");
      out.clusters.push_back({a.cluster(), 1});
      break;
    case route::RouteAction::kWeightedClusters: {
      uint64_t total = 0;
      for (const auto& c : a.weighted_clusters().clusters()) {
        if (c.name().empty())
          return absl::InvalidArgumentError("weighted_clusters: empty cluster name");
        const uint32_t w = c.has_weight() ? c.weight().value() : 0;
        total += w;
        if (w > 0) out.clusters.push_back({c.name(), w});
      }
      if (total == 0)
        return absl::InvalidArgumentError("weighted_clusters: the weights add up to 0");
      if (total > UINT32_MAX) {
        return absl::InvalidArgumentError(
            "weighted_clusters: the weights add up to more than 2^32-1");
      }
      break;
    }
    default:
      // cluster_header, cluster specifier plugins: not supported; the route
      // is skipped (grpc++ ignores such routes too).
      return std::optional<XdsRoute>();
  }
  if (a.has_max_stream_duration()) {
    const auto& d = a.max_stream_duration();
    if (d.has_grpc_timeout_header_max()) {
      out.max_stream_duration_ms = Millis(d.grpc_timeout_header_max());
    } else if (d.has_max_stream_duration()) {
      out.max_stream_duration_ms = Millis(d.max_stream_duration());
    }
  }
  return std::optional<XdsRoute>(std::move(out));
}

absl::StatusOr<XdsRouteConfig> FromRouteConfiguration(const route::RouteConfiguration& rc) {
  XdsRouteConfig out;
  out.name = rc.name();
  for (const route::VirtualHost& vh : rc.virtual_hosts()) {
    XdsVirtualHost v;
    if (vh.domains().empty()) {
      return Invalid("RouteConfiguration", rc.name(),
                     absl::StrCat("virtual host \"", vh.name(), "\" has no domains"));
    }
    v.domains.assign(vh.domains().begin(), vh.domains().end());
    for (const route::Route& r : vh.routes()) {
      absl::StatusOr<std::optional<XdsRoute>> route = DecodeRoute(r);
      if (!route.ok()) {
        return Invalid("RouteConfiguration", rc.name(),
                       absl::StrCat("virtual host \"", vh.name(),
                                    "\": ", std::string(route.status().message())));
      }
      if (route->has_value()) v.routes.push_back(std::move(**route));
    }
    out.virtual_hosts.push_back(std::move(v));
  }
  return out;
}

bool ValidIp(const std::string& ip) {
  return !ip.empty() && ip.find_first_not_of("0123456789abcdefABCDEF.:") == std::string::npos;
}

}  // namespace

std::string_view TypeUrl(ResourceType type) {
  switch (type) {
    case ResourceType::kListener:
      return kListenerType;
    case ResourceType::kRouteConfig:
      return kRouteConfigType;
    case ResourceType::kCluster:
      return kClusterType;
    case ResourceType::kEndpoints:
      return kEndpointsType;
  }
  return "";
}

std::optional<ResourceType> TypeFromUrl(std::string_view url) {
  for (ResourceType t : kResourceTypes) {
    if (TypeUrl(t) == url) return t;
  }
  return std::nullopt;
}

std::string_view TypeName(ResourceType type) {
  std::string_view url = TypeUrl(type);
  return url.substr(url.rfind('.') + 1);
}

std::string XdsLocality::Name() const {
  return absl::StrCat("{region=", region, ",zone=", zone, ",sub_zone=", sub_zone, "}");
}

absl::StatusOr<XdsListener> DecodeListener(std::string_view bytes) {
  envoy::config::listener::v3::Listener l;
  if (!l.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError("Listener: does not parse");
  }
  XdsListener out;
  out.name = l.name();
  if (!l.has_api_listener() || l.api_listener().api_listener().type_url() != kHcmType) {
    return Invalid("Listener", l.name(), "no api_listener with an HttpConnectionManager");
  }
  HCM hcm;
  if (!l.api_listener().api_listener().UnpackTo(&hcm)) {
    return Invalid("Listener", l.name(), "the HttpConnectionManager does not parse");
  }
  // gRFC A39: the filters end with the router; others the client does not
  // implement are allowed only when marked optional.
  if (hcm.http_filters().empty()) return Invalid("Listener", l.name(), "no router filter");
  for (int i = 0; i < hcm.http_filters_size(); ++i) {
    const auto& f = hcm.http_filters(i);
    const bool router = f.typed_config().type_url() == kRouterType;
    const bool last = i == hcm.http_filters_size() - 1;
    if (router && !last)
      return Invalid("Listener", l.name(), "the router filter is not the last filter");
    if (!router && last) return Invalid("Listener", l.name(), "no router filter");
    if (!router && !f.is_optional()) {
      return Invalid("Listener", l.name(),
                     absl::StrCat("HTTP filter \"", f.name(), "\" (", f.typed_config().type_url(),
                                  ") is not supported"));
    }
  }
  switch (hcm.route_specifier_case()) {
    case HCM::kRds:
      if (!IsAdsSource(hcm.rds().config_source())) {
        return Invalid("Listener", l.name(), "rds.config_source is neither ads nor self");
      }
      if (hcm.rds().route_config_name().empty()) {
        return Invalid("Listener", l.name(), "rds.route_config_name is empty");
      }
      out.rds_name = hcm.rds().route_config_name();
      break;
    case HCM::kRouteConfig: {
      absl::StatusOr<XdsRouteConfig> rc = FromRouteConfiguration(hcm.route_config());
      if (!rc.ok()) return Invalid("Listener", l.name(), std::string(rc.status().message()));
      out.inline_routes = std::move(*rc);
      break;
    }
    default:
      return Invalid("Listener", l.name(),
                     "the HttpConnectionManager has neither rds nor route_config");
  }
  if (hcm.common_http_protocol_options().has_max_stream_duration()) {
    out.max_stream_duration_ms = Millis(hcm.common_http_protocol_options().max_stream_duration());
  }
  return out;
}

absl::StatusOr<XdsRouteConfig> DecodeRouteConfig(std::string_view bytes) {
  route::RouteConfiguration rc;
  if (!rc.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError("RouteConfiguration: does not parse");
  }
  return FromRouteConfiguration(rc);
}

absl::StatusOr<XdsCluster> DecodeCluster(std::string_view bytes) {
  using envoy::config::cluster::v3::Cluster;
  Cluster c;
  if (!c.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError("Cluster: does not parse");
  }
  XdsCluster out;
  out.name = c.name();
  if (c.has_cluster_type()) {
    if (c.cluster_type().typed_config().type_url() != kAggregateType) {
      return Invalid(
          "Cluster", c.name(),
          absl::StrCat("cluster_type \"", c.cluster_type().name(), "\" is not supported"));
    }
    envoy::extensions::clusters::aggregate::v3::ClusterConfig agg;
    if (!c.cluster_type().typed_config().UnpackTo(&agg) || agg.clusters().empty()) {
      return Invalid("Cluster", c.name(), "an aggregate cluster with no clusters");
    }
    out.kind = XdsCluster::Kind::kAggregate;
    out.aggregate.assign(agg.clusters().begin(), agg.clusters().end());
  } else if (c.type() == Cluster::EDS) {
    out.kind = XdsCluster::Kind::kEds;
    if (!IsAdsSource(c.eds_cluster_config().eds_config())) {
      return Invalid("Cluster", c.name(), "eds_cluster_config.eds_config is neither ads nor self");
    }
    out.eds_service_name = c.eds_cluster_config().service_name();
  } else if (c.type() == Cluster::LOGICAL_DNS) {
    out.kind = XdsCluster::Kind::kLogicalDns;
    const auto& la = c.load_assignment();
    if (la.endpoints_size() != 1 || la.endpoints(0).lb_endpoints_size() != 1) {
      return Invalid("Cluster", c.name(), "a LOGICAL_DNS cluster needs exactly one endpoint");
    }
    const auto& sa = la.endpoints(0).lb_endpoints(0).endpoint().address().socket_address();
    if (sa.address().empty() || sa.port_value() == 0 || sa.port_value() > 65535) {
      return Invalid("Cluster", c.name(), "the LOGICAL_DNS endpoint has no host or port");
    }
    out.dns_host = sa.address();
    out.dns_port = static_cast<uint16_t>(sa.port_value());
  } else {
    return Invalid("Cluster", c.name(),
                   absl::StrCat("discovery type ", Cluster::DiscoveryType_Name(c.type()),
                                " is not supported (EDS, LOGICAL_DNS or aggregate)"));
  }
  switch (c.lb_policy()) {
    case Cluster::ROUND_ROBIN:
      out.lb_policy = "round_robin";
      break;
    case Cluster::LEAST_REQUEST:
      out.lb_policy = "least_request";
      if (c.least_request_lb_config().has_choice_count()) {
        const uint32_t n = c.least_request_lb_config().choice_count().value();
        if (n < 2) return Invalid("Cluster", c.name(), "least_request choice_count is below 2");
        out.least_request_choices = std::min<uint32_t>(n, 10);  // A48's cap
      }
      break;
    default:
      return Invalid("Cluster", c.name(),
                     absl::StrCat("lb_policy ", Cluster::LbPolicy_Name(c.lb_policy()),
                                  " is not supported (ROUND_ROBIN or LEAST_REQUEST)"));
  }
  return out;
}

absl::StatusOr<XdsEndpoints> DecodeEndpoints(std::string_view bytes) {
  envoy::config::endpoint::v3::ClusterLoadAssignment la;
  if (!la.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError("ClusterLoadAssignment: does not parse");
  }
  XdsEndpoints out;
  out.name = la.cluster_name();
  for (const auto& lle : la.endpoints()) {
    // A27: a locality without a weight (or weight 0) is not used.
    if (!lle.has_load_balancing_weight() || lle.load_balancing_weight().value() == 0) continue;
    XdsLocality loc;
    loc.region = lle.locality().region();
    loc.zone = lle.locality().zone();
    loc.sub_zone = lle.locality().sub_zone();
    loc.weight = lle.load_balancing_weight().value();
    loc.priority = lle.priority();
    for (const auto& e : lle.lb_endpoints()) {
      const auto hs = e.health_status();
      if (hs != envoy::config::core::v3::UNKNOWN && hs != envoy::config::core::v3::HEALTHY)
        continue;
      const auto& sa = e.endpoint().address().socket_address();
      if (!ValidIp(sa.address())) {
        return Invalid(
            "ClusterLoadAssignment", la.cluster_name(),
            absl::StrCat("endpoint address \"", sa.address(), "\" is not an IP address"));
      }
      if (sa.port_value() == 0 || sa.port_value() > 65535) {
        return Invalid("ClusterLoadAssignment", la.cluster_name(),
                       absl::StrCat("endpoint ", sa.address(), " has port ", sa.port_value()));
      }
      XdsEndpoint ep;
      const bool v6 = sa.address().find(':') != std::string::npos;
      ep.address = v6 ? absl::StrCat("[", sa.address(), "]:", sa.port_value())
                      : absl::StrCat(sa.address(), ":", sa.port_value());
      if (e.has_load_balancing_weight() && e.load_balancing_weight().value() > 0) {
        ep.weight = e.load_balancing_weight().value();
      }
      loc.endpoints.push_back(std::move(ep));
    }
    if (loc.priority >= out.priorities.size()) out.priorities.resize(loc.priority + 1);
    out.priorities[loc.priority].push_back(std::move(loc));
  }
  for (size_t p = 0; p < out.priorities.size(); ++p) {
    if (out.priorities[p].empty()) {
      return Invalid(
          "ClusterLoadAssignment", la.cluster_name(),
          absl::StrCat("priority ", p, " has no locality (priorities must be contiguous from 0)"));
    }
    std::set<std::string> seen;
    uint64_t total = 0;
    for (const XdsLocality& l : out.priorities[p]) {
      total += l.weight;
      if (!seen.insert(l.Name()).second) {
        return Invalid("ClusterLoadAssignment", la.cluster_name(),
                       absl::StrCat("locality ", l.Name(), " appears twice in priority ", p));
      }
    }
    if (total > UINT32_MAX) {
      return Invalid(
          "ClusterLoadAssignment", la.cluster_name(),
          absl::StrCat("the locality weights of priority ", p, " add up to more than 2^32-1"));
    }
  }
  for (const auto& d : la.policy().drop_overloads()) {
    out.drops.push_back({d.category(), PerMillion(d.drop_percentage())});
  }
  return out;
}

absl::StatusOr<XdsResource> DecodeResource(ResourceType type, std::string_view bytes) {
  auto wrap = [](auto r) -> absl::StatusOr<XdsResource> {
    if (!r.ok()) return r.status();
    return XdsResource(std::move(*r));
  };
  switch (type) {
    case ResourceType::kListener:
      return wrap(DecodeListener(bytes));
    case ResourceType::kRouteConfig:
      return wrap(DecodeRouteConfig(bytes));
    case ResourceType::kCluster:
      return wrap(DecodeCluster(bytes));
    case ResourceType::kEndpoints:
      return wrap(DecodeEndpoints(bytes));
  }
  return absl::InvalidArgumentError("unknown resource type");
}

const std::string& ResourceName(const XdsResource& r) {
  return std::visit([](const auto& v) -> const std::string& { return v.name; }, r);
}

}  // namespace ringrpc::xds
