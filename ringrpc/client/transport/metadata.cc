#include "ringrpc/client/transport/metadata.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/transport/grpc_wire.h"

namespace ringrpc::transport {
namespace {

// Metadata keys the application may not set: they are the protocol's.
bool IsReservedKey(std::string_view k) {
  return k.empty() || k[0] == ':' || k == "te" || k == "content-type" || k == "user-agent" ||
         k.rfind("grpc-", 0) == 0 ||
         // Connection-specific fields: HTTP/2 forbids them (RFC 9113 8.2.2).
         k == "connection" || k == "transfer-encoding" || k == "upgrade" || k == "keep-alive" ||
         k == "proxy-connection";
}

}  // namespace

bool IsGrpcContentType(std::string_view v) {
  constexpr std::string_view kGrpc = "application/grpc";
  if (v.substr(0, kGrpc.size()) != kGrpc) return false;
  return v.size() == kGrpc.size() || v[kGrpc.size()] == '+' || v[kGrpc.size()] == ';';
}

absl::Status ValidateMetadata(const Metadata& md) {
  for (const auto& [k, v] : md) {
    for (char c : k) {
      bool ok =
          (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
      if (!ok) {
        return absl::InvalidArgumentError(absl::StrCat(
            "metadata key \"", k, "\" must be lowercase letters, digits, '-', '_' or '.'"));
      }
    }
    if (IsReservedKey(k)) {
      return absl::InvalidArgumentError(
          absl::StrCat("metadata key \"", k, "\" is reserved by the protocol"));
    }
    if (!IsBinaryHeader(k)) {
      for (char c : v) {
        if (c < 0x20 || c > 0x7e) {
          return absl::InvalidArgumentError(
              absl::StrCat("metadata value of \"", k,
                           "\" must be printable ASCII (use a -bin key for binary values)"));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckRequestHeaderSize(const Metadata& md, size_t fixed_bytes,
                                    uint32_t peer_max_header_list) {
  size_t list = 0, block = 0;
  for (const auto& [k, v] : md) {
    size_t value = IsBinaryHeader(k) ? (v.size() + 2) / 3 * 4 : v.size();
    list += k.size() + value + 32;
    block += k.size() + value + 2;
  }
  // Pseudo-headers, te, content-type, user-agent, grpc-timeout,
  // grpc-accept-encoding, grpc-encoding.
  const size_t fixed = fixed_bytes + 384;
  if (list + fixed > peer_max_header_list || block + fixed > kMaxSendHeaderBlock) {
    return absl::ResourceExhaustedError(
        absl::StrCat("request metadata of ", list, " bytes is over the limit of ",
                     std::min<size_t>(peer_max_header_list, kMaxSendHeaderBlock),
                     list + fixed > peer_max_header_list
                         ? " bytes the server accepts (SETTINGS_MAX_HEADER_LIST_SIZE)"
                         : " bytes of one HTTP/2 header block"));
  }
  return absl::OkStatus();
}

}  // namespace ringrpc::transport
