#include "ringrpc/client/transport/address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace ringrpc::transport {
namespace {

absl::Status Bad(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("bad address \"", absl::CHexEscape(absl::string_view(text.data(), text.size())),
                   "\": ", std::string(why)));
}

absl::StatusOr<uint16_t> ParsePort(std::string_view text, std::string_view p) {
  if (p.empty() || p.size() > 5) return Bad(text, "missing or malformed port");
  uint32_t v = 0;
  for (char c : p) {
    if (c < '0' || c > '9') return Bad(text, "port is not a number");
    v = v * 10 + (c - '0');
  }
  if (v == 0 || v > 65535) return Bad(text, "port out of range 1..65535");
  return static_cast<uint16_t>(v);
}

}  // namespace

absl::StatusOr<Address> Address::Parse(std::string_view text) {
  Address a;
  auto unix_path = [&](std::string_view path, bool abstract) -> absl::StatusOr<Address> {
    sockaddr_un un{};
    un.sun_family = AF_UNIX;
    size_t offset = abstract ? 1 : 0;
    if (path.empty()) return Bad(text, "empty unix socket path");
    if (path.size() + offset >= sizeof un.sun_path) {
      return Bad(text, "unix socket path too long");
    }
    std::memcpy(un.sun_path + offset, path.data(), path.size());
    std::memcpy(&a.storage, &un, sizeof un);
    a.len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + offset + path.size() +
                                   (abstract ? 0 : 1));
    return a;
  };
  if (text.rfind("unix-abstract:", 0) == 0) return unix_path(text.substr(14), true);
  // Only an abstract socket name may hold NUL bytes: anywhere else the C
  // APIs below would stop at the first one and dial something else.
  if (text.find('\0') != std::string_view::npos) return Bad(text, "contains a NUL byte");
  if (text.rfind("unix:", 0) == 0) {
    std::string_view path = text.substr(5);
    if (path.rfind("//", 0) == 0) path.remove_prefix(2);  // unix:///abs
    return unix_path(path, false);
  }
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Bad(text, "expected [ipv6]:port");
    }
    std::string host(text.substr(1, close - 1));
    absl::StatusOr<uint16_t> port = ParsePort(text, text.substr(close + 2));
    if (!port.ok()) return port.status();
    sockaddr_in6 in6{};
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(*port);
    if (inet_pton(AF_INET6, host.c_str(), &in6.sin6_addr) != 1) {
      return Bad(text, "not an IPv6 address");
    }
    std::memcpy(&a.storage, &in6, sizeof in6);
    a.len = sizeof in6;
    return a;
  }
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return Bad(text, "expected host:port");
  std::string host(text.substr(0, colon));
  absl::StatusOr<uint16_t> port = ParsePort(text, text.substr(colon + 1));
  if (!port.ok()) return port.status();
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(*port);
  if (inet_pton(AF_INET, host.c_str(), &in.sin_addr) != 1) {
    return Bad(text, "not an IPv4 address (names are resolved by the channel)");
  }
  std::memcpy(&a.storage, &in, sizeof in);
  a.len = sizeof in;
  return a;
}

std::string Address::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  switch (family()) {
    case AF_INET: {
      auto* in = reinterpret_cast<const sockaddr_in*>(&storage);
      inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
      return absl::StrCat(buf, ":", ntohs(in->sin_port));
    }
    case AF_INET6: {
      auto* in6 = reinterpret_cast<const sockaddr_in6*>(&storage);
      inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
      return absl::StrCat("[", buf, "]:", ntohs(in6->sin6_port));
    }
    case AF_UNIX: {
      auto* un = reinterpret_cast<const sockaddr_un*>(&storage);
      size_t n = len - offsetof(sockaddr_un, sun_path);
      if (n > 0 && un->sun_path[0] == '\0') {
        return absl::StrCat("unix-abstract:", std::string(un->sun_path + 1, n - 1));
      }
      std::string path(un->sun_path);
      // "unix://" is read as a prefix (unix:///abs): a path that itself
      // starts with "//" keeps it by printing one (found by target_fuzzer).
      return absl::StrCat(path.rfind("//", 0) == 0 ? "unix://" : "unix:", path);
    }
  }
  return "unknown";
}

}  // namespace ringrpc::transport
