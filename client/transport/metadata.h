// client/transport/metadata.h — call metadata as the application sees it,
// and the rules it must follow before it goes on the wire.
//
// Threading: plain values and pure functions; any thread.
//
//   Metadata md = {{"x-user", "ada"}, {"trace-bin", raw_bytes}};
//   if (absl::Status s = ValidateMetadata(md); !s.ok()) return s;
#ifndef RINGRPC_CLIENT_TRANSPORT_METADATA_H_
#define RINGRPC_CLIENT_TRANSPORT_METADATA_H_

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

// "application/grpc", alone or followed by '+' or ';' (gRPC's
// PROTOCOL-HTTP2.md).
bool IsGrpcContentType(std::string_view v);

}  // namespace ringrpc::transport

#endif  // RINGRPC_CLIENT_TRANSPORT_METADATA_H_
