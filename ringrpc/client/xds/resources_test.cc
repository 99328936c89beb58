// Decoding and validating the four resource types (ringrpc/client/xds/resources.h),
// from resources built with the Envoy protos as a control plane builds them.
#include "ringrpc/client/xds/resources.h"

#include <gtest/gtest.h>

#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/clusters/aggregate/v3/cluster.pb.h"
#include "envoy/extensions/filters/http/router/v3/router.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"

namespace ringrpc::xds {
namespace {

using HCM = envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;
using envoy::config::cluster::v3::Cluster;
using envoy::config::endpoint::v3::ClusterLoadAssignment;
using envoy::config::listener::v3::Listener;
using envoy::config::route::v3::RouteConfiguration;

HCM RdsHcm(const std::string& rds) {
  HCM hcm;
  hcm.mutable_rds()->set_route_config_name(rds);
  hcm.mutable_rds()->mutable_config_source()->mutable_ads();
  auto* f = hcm.add_http_filters();
  f->set_name("router");
  f->mutable_typed_config()->PackFrom(envoy::extensions::filters::http::router::v3::Router());
  return hcm;
}

Listener ApiListener(const std::string& name, const HCM& hcm) {
  Listener l;
  l.set_name(name);
  l.mutable_api_listener()->mutable_api_listener()->PackFrom(hcm);
  return l;
}

TEST(ListenerTest, RdsNameAndMaxStreamDuration) {
  HCM hcm = RdsHcm("routes-1");
  hcm.mutable_common_http_protocol_options()->mutable_max_stream_duration()->set_seconds(3);
  absl::StatusOr<XdsListener> l = DecodeListener(ApiListener("greeter", hcm).SerializeAsString());
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->name, "greeter");
  EXPECT_EQ(l->rds_name, "routes-1");
  EXPECT_FALSE(l->inline_routes.has_value());
  EXPECT_EQ(l->max_stream_duration_ms, 3000);
}

TEST(ListenerTest, InlineRouteConfig) {
  HCM hcm = RdsHcm("x");
  auto* rc = hcm.mutable_route_config();
  rc->set_name("inline");
  auto* vh = rc->add_virtual_hosts();
  vh->add_domains("*");
  auto* r = vh->add_routes();
  r->mutable_match()->set_prefix("");
  r->mutable_route()->set_cluster("c1");
  absl::StatusOr<XdsListener> l = DecodeListener(ApiListener("greeter", hcm).SerializeAsString());
  ASSERT_TRUE(l.ok()) << l.status();
  ASSERT_TRUE(l->inline_routes.has_value());
  ASSERT_EQ(l->inline_routes->virtual_hosts.size(), 1u);
  ASSERT_EQ(l->inline_routes->virtual_hosts[0].routes.size(), 1u);
  EXPECT_EQ(l->inline_routes->virtual_hosts[0].routes[0].clusters[0].name, "c1");
}

TEST(ListenerTest, InvalidOnesNameTheListenerAndTheProblem) {
  Listener bare;
  bare.set_name("bare");
  EXPECT_EQ(DecodeListener(bare.SerializeAsString()).status().message(),
            "Listener \"bare\": no api_listener with an HttpConnectionManager");

  HCM no_router = RdsHcm("r");
  no_router.clear_http_filters();
  EXPECT_EQ(DecodeListener(ApiListener("l", no_router).SerializeAsString()).status().message(),
            "Listener \"l\": no router filter");

  HCM neither = RdsHcm("r");
  neither.clear_rds();
  EXPECT_EQ(DecodeListener(ApiListener("l", neither).SerializeAsString()).status().message(),
            "Listener \"l\": the HttpConnectionManager has neither rds nor route_config");

  HCM unknown_filter = RdsHcm("r");
  auto* f = unknown_filter.mutable_http_filters()->Add();
  unknown_filter.mutable_http_filters()->SwapElements(0, 1);
  f = unknown_filter.mutable_http_filters(0);
  f->set_name("fault");
  f->mutable_typed_config()->PackFrom(Cluster());  // some type the client does not know
  absl::Status s = DecodeListener(ApiListener("l", unknown_filter).SerializeAsString()).status();
  EXPECT_NE(s.message().find("HTTP filter \"fault\""), std::string::npos) << s;
  f->set_is_optional(true);  // optional: skipped
  EXPECT_TRUE(DecodeListener(ApiListener("l", unknown_filter).SerializeAsString()).ok());

  EXPECT_EQ(DecodeListener("\xff\xff").status().message(), "Listener: does not parse");
}

TEST(RouteConfigTest, MatchersAndWeightedClusters) {
  RouteConfiguration rc;
  rc.set_name("routes");
  auto* vh = rc.add_virtual_hosts();
  vh->set_name("vh");
  vh->add_domains("greeter.example.com");
  vh->add_domains("*.example.com");
  auto* r = vh->add_routes();
  r->mutable_match()->set_path("/helloworld.Greeter/SayHello");
  r->mutable_match()->mutable_case_sensitive()->set_value(false);
  auto* h = r->mutable_match()->add_headers();
  h->set_name("x-canary");
  h->mutable_string_match()->set_prefix("yes");
  h->mutable_string_match()->set_ignore_case(true);
  auto* wc = r->mutable_route()->mutable_weighted_clusters();
  auto* a = wc->add_clusters();
  a->set_name("a");
  a->mutable_weight()->set_value(70);
  auto* b = wc->add_clusters();
  b->set_name("b");
  b->mutable_weight()->set_value(30);
  auto* z = wc->add_clusters();
  z->set_name("zero");
  z->mutable_weight()->set_value(0);
  r->mutable_route()->mutable_max_stream_duration()->mutable_grpc_timeout_header_max()->set_seconds(
      2);
  auto* redirect = vh->add_routes();
  redirect->mutable_match()->set_prefix("/old");
  redirect->mutable_redirect()->set_host_redirect("elsewhere");
  auto* header_route = vh->add_routes();  // cluster_header: not supported, skipped
  header_route->mutable_match()->set_prefix("/");
  header_route->mutable_route()->set_cluster_header("x-cluster");

  absl::StatusOr<XdsRouteConfig> d = DecodeRouteConfig(rc.SerializeAsString());
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->virtual_hosts.size(), 1u);
  const XdsVirtualHost& v = d->virtual_hosts[0];
  EXPECT_EQ(v.domains, (std::vector<std::string>{"greeter.example.com", "*.example.com"}));
  ASSERT_EQ(v.routes.size(), 2u);
  const XdsRoute& first = v.routes[0];
  EXPECT_EQ(first.path_kind, XdsRoute::PathKind::kPath);
  EXPECT_EQ(first.path, "/helloworld.Greeter/SayHello");
  EXPECT_FALSE(first.case_sensitive);
  ASSERT_EQ(first.headers.size(), 1u);
  EXPECT_EQ(first.headers[0].kind, XdsHeaderMatcher::Kind::kPrefix);
  EXPECT_TRUE(first.headers[0].ignore_case);
  ASSERT_EQ(first.clusters.size(), 2u);  // the weight-0 one is left out
  EXPECT_EQ(first.clusters[0].name, "a");
  EXPECT_EQ(first.clusters[0].weight, 70u);
  EXPECT_EQ(first.clusters[1].weight, 30u);
  EXPECT_EQ(first.max_stream_duration_ms, 2000);
  EXPECT_TRUE(v.routes[1].non_forwarding);
}

TEST(RouteConfigTest, InvalidOnes) {
  RouteConfiguration rc;
  rc.set_name("routes");
  auto* vh = rc.add_virtual_hosts();
  vh->set_name("vh");
  EXPECT_EQ(DecodeRouteConfig(rc.SerializeAsString()).status().message(),
            "RouteConfiguration \"routes\": virtual host \"vh\" has no domains");
  vh->add_domains("*");
  auto* route = vh->add_routes();
  route->mutable_route()->set_cluster("c");
  EXPECT_EQ(DecodeRouteConfig(rc.SerializeAsString()).status().message(),
            "RouteConfiguration \"routes\": virtual host \"vh\": a route with no path matcher");
  route->mutable_match()->set_prefix("/");
  auto* wc = route->mutable_route()->mutable_weighted_clusters();
  wc->add_clusters()->set_name("a");
  EXPECT_EQ(DecodeRouteConfig(rc.SerializeAsString()).status().message(),
            "RouteConfiguration \"routes\": virtual host \"vh\": weighted_clusters: the weights "
            "add up to 0");
}

TEST(ClusterTest, EdsAggregateLogicalDnsAndPolicies) {
  Cluster eds;
  eds.set_name("c1");
  eds.set_type(Cluster::EDS);
  eds.mutable_eds_cluster_config()->mutable_eds_config()->mutable_ads();
  eds.mutable_eds_cluster_config()->set_service_name("c1-endpoints");
  eds.set_lb_policy(Cluster::LEAST_REQUEST);
  eds.mutable_least_request_lb_config()->mutable_choice_count()->set_value(3);
  absl::StatusOr<XdsCluster> c = DecodeCluster(eds.SerializeAsString());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kind, XdsCluster::Kind::kEds);
  EXPECT_EQ(c->eds_service_name, "c1-endpoints");
  EXPECT_EQ(c->lb_policy, "least_request");
  EXPECT_EQ(c->least_request_choices, 3u);

  Cluster agg;
  agg.set_name("agg");
  envoy::extensions::clusters::aggregate::v3::ClusterConfig cc;
  cc.add_clusters("primary");
  cc.add_clusters("secondary");
  agg.mutable_cluster_type()->set_name("envoy.clusters.aggregate");
  agg.mutable_cluster_type()->mutable_typed_config()->PackFrom(cc);
  c = DecodeCluster(agg.SerializeAsString());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->kind, XdsCluster::Kind::kAggregate);
  EXPECT_EQ(c->aggregate, (std::vector<std::string>{"primary", "secondary"}));

  Cluster dns;
  dns.set_name("dns");
  dns.set_type(Cluster::LOGICAL_DNS);
  auto* sa = dns.mutable_load_assignment()
                 ->add_endpoints()
                 ->add_lb_endpoints()
                 ->mutable_endpoint()
                 ->mutable_address()
                 ->mutable_socket_address();
  sa->set_address("backend.example.com");
  sa->set_port_value(8443);
  c = DecodeCluster(dns.SerializeAsString());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->dns_host, "backend.example.com");
  EXPECT_EQ(c->dns_port, 8443);

  Cluster ring = eds;
  ring.set_lb_policy(Cluster::RING_HASH);
  EXPECT_EQ(DecodeCluster(ring.SerializeAsString()).status().message(),
            "Cluster \"c1\": lb_policy RING_HASH is not supported (ROUND_ROBIN or LEAST_REQUEST)");
  Cluster rest = eds;
  rest.mutable_eds_cluster_config()->mutable_eds_config()->mutable_path_config_source()->set_path(
      "/x");
  EXPECT_EQ(DecodeCluster(rest.SerializeAsString()).status().message(),
            "Cluster \"c1\": eds_cluster_config.eds_config is neither ads nor self");
  Cluster stat = eds;
  stat.set_type(Cluster::STATIC);
  EXPECT_EQ(
      DecodeCluster(stat.SerializeAsString()).status().message(),
      "Cluster \"c1\": discovery type STATIC is not supported (EDS, LOGICAL_DNS or aggregate)");
}

void AddLocality(ClusterLoadAssignment& la, const std::string& zone, uint32_t weight,
                 uint32_t priority,
                 std::vector<std::pair<std::string, envoy::config::core::v3::HealthStatus>> eps) {
  auto* l = la.add_endpoints();
  l->mutable_locality()->set_region("r");
  l->mutable_locality()->set_zone(zone);
  if (weight > 0) l->mutable_load_balancing_weight()->set_value(weight);
  l->set_priority(priority);
  for (auto& [addr, health] : eps) {
    auto* e = l->add_lb_endpoints();
    auto* sa = e->mutable_endpoint()->mutable_address()->mutable_socket_address();
    sa->set_address(addr.substr(0, addr.rfind(':')));
    sa->set_port_value(std::stoi(addr.substr(addr.rfind(':') + 1)));
    e->set_health_status(health);
  }
}

TEST(EndpointsTest, PrioritiesLocalitiesHealthAndDrops) {
  using envoy::config::core::v3::DRAINING;
  using envoy::config::core::v3::HEALTHY;
  using envoy::config::core::v3::UNHEALTHY;
  using envoy::config::core::v3::UNKNOWN;
  ClusterLoadAssignment la;
  la.set_cluster_name("c1");
  AddLocality(la, "a", 3, 0,
              {{"10.0.0.1:80", HEALTHY}, {"10.0.0.2:80", UNHEALTHY}, {"::1:81", UNKNOWN}});
  AddLocality(la, "b", 1, 0, {{"10.0.0.3:80", DRAINING}});
  AddLocality(la, "c", 0, 0, {{"10.0.0.9:80", HEALTHY}});  // no weight: not used
  AddLocality(la, "d", 5, 1, {{"10.0.1.1:80", HEALTHY}});
  auto* drop = la.mutable_policy()->add_drop_overloads();
  drop->set_category("lb");
  drop->mutable_drop_percentage()->set_numerator(25);  // of a hundred
  absl::StatusOr<XdsEndpoints> e = DecodeEndpoints(la.SerializeAsString());
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ(e->priorities.size(), 2u);
  ASSERT_EQ(e->priorities[0].size(), 2u);
  EXPECT_EQ(e->priorities[0][0].weight, 3u);
  ASSERT_EQ(e->priorities[0][0].endpoints.size(), 2u);
  EXPECT_EQ(e->priorities[0][0].endpoints[0].address, "10.0.0.1:80");
  EXPECT_EQ(e->priorities[0][0].endpoints[1].address, "[::1]:81");
  EXPECT_TRUE(e->priorities[0][1].endpoints.empty());  // DRAINING left out
  EXPECT_EQ(e->priorities[1][0].Name(), "{region=r,zone=d,sub_zone=}");
  ASSERT_EQ(e->drops.size(), 1u);
  EXPECT_EQ(e->drops[0].per_million, 250000u);

  ClusterLoadAssignment gap;
  gap.set_cluster_name("c2");
  AddLocality(gap, "a", 1, 1, {{"10.0.0.1:80", HEALTHY}});
  EXPECT_EQ(
      DecodeEndpoints(gap.SerializeAsString()).status().message(),
      "ClusterLoadAssignment \"c2\": priority 0 has no locality (priorities must be contiguous "
      "from 0)");
  ClusterLoadAssignment bad;
  bad.set_cluster_name("c3");
  AddLocality(bad, "a", 1, 0, {{"backend.example.com:80", HEALTHY}});
  EXPECT_EQ(DecodeEndpoints(bad.SerializeAsString()).status().message(),
            "ClusterLoadAssignment \"c3\": endpoint address \"backend.example.com\" is not an IP "
            "address");
}

TEST(TypesTest, UrlsRoundTrip) {
  for (ResourceType t : kResourceTypes) EXPECT_EQ(TypeFromUrl(TypeUrl(t)), t);
  EXPECT_EQ(TypeName(ResourceType::kEndpoints), "ClusterLoadAssignment");
  EXPECT_FALSE(TypeFromUrl("type.googleapis.com/envoy.config.listener.v3.Other").has_value());
}

}  // namespace
}  // namespace ringrpc::xds
