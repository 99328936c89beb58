// ringrpc/client/transport/metadata.h — call metadata as the application sees it,
// and the rules it must follow before it goes on the wire.
//
// Threading: plain values and pure functions; any thread.
//
//   Metadata md = {{"x-user", "ada"}, {"trace-bin", raw_bytes}};
//   if (absl::Status s = ValidateMetadata(md); !s.ok()) return s;
#ifndef RINGRPC_CLIENT_TRANSPORT_METADATA_H_
#define RINGRPC_CLIENT_TRANSPORT_METADATA_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace ringrpc::transport {

// Metadata as the application sees it: -bin values decoded.
using Metadata = std::vector<std::pair<std::string, std::string>>;

// OK, or INVALID_ARGUMENT naming the first key that is not lowercase
// letters, digits, '-', '_' or '.', that the protocol reserves (pseudo
// headers, te, content-type, user-agent, grpc-*, connection-specific
// fields), or whose non-binary value is not printable ASCII.
absl::Status ValidateMetadata(const Metadata& md);

// nghttp2's default limit on one outgoing header block (HEADERS plus its
// CONTINUATIONs): above it nghttp2 drops the HEADERS and closes the stream
// as if refused, which would look safe to retry.
inline constexpr size_t kMaxSendHeaderBlock = 65536;

// OK, or RESOURCE_EXHAUSTED when request headers with metadata `md` (and
// `fixed_bytes` of path and authority) are over what the server accepts
// (`peer_max_header_list`, its SETTINGS_MAX_HEADER_LIST_SIZE, counted as
// RFC 7541 does) or what nghttp2 sends in one header block: such a call
// can never succeed, so it fails before it starts and is not retried.
absl::Status CheckRequestHeaderSize(const Metadata& md, size_t fixed_bytes,
                                    uint32_t peer_max_header_list);

// "application/grpc", alone or followed by '+' or ';' (gRPC's
// PROTOCOL-HTTP2.md).
bool IsGrpcContentType(std::string_view v);

}  // namespace ringrpc::transport

#endif  // RINGRPC_CLIENT_TRANSPORT_METADATA_H_
