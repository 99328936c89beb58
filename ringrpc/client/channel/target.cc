#include "ringrpc/client/channel/target.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace ringrpc::channel {
namespace {

// The target as it may appear in a message: control and non-ASCII bytes
// (NUL included) escaped, so a log line never carries raw bytes.
std::string Printable(std::string_view s) {
  return absl::CHexEscape(absl::string_view(s.data(), s.size()));
}

absl::Status Bad(std::string_view target, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid target \"", Printable(target), "\": ", std::string(why)));
}

absl::StatusOr<Target> HostPort(std::string_view target, std::string_view hp) {
  Target t;
  t.kind = Target::Kind::kDns;
  if (hp.empty()) return Bad(target, "missing host");
  std::string_view host = hp, port;
  if (hp[0] == '[') {  // [v6]:port
    size_t close = hp.find(']');
    if (close == std::string_view::npos) return Bad(target, "unterminated [ipv6 address]");
    host = hp.substr(1, close - 1);
    if (close + 1 < hp.size()) {
      if (hp[close + 1] != ':') return Bad(target, "expected :port after ]");
      port = hp.substr(close + 2);
    }
  } else if (size_t colon = hp.rfind(':'); colon != std::string_view::npos) {
    if (hp.find(':') != colon) return Bad(target, "IPv6 addresses need [brackets]");
    host = hp.substr(0, colon);
    port = hp.substr(colon + 1);
  }
  if (host.empty()) return Bad(target, "missing host");
  for (char c : host) {
    // A DNS name or an IP literal: never bytes for getaddrinfo to guess at.
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == '/' || c == '\\' || c == '@' || c == '?' || c == '#') {
      return Bad(target, absl::StrCat("host contains the byte 0x", absl::Hex(u, absl::kZeroPad2),
                                      ", which no host name or address has"));
    }
  }
  if (!port.empty()) {
    uint32_t p = 0;
    for (char c : port) {
      if (c < '0' || c > '9') return Bad(target, "port is not a number");
      p = p * 10 + (c - '0');
      if (p > 65535) break;
    }
    if (p == 0 || p > 65535) return Bad(target, "port out of range 1..65535");
    t.port = static_cast<uint16_t>(p);
  } else if (!hp.empty() && hp.back() == ':') {
    return Bad(target, "empty port");
  }
  t.host = std::string(host);
  t.authority = std::string(hp);
  return t;
}

absl::StatusOr<Target> StaticList(std::string_view target, std::string_view list,
                                  std::string_view prefix) {
  Target t;
  t.kind = Target::Kind::kStatic;
  if (list.empty()) return Bad(target, "no addresses");
  for (absl::string_view piece : absl::StrSplit(absl::string_view(list.data(), list.size()), ',')) {
    std::string_view part(piece.data(), piece.size());
    absl::StatusOr<transport::Address> a = transport::Address::Parse(part);
    if (!a.ok()) return Bad(target, std::string(a.status().message()));
    if ((prefix == "ipv4" && a->family() != AF_INET) ||
        (prefix == "ipv6" && a->family() != AF_INET6)) {
      return Bad(target, absl::StrCat("\"", Printable(part), "\" is not an ", std::string(prefix),
                                      " address"));
    }
    t.addresses.push_back(*a);
  }
  t.authority = std::string(list.substr(0, list.find(',')));
  return t;
}

}  // namespace

absl::StatusOr<std::string> ParseDnsServer(std::string_view authority) {
  // c-ares takes IP addresses only: a server named by a host name would
  // need a resolver to find the resolver.
  std::string with_port(authority);
  bool has_port = authority.front() == '[' ? authority.find("]:") != std::string_view::npos
                                           : authority.find(':') != std::string_view::npos;
  if (!has_port) with_port += ":53";
  absl::StatusOr<transport::Address> a = transport::Address::Parse(with_port);
  if (!a.ok() || (a->family() != AF_INET && a->family() != AF_INET6)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the DNS server \"", Printable(authority),
        "\" is not an IP address with an optional port (a.b.c.d[:port] or [v6][:port])"));
  }
  return a->ToString();
}

absl::StatusOr<Target> ParseTarget(std::string_view target) {
  if (target.empty()) return Bad(target, "empty");
  if (target.rfind("unix-abstract:", 0) != 0 && target.find('\0') != std::string_view::npos) {
    return Bad(target, "contains a NUL byte");  // found by target_fuzzer
  }
  if (target.rfind("unix-abstract:", 0) == 0 || target.rfind("unix:", 0) == 0) {
    absl::StatusOr<transport::Address> a = transport::Address::Parse(target);
    if (!a.ok()) return Bad(target, std::string(a.status().message()));
    Target t;
    t.kind = Target::Kind::kStatic;
    t.addresses.push_back(*a);
    t.authority = "localhost";
    return t;
  }
  if (target.rfind("ipv4:", 0) == 0) return StaticList(target, target.substr(5), "ipv4");
  if (target.rfind("ipv6:", 0) == 0) return StaticList(target, target.substr(5), "ipv6");
  if (target.rfind("dns:", 0) == 0) {
    std::string_view rest = target.substr(4);
    std::string server;
    if (rest.rfind("//", 0) == 0) {  // dns://[dns-server]/host:port
      size_t slash = rest.find('/', 2);
      if (slash == std::string_view::npos) return Bad(target, "expected dns:///host:port");
      std::string_view authority = rest.substr(2, slash - 2);
      if (!authority.empty()) {
        absl::StatusOr<std::string> s = ParseDnsServer(authority);
        if (!s.ok()) return Bad(target, std::string(s.status().message()));
        server = *std::move(s);
      }
      rest = rest.substr(slash + 1);
    }
    absl::StatusOr<Target> t = HostPort(target, rest);
    if (t.ok()) t->dns_server = std::move(server);
    return t;
  }
  // xds:///name, xds://authority/name, xds:name ("xds:443" stays a host
  // and port).
  if (target.substr(0, 4) == "xds:" &&
      target.substr(4).find_first_not_of("0123456789") != std::string_view::npos) {
    std::string_view name = target.substr(4);
    if (name.substr(0, 2) == "//") {
      const size_t slash = name.find('/', 2);
      name = slash == std::string_view::npos ? std::string_view() : name.substr(slash + 1);
    }
    if (name.empty()) return Bad(target, "expected xds:///name or xds://authority/name");
    Target t;
    t.kind = Target::Kind::kXds;
    t.xds_target = std::string(target);
    t.authority = std::string(name);
    return t;
  }
  if (size_t scheme = target.find("://"); scheme != std::string_view::npos) {
    return Bad(target,
               absl::StrCat("unknown scheme \"", Printable(target.substr(0, scheme)),
                            "\" (ringrpc knows dns, ipv4, ipv6, unix, unix-abstract and xds; a "
                            "program adds its own with RegisterResolverFactory)"));
  }
  return HostPort(target, target);
}

}  // namespace ringrpc::channel
