// ringrpc/client/channel/http_proxy.h — which HTTP CONNECT proxy (if any) a
// channel's connections go through, by grpc++'s rules: the channel
// argument grpc.http_proxy, else the environment (grpc_proxy, https_proxy,
// http_proxy, first set wins), unless grpc.enable_http_proxy is 0 or the
// target's host is listed in no_grpc_proxy / no_proxy.
//
// Pure: the environment is a function, so tests are exact.
//
//   absl::StatusOr<std::optional<HttpProxy>> p =
//       ChooseHttpProxy(config.http_proxy, config.enable_http_proxy, "svc.internal", getenv);
//   if (p.ok() && *p) { dial (*p)->host:(*p)->port, then CONNECT svc.internal:443 }
#ifndef RINGRPC_CLIENT_CHANNEL_HTTP_PROXY_H_
#define RINGRPC_CLIENT_CHANNEL_HTTP_PROXY_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace ringrpc::channel {

struct HttpProxy {
  std::string host;  // a name or an IP address (IPv6 without brackets)
  uint16_t port = 443;
  // "Basic <base64(user:password)>" when the URL carries credentials.
  std::string authorization;
  std::string source;  // where it came from: "grpc.http_proxy", "https_proxy", ...
  // "host:port" as written in messages.
  std::string Name() const;
};

// Parses "http://[user[:password]@]host[:port][/]" (the scheme may be
// left out; the port defaults to 443, as in grpc++). INVALID_ARGUMENT
// naming the problem otherwise.
absl::StatusOr<HttpProxy> ParseHttpProxy(std::string_view url);

// True when `host` matches an entry of the comma-separated `list`: "*",
// the host itself, or a suffix of it on a label boundary ("example.com"
// and ".example.com" both match "a.example.com"); case-insensitive.
bool NoProxyMatches(std::string_view list, std::string_view host);

using GetEnv = std::function<const char*(const char*)>;

// The proxy for a channel to `target_host`: `arg` is grpc.http_proxy (set:
// it wins over the environment; empty: no proxy), `enabled` is
// grpc.enable_http_proxy. A malformed grpc.http_proxy is an error; a
// malformed environment variable is ignored (as grpc++ does: it may be
// meant for other programs), said once on stderr.
absl::StatusOr<std::optional<HttpProxy>> ChooseHttpProxy(const std::optional<std::string>& arg,
                                                         bool enabled, std::string_view target_host,
                                                         const GetEnv& getenv);

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_HTTP_PROXY_H_
