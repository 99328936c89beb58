// ringrpc/client/transport/address.h — one resolved address a connection dials:
// IPv4, IPv6, a unix socket path or an abstract unix socket name.
//
//   absl::StatusOr<Address> a = Address::Parse("127.0.0.1:50051");
//   absl::StatusOr<Address> u = Address::Parse("unix:/tmp/s.sock");
#ifndef RINGRPC_CLIENT_TRANSPORT_ADDRESS_H_
#define RINGRPC_CLIENT_TRANSPORT_ADDRESS_H_

#include <sys/socket.h>

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace ringrpc::transport {

struct Address {
  sockaddr_storage storage{};
  socklen_t len = 0;

  int family() const { return storage.ss_family; }
  const sockaddr* sockaddr_ptr() const { return reinterpret_cast<const sockaddr*>(&storage); }
  // "127.0.0.1:50051", "[::1]:50051", "unix:/path", "unix-abstract:name".
  std::string ToString() const;

  // Parses "a.b.c.d:port", "[v6]:port", "unix:path" (absolute or relative),
  // "unix-abstract:name". INVALID_ARGUMENT naming the problem otherwise.
  static absl::StatusOr<Address> Parse(std::string_view text);
};

}  // namespace ringrpc::transport

#endif  // RINGRPC_CLIENT_TRANSPORT_ADDRESS_H_
