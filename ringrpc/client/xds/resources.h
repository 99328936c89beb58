// ringrpc/client/xds/resources.h — the four xDS resource types as the client uses
// them (gRFC A27, A28): decoded from their Envoy protos
// (third_party/xds_protos) into plain structs, and validated as grpc++
// validates them. A resource that fails validation is NACKed with the
// message Decode* returns; fields the client does not use are ignored, as
// xDS requires.
//
//   absl::StatusOr<XdsListener> l = DecodeListener(any.value());
//   if (!l.ok()) ... NACK with l.status().message() ...
#ifndef RINGRPC_CLIENT_XDS_RESOURCES_H_
#define RINGRPC_CLIENT_XDS_RESOURCES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"

namespace ringrpc::xds {

// The type URLs of the resources, as in DiscoveryRequest.type_url.
inline constexpr std::string_view kListenerType =
    "type.googleapis.com/envoy.config.listener.v3.Listener";
inline constexpr std::string_view kRouteConfigType =
    "type.googleapis.com/envoy.config.route.v3.RouteConfiguration";
inline constexpr std::string_view kClusterType =
    "type.googleapis.com/envoy.config.cluster.v3.Cluster";
inline constexpr std::string_view kEndpointsType =
    "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";

enum class ResourceType { kListener, kRouteConfig, kCluster, kEndpoints };
inline constexpr ResourceType kResourceTypes[] = {ResourceType::kListener,
                                                  ResourceType::kRouteConfig,
                                                  ResourceType::kCluster, ResourceType::kEndpoints};
std::string_view TypeUrl(ResourceType type);
std::optional<ResourceType> TypeFromUrl(std::string_view url);
// "Listener", "RouteConfiguration", "Cluster", "ClusterLoadAssignment".
std::string_view TypeName(ResourceType type);

// --- RDS ---------------------------------------------------------------

struct XdsHeaderMatcher {
  std::string name;
  enum class Kind { kExact, kPrefix, kSuffix, kContains, kRegex, kPresent, kRange };
  Kind kind = Kind::kPresent;
  std::string value;         // exact / prefix / suffix / contains / regex
  bool ignore_case = false;  // string matchers
  int64_t range_start = 0;   // kRange: [start, end)
  int64_t range_end = 0;
  bool present = true;  // kPresent
  bool invert = false;
};

struct XdsRoute {
  // The path matcher: exactly one of prefix (default ""), path, regex.
  enum class PathKind { kPrefix, kPath, kRegex };
  PathKind path_kind = PathKind::kPrefix;
  std::string path;  // prefix, path or regex
  bool case_sensitive = true;
  std::vector<XdsHeaderMatcher> headers;
  // runtime_fraction: taken when a random number in [0, 1e6) is below it.
  std::optional<uint32_t> fraction_per_million;

  // The action: a cluster, or weighted clusters; or not forwarding
  // (redirect, direct response, unsupported cluster_specifier): calls that
  // match fail UNAVAILABLE.
  struct WeightedCluster {
    std::string name;
    uint32_t weight = 0;
  };
  std::vector<WeightedCluster> clusters;  // one with weight 1 for "cluster"
  bool non_forwarding = false;
  std::optional<int64_t> max_stream_duration_ms;  // grpc_timeout_header_max / max_stream_duration
};

struct XdsVirtualHost {
  std::vector<std::string> domains;
  std::vector<XdsRoute> routes;
};

struct XdsRouteConfig {
  std::string name;
  std::vector<XdsVirtualHost> virtual_hosts;
};

// --- LDS ---------------------------------------------------------------

struct XdsListener {
  std::string name;
  // The HttpConnectionManager's routes: by RDS name, or inline.
  std::string rds_name;
  std::optional<XdsRouteConfig> inline_routes;
  std::optional<int64_t> max_stream_duration_ms;  // common_http_protocol_options
};

// --- CDS ---------------------------------------------------------------

struct XdsCluster {
  std::string name;
  enum class Kind { kEds, kLogicalDns, kAggregate };
  Kind kind = Kind::kEds;
  std::string eds_service_name;  // kEds: empty = the cluster's name
  std::string dns_host;          // kLogicalDns
  uint16_t dns_port = 0;
  std::vector<std::string> aggregate;     // kAggregate: clusters in priority order
  std::string lb_policy = "round_robin";  // or "least_request"
  uint32_t least_request_choices = 2;
};

// --- EDS ---------------------------------------------------------------

struct XdsEndpoint {
  std::string address;  // "ip:port" or "[ip6]:port"
  uint32_t weight = 1;
};

struct XdsLocality {
  std::string region, zone, sub_zone;
  uint32_t weight = 0;
  uint32_t priority = 0;
  std::vector<XdsEndpoint> endpoints;  // HEALTHY and UNKNOWN ones only
  std::string Name() const;            // "{region=..,zone=..,sub_zone=..}"
};

struct XdsDrop {
  std::string category;
  uint32_t per_million = 0;
};

struct XdsEndpoints {
  std::string name;  // cluster_name
  // By priority (index = priority, contiguous from 0), then localities.
  std::vector<std::vector<XdsLocality>> priorities;
  std::vector<XdsDrop> drops;
};

using XdsResource = std::variant<XdsListener, XdsRouteConfig, XdsCluster, XdsEndpoints>;

// Each decodes one serialized resource (an Any's value) of its type.
// INVALID_ARGUMENT naming the resource and the field on a resource the
// client cannot use.
absl::StatusOr<XdsListener> DecodeListener(std::string_view bytes);
absl::StatusOr<XdsRouteConfig> DecodeRouteConfig(std::string_view bytes);
absl::StatusOr<XdsCluster> DecodeCluster(std::string_view bytes);
absl::StatusOr<XdsEndpoints> DecodeEndpoints(std::string_view bytes);
// By type.
absl::StatusOr<XdsResource> DecodeResource(ResourceType type, std::string_view bytes);
// The name of a decoded resource.
const std::string& ResourceName(const XdsResource& r);

}  // namespace ringrpc::xds

#endif  // RINGRPC_CLIENT_XDS_RESOURCES_H_
