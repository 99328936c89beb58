// ringrpc/client/xds/xds_router.cc — see xds_router.h.
#include "ringrpc/client/xds/xds_router.h"

#include <optional>
#include <set>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "re2/re2.h"
#include "ringrpc/base/random.h"

namespace ringrpc::xds {

struct XdsRouter::Compiled {
  XdsRoute route;
  std::unique_ptr<re2::RE2> path_regex;                 // kRegex
  std::vector<std::unique_ptr<re2::RE2>> header_regex;  // by header, null if not kRegex
  uint64_t total_weight = 0;
};

namespace {

// Debian's absl::string_view is not std::string_view.
absl::string_view A(std::string_view v) { return absl::string_view(v.data(), v.size()); }

std::unique_ptr<re2::RE2> Compile(const std::string& pattern, bool case_sensitive) {
  re2::RE2::Options o;
  o.set_case_sensitive(case_sensitive);
  o.set_log_errors(false);
  return std::make_unique<re2::RE2>(pattern, o);
}

// The value a header matcher sees (A28), or nullopt: absent.
std::optional<std::string> HeaderValue(const std::string& name, const CallRouteInfo& call) {
  if (absl::EndsWith(name, "-bin")) return std::nullopt;
  if (name == "content-type") return "application/grpc";
  std::optional<std::string> v;
  for (const auto& [k, value] : call.metadata) {
    if (k != name) continue;
    if (v) {
      absl::StrAppend(&*v, ",", value);
    } else {
      v = value;
    }
  }
  return v;
}

bool StringMatch(const XdsHeaderMatcher& m, absl::string_view v) {
  using K = XdsHeaderMatcher::Kind;
  switch (m.kind) {
    case K::kExact:
      return m.ignore_case ? absl::EqualsIgnoreCase(v, m.value) : v == m.value;
    case K::kPrefix:
      return m.ignore_case ? absl::StartsWithIgnoreCase(v, m.value) : absl::StartsWith(v, m.value);
    case K::kSuffix:
      return m.ignore_case ? absl::EndsWithIgnoreCase(v, m.value) : absl::EndsWith(v, m.value);
    case K::kContains:
      return m.ignore_case
                 ? absl::StrContains(absl::AsciiStrToLower(v), absl::AsciiStrToLower(m.value))
                 : absl::StrContains(v, m.value);
    default:
      return false;
  }
}

}  // namespace

XdsRouter::XdsRouter(std::string route_config, std::vector<XdsRoute> routes,
                     std::map<std::string, std::string> failed,
                     std::map<std::string, Localities> localities,
                     std::optional<int64_t> max_stream_duration_ms)
    : route_config_(std::move(route_config)),
      failed_(std::move(failed)),
      localities_(std::move(localities)),
      max_stream_duration_ms_(max_stream_duration_ms) {
  for (XdsRoute& r : routes) {
    Compiled c;
    if (r.path_kind == XdsRoute::PathKind::kRegex) c.path_regex = Compile(r.path, r.case_sensitive);
    for (const XdsHeaderMatcher& h : r.headers) {
      c.header_regex.push_back(h.kind == XdsHeaderMatcher::Kind::kRegex ? Compile(h.value, true)
                                                                        : nullptr);
    }
    for (const XdsRoute::WeightedCluster& w : r.clusters) c.total_weight += w.weight;
    c.route = std::move(r);
    routes_.push_back(std::move(c));
  }
}

XdsRouter::~XdsRouter() = default;

std::vector<std::string> XdsRouter::Clusters() const {
  std::set<std::string> names;
  for (const Compiled& c : routes_) {
    for (const XdsRoute::WeightedCluster& w : c.route.clusters) names.insert(w.name);
  }
  return {names.begin(), names.end()};
}

bool XdsRouter::Matches(const Compiled& c, const CallRouteInfo& call) const {
  const XdsRoute& r = c.route;
  switch (r.path_kind) {
    case XdsRoute::PathKind::kPrefix:
      if (!(r.case_sensitive ? absl::StartsWith(A(call.method), r.path)
                             : absl::StartsWithIgnoreCase(A(call.method), r.path))) {
        return false;
      }
      break;
    case XdsRoute::PathKind::kPath:
      if (!(r.case_sensitive ? call.method == r.path
                             : absl::EqualsIgnoreCase(A(call.method), r.path))) {
        return false;
      }
      break;
    case XdsRoute::PathKind::kRegex:
      if (!c.path_regex->ok() ||
          !re2::RE2::FullMatch(re2::StringPiece(call.method.data(), call.method.size()),
                               *c.path_regex))
        return false;
      break;
  }
  for (size_t i = 0; i < r.headers.size(); ++i) {
    const XdsHeaderMatcher& h = r.headers[i];
    const std::optional<std::string> v = HeaderValue(h.name, call);
    bool match;
    if (h.kind == XdsHeaderMatcher::Kind::kPresent) {
      match = v.has_value() == h.present;
    } else if (!v) {
      return false;  // every other kind fails on an absent header, inverted or not
    } else if (h.kind == XdsHeaderMatcher::Kind::kRange) {
      int64_t n;
      match = absl::SimpleAtoi(*v, &n) && n >= h.range_start && n < h.range_end;
    } else if (h.kind == XdsHeaderMatcher::Kind::kRegex) {
      match = c.header_regex[i]->ok() && re2::RE2::FullMatch(*v, *c.header_regex[i]);
    } else {
      match = StringMatch(h, *v);
    }
    if (match == h.invert) return false;
  }
  // The fraction draws on the low bits, the weighted choice on the high.
  if (r.fraction_per_million && call.random % 1000000 >= *r.fraction_per_million) return false;
  return true;
}

absl::StatusOr<CallRoute> XdsRouter::Route(const CallRouteInfo& call) const {
  for (const Compiled& c : routes_) {
    if (!Matches(c, call)) continue;
    if (c.route.non_forwarding || c.total_weight == 0) {
      return absl::UnavailableError(absl::StrCat("xDS: the route of RouteConfiguration \"",
                                                 route_config_, "\" that matches ", A(call.method),
                                                 " does not forward to a cluster"));
    }
    uint64_t pick = (call.random >> 24) % c.total_weight;
    const std::string* cluster = &c.route.clusters.back().name;
    for (const XdsRoute::WeightedCluster& w : c.route.clusters) {
      if (pick < w.weight) {
        cluster = &w.name;
        break;
      }
      pick -= w.weight;
    }
    if (auto it = failed_.find(*cluster); it != failed_.end())
      return absl::UnavailableError(it->second);
    CallRoute out;
    const std::optional<int64_t>& limit =
        c.route.max_stream_duration_ms ? c.route.max_stream_duration_ms : max_stream_duration_ms_;
    if (limit && *limit > 0) out.max_duration = std::chrono::milliseconds(*limit);
    out.group = Locality(*cluster, call.random);
    return out;
  }
  return absl::UnavailableError(absl::StrCat("xDS: no route of RouteConfiguration \"",
                                             route_config_, "\" matches ", A(call.method)));
}

std::string XdsRouter::Locality(const std::string& cluster, uint64_t random) const {
  auto l = localities_.find(cluster);
  if (l == localities_.end()) return cluster;
  // Another draw, from bits mixed out of the same number, so it does not
  // follow the cluster's.
  const uint64_t z = Mix64(random + 0x9e3779b97f4a7c15ULL);
  uint64_t total = 0;
  for (const auto& [group, weight] : l->second) total += weight;
  if (total == 0) return cluster;
  uint64_t at = z % total;
  for (const auto& [group, weight] : l->second) {
    if (at < weight) return group;
    at -= weight;
  }
  return cluster;
}

}  // namespace ringrpc::xds
