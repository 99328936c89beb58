// XdsRouter: A28's matching of a call's path and metadata, in route order,
// and the weighted choice among a route's clusters.
#include "ringrpc/client/xds/xds_router.h"

#include <gtest/gtest.h>

#include <map>

namespace ringrpc::xds {
namespace {

using Metadata = std::vector<std::pair<std::string, std::string>>;

XdsRoute To(std::string cluster) {
  XdsRoute r;
  r.clusters.push_back({std::move(cluster), 1});
  return r;
}

XdsRoute Prefix(std::string prefix, std::string cluster) {
  XdsRoute r = To(std::move(cluster));
  r.path = std::move(prefix);
  return r;
}

std::string RouteOf(const XdsRouter& router, std::string_view method, const Metadata& md = {},
                    uint64_t random = 0) {
  absl::StatusOr<CallRoute> c = router.Route({.method = method, .metadata = md, .random = random});
  return c.ok() ? c->group : "error: " + std::string(c.status().message());
}

// Where 100000 calls to "/a" go, their random numbers from an xorshift
// seeded with `seed`.
std::map<std::string, int> Draws(const XdsRouter& router, uint64_t seed) {
  std::map<std::string, int> n;
  for (int i = 0; i < 100000; ++i) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    ++n[RouteOf(router, "/a", {}, seed)];
  }
  return n;
}

TEST(XdsRouterTest, TheFirstMatchingRouteWinsByPrefixPathOrRegex) {
  XdsRoute exact = To("exact");
  exact.path_kind = XdsRoute::PathKind::kPath;
  exact.path = "/pkg.Svc/Get";
  XdsRoute regex = To("regex");
  regex.path_kind = XdsRoute::PathKind::kRegex;
  regex.path = "/pkg\\.Svc/(Put|Post)";
  XdsRouter router("rc", {exact, regex, Prefix("/pkg.", "pkg"), Prefix("", "default")}, {});
  EXPECT_EQ(RouteOf(router, "/pkg.Svc/Get"), "exact");
  EXPECT_EQ(RouteOf(router, "/pkg.Svc/Put"), "regex");
  EXPECT_EQ(RouteOf(router, "/pkg.Svc/Putx"), "pkg");  // a regex matches the whole path
  EXPECT_EQ(RouteOf(router, "/other.Svc/Get"), "default");
  EXPECT_EQ(router.Clusters(), (std::vector<std::string>{"default", "exact", "pkg", "regex"}));
}

TEST(XdsRouterTest, CaseSensitivityIsTheRoutes) {
  XdsRoute loose = Prefix("/PKG.", "loose");
  loose.case_sensitive = false;
  XdsRouter router("rc", {Prefix("/PKG.", "strict"), loose}, {});
  EXPECT_EQ(RouteOf(router, "/PKG.S/M"), "strict");
  EXPECT_EQ(RouteOf(router, "/pkg.S/M"), "loose");
}

TEST(XdsRouterTest, NoMatchAndNonForwardingRoutesFailNamingTheRouteConfig) {
  XdsRoute redirect = Prefix("/redirect", "");
  redirect.clusters.clear();
  redirect.non_forwarding = true;
  XdsRouter router("greeter-routes", {redirect, Prefix("/pkg.", "pkg")}, {});
  EXPECT_EQ(RouteOf(router, "/other.S/M"),
            "error: xDS: no route of RouteConfiguration \"greeter-routes\" matches /other.S/M");
  EXPECT_EQ(
      RouteOf(router, "/redirect.S/M"),
      "error: xDS: the route of RouteConfiguration \"greeter-routes\" that matches /redirect.S/M "
      "does not forward to a cluster");
}

TEST(XdsRouterTest, HeadersMatchAsA28Says) {
  auto with = [](XdsHeaderMatcher m) {
    XdsRoute r = Prefix("", "hit");
    r.headers.push_back(std::move(m));
    return XdsRouter("rc", {r, Prefix("", "miss")}, {});
  };
  using K = XdsHeaderMatcher::Kind;
  const Metadata md = {{"env", "canary"}, {"env", "eu"}, {"n", "42"}, {"blob-bin", "x"}};
  // Several values are joined with ",".
  EXPECT_EQ(RouteOf(with({.name = "env", .kind = K::kExact, .value = "canary,eu"}), "/a", md),
            "hit");
  EXPECT_EQ(RouteOf(with({.name = "env", .kind = K::kExact, .value = "canary"}), "/a", md), "miss");
  EXPECT_EQ(RouteOf(with({.name = "env", .kind = K::kPrefix, .value = "CAN", .ignore_case = true}),
                    "/a", md),
            "hit");
  EXPECT_EQ(RouteOf(with({.name = "env", .kind = K::kPrefix, .value = "CAN"}), "/a", md), "miss");
  EXPECT_EQ(RouteOf(with({.name = "env", .kind = K::kSuffix, .value = ",eu"}), "/a", md), "hit");
  EXPECT_EQ(RouteOf(with({.name = "env", .kind = K::kContains, .value = "ary,"}), "/a", md), "hit");
  EXPECT_EQ(RouteOf(with({.name = "env", .kind = K::kRegex, .value = "can.*,e."}), "/a", md),
            "hit");
  EXPECT_EQ(
      RouteOf(with({.name = "n", .kind = K::kRange, .range_start = 40, .range_end = 43}), "/a", md),
      "hit");
  EXPECT_EQ(
      RouteOf(with({.name = "n", .kind = K::kRange, .range_start = 43, .range_end = 50}), "/a", md),
      "miss");
  EXPECT_EQ(RouteOf(with({.name = "n", .kind = K::kPresent, .present = true}), "/a", md), "hit");
  EXPECT_EQ(RouteOf(with({.name = "gone", .kind = K::kPresent, .present = false}), "/a", md),
            "hit");
  // Inverted; but an absent header matches no string matcher, inverted or not.
  EXPECT_EQ(
      RouteOf(with({.name = "env", .kind = K::kExact, .value = "x", .invert = true}), "/a", md),
      "hit");
  EXPECT_EQ(
      RouteOf(with({.name = "gone", .kind = K::kExact, .value = "x", .invert = true}), "/a", md),
      "miss");
  // -bin headers are never seen; content-type is application/grpc.
  EXPECT_EQ(RouteOf(with({.name = "blob-bin", .kind = K::kPresent, .present = true}), "/a", md),
            "miss");
  EXPECT_EQ(RouteOf(with({.name = "content-type", .kind = K::kExact, .value = "application/grpc"}),
                    "/a", md),
            "hit");
}

TEST(XdsRouterTest, WeightedClustersSplitByWeightAndFractionsByTheirShare) {
  XdsRoute split = Prefix("", "");
  split.clusters = {{"a", 70}, {"b", 30}};
  XdsRouter router("rc", {split}, {});
  std::map<std::string, int> n = Draws(router, 0x9e3779b97f4a7c15ULL);
  EXPECT_NEAR(n["a"], 70000, 1000);
  EXPECT_NEAR(n["b"], 30000, 1000);
  XdsRoute some = Prefix("", "some");
  some.fraction_per_million = 250000;
  XdsRouter fractional("rc", {some, Prefix("", "rest")}, {});
  EXPECT_EQ(RouteOf(fractional, "/a", {}, 249999), "some");
  EXPECT_EQ(RouteOf(fractional, "/a", {}, 250000), "rest");
}

TEST(XdsRouterTest, ACallToAClusterWithLocalitiesGoesToOneByWeight) {
  XdsRoute split = Prefix("", "");
  split.clusters = {{"a", 50}, {"b", 50}};
  XdsRouter router("rc", {split}, {}, {{"a", {{"a z1", 3}, {"a z2", 1}}}});
  std::map<std::string, int> n = Draws(router, 0x2545f4914f6cdd1dULL);
  // b has no localities listed: its own group; a's half splits 3:1.
  EXPECT_NEAR(n["b"], 50000, 1000);
  EXPECT_NEAR(n["a z1"], 37500, 1000);
  EXPECT_NEAR(n["a z2"], 12500, 1000);
  EXPECT_EQ(n.size(), 3u);
}

TEST(XdsRouterTest, AFailedClusterFailsTheCallsRoutedToItWithItsReason) {
  XdsRouter router("rc", {Prefix("/b", "b"), Prefix("", "a")},
                   {{"b", "xDS: Cluster \"b\" does not exist"}});
  EXPECT_EQ(RouteOf(router, "/b.S/M"), "error: xDS: Cluster \"b\" does not exist");
  EXPECT_EQ(RouteOf(router, "/a.S/M"), "a");
}

TEST(XdsRouterTest, TheRoutesMaxStreamDurationElseTheListenersLimitsTheCall) {
  XdsRoute own = Prefix("/own", "a");
  own.max_stream_duration_ms = 250;
  XdsRoute zero = Prefix("/zero", "a");
  zero.max_stream_duration_ms = 0;  // no limit, not the Listener's
  XdsRouter router("rc", {own, zero, Prefix("", "a")}, {}, {}, 1000);
  const std::vector<std::pair<std::string, std::string>> md;
  auto limit = [&](std::string_view method) {
    absl::StatusOr<CallRoute> r = router.Route({.method = method, .metadata = md, .random = 0});
    EXPECT_TRUE(r.ok());
    return r.ok() ? r->max_duration : std::nullopt;
  };
  EXPECT_EQ(limit("/own.S/M"), std::chrono::milliseconds(250));
  EXPECT_EQ(limit("/zero.S/M"), std::nullopt);
  EXPECT_EQ(limit("/other.S/M"), std::chrono::milliseconds(1000));
  XdsRouter unlimited("rc", {Prefix("", "a")}, {});
  absl::StatusOr<CallRoute> r = unlimited.Route({.method = "/a", .metadata = md, .random = 0});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->max_duration, std::nullopt);
}

}  // namespace
}  // namespace ringrpc::xds
