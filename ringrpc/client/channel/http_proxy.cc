#include "ringrpc/client/channel/http_proxy.h"

#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace ringrpc::channel {
namespace {

absl::string_view AbslView(std::string_view s) { return absl::string_view(s.data(), s.size()); }

absl::Status Bad(std::string_view url, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("HTTP proxy \"", absl::CHexEscape(AbslView(url)), "\": ", AbslView(why)));
}

// %XX escapes in the user info, as URLs carry them.
std::string PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && absl::ascii_isxdigit(s[i + 1]) &&
        absl::ascii_isxdigit(s[i + 2])) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

std::string HttpProxy::Name() const {
  return host.find(':') != std::string::npos ? absl::StrCat("[", host, "]:", port)
                                             : absl::StrCat(host, ":", port);
}

absl::StatusOr<HttpProxy> ParseHttpProxy(std::string_view url) {
  std::string_view rest = url;
  if (size_t colon = rest.find("://"); colon != std::string_view::npos) {
    std::string scheme = absl::AsciiStrToLower(AbslView(rest.substr(0, colon)));
    if (scheme != "http") {
      return Bad(url, absl::StrCat("the scheme \"", scheme,
                                   "\" is not supported (only http:// proxies, which CONNECT)"));
    }
    rest = rest.substr(colon + 3);
  }
  if (size_t slash = rest.find('/'); slash != std::string_view::npos) {
    if (rest.substr(slash) != "/") return Bad(url, "a proxy URL has no path");
    rest = rest.substr(0, slash);
  }
  HttpProxy p;
  if (size_t at = rest.rfind('@'); at != std::string_view::npos) {
    std::string userinfo = PercentDecode(rest.substr(0, at));
    p.authorization = absl::StrCat("Basic ", absl::Base64Escape(userinfo));
    rest = rest.substr(at + 1);
  }
  std::string_view host = rest, port;
  if (!rest.empty() && rest[0] == '[') {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) return Bad(url, "unterminated [ipv6 address]");
    host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') return Bad(url, "expected :port after ]");
      port = rest.substr(close + 2);
    }
  } else if (size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  if (host.empty()) return Bad(url, "no host");
  for (char c : host) {
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return Bad(url, "the host has a byte no host name has");
    }
  }
  if (!port.empty() || (!rest.empty() && rest.back() == ':')) {
    uint32_t v = 0;
    for (char c : port) {
      if (c < '0' || c > '9' || v > 65535) return Bad(url, "the port is not a number 1..65535");
      v = v * 10 + (c - '0');
    }
    if (v == 0 || v > 65535) return Bad(url, "the port is not a number 1..65535");
    p.port = static_cast<uint16_t>(v);
  }
  p.host = std::string(host);
  return p;
}

bool NoProxyMatches(std::string_view list, std::string_view host) {
  const std::string h = absl::AsciiStrToLower(AbslView(host));
  for (absl::string_view entry : absl::StrSplit(AbslView(list), ',')) {
    std::string e = absl::AsciiStrToLower(absl::StripAsciiWhitespace(entry));
    if (e.empty()) continue;
    if (e == "*") return true;
    if (e.front() == '.') e.erase(0, 1);
    if (h == e ||
        (h.size() > e.size() && absl::EndsWith(h, e) && h[h.size() - e.size() - 1] == '.')) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<std::optional<HttpProxy>> ChooseHttpProxy(const std::optional<std::string>& arg,
                                                         bool enabled, std::string_view target_host,
                                                         const GetEnv& getenv) {
  if (!enabled) return std::nullopt;
  std::optional<HttpProxy> chosen;
  if (arg) {
    if (arg->empty()) return std::nullopt;  // set empty: no proxy, whatever the environment says
    absl::StatusOr<HttpProxy> p = ParseHttpProxy(*arg);
    if (!p.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("channel argument grpc.http_proxy: ", p.status().message()));
    }
    chosen = std::move(*p);
    chosen->source = "grpc.http_proxy";
  } else {
    for (const char* name : {"grpc_proxy", "https_proxy", "http_proxy"}) {
      const char* v = getenv(name);
      if (v == nullptr || *v == '\0') continue;
      absl::StatusOr<HttpProxy> p = ParseHttpProxy(v);
      if (!p.ok()) {
        std::fprintf(stderr, "ringrpc: ignoring %s: %s\n", name,
                     std::string(p.status().message()).c_str());
        return std::nullopt;
      }
      chosen = std::move(*p);
      chosen->source = name;
      break;
    }
  }
  if (!chosen) return std::nullopt;
  for (const char* name : {"no_grpc_proxy", "no_proxy"}) {
    const char* v = getenv(name);
    if (v == nullptr) continue;
    if (NoProxyMatches(v, target_host)) return std::nullopt;
    break;  // the first one set is the list (as grpc++)
  }
  return chosen;
}

}  // namespace ringrpc::channel
