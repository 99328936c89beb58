// ringrpc/client/channel/target.h — parsing a channel target URI.
//
//   dns:///host:port, dns://dns-server-ip[:port]/host:port, dns:host:port, host:port
//   ipv4:a.b.c.d:port[,a.b.c.d:port...]
//   ipv6:[addr]:port[,[addr]:port...]
//   unix:path, unix:///abs/path, unix-abstract:name
//   xds:///name, xds://authority/name (resolved by ringrpc/client/xds, when linked)
//
// A malformed target is INVALID_ARGUMENT saying what is wrong.
#ifndef RINGRPC_CLIENT_CHANNEL_TARGET_H_
#define RINGRPC_CLIENT_CHANNEL_TARGET_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ringrpc/client/transport/address.h"

namespace ringrpc::channel {

struct Target {
  enum class Kind { kDns, kStatic, kXds };
  Kind kind = Kind::kDns;
  // kDns: what to resolve.
  std::string host;
  uint16_t port = 443;
  // The DNS server to ask (dns://server/name): "ip:port"; empty: the system's.
  std::string dns_server;
  // kStatic: the addresses themselves.
  std::vector<transport::Address> addresses;
  // kXds: the whole target, for the xDS resolver.
  std::string xds_target;
  // The :authority calls carry unless grpc.default_authority overrides it
  // (for xds: the name after the authority, as gRFC A27).
  std::string authority;
};

absl::StatusOr<Target> ParseTarget(std::string_view target);

// The DNS server a dns:// authority names, "a.b.c.d[:port]" or
// "[v6][:port]" (port 53 when absent), as "ip:port"; INVALID_ARGUMENT for
// anything else (c-ares asks servers by address only).
absl::StatusOr<std::string> ParseDnsServer(std::string_view authority);

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_TARGET_H_
