// ringrpc/client/transport/compression.h — gRPC message compression (identity,
// deflate, gzip) over zlib: names as they travel in grpc-encoding /
// grpc-accept-encoding, compressing one message, and inflating one with the
// receive limit enforced while it inflates (a small message that inflates to
// gigabytes stops at the limit, with bounded memory).
//
//   std::string wire;
//   absl::Status s = Compress(Compression::kGzip, kDefaultCompressionLevel, message, wire);
//   absl::StatusOr<std::string> m = Decompress(Compression::kGzip, wire, max_receive);
#ifndef RINGRPC_CLIENT_TRANSPORT_COMPRESSION_H_
#define RINGRPC_CLIENT_TRANSPORT_COMPRESSION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ringrpc::transport {

// The message encodings ringrpc speaks. The values are grpc's
// grpc_compression_algorithm numbers (GRPC_COMPRESS_NONE, _DEFLATE, _GZIP).
enum class Compression : uint8_t { kIdentity = 0, kDeflate = 1, kGzip = 2 };

// What every request offers in grpc-accept-encoding.
inline constexpr char kAcceptEncoding[] = "identity,deflate,gzip";

// zlib's levels: -1 is zlib's default (6), 0..9 as zlib.
inline constexpr int kDefaultCompressionLevel = -1;

// "identity", "deflate", "gzip".
const char* CompressionName(Compression c);
// The encoding a grpc-encoding value names; nullopt for one ringrpc does not
// speak (e.g. "snappy", "br").
std::optional<Compression> ParseCompression(std::string_view name);

// Appends `in` compressed with `c` (kIdentity: as is) at zlib `level` to
// `out`. INTERNAL if zlib fails (out of memory).
absl::Status Compress(Compression c, int level, std::string_view in, std::string& out);

// Inflates one message compressed with `c` (deflate: the zlib format, as
// gRPC means it; gzip: RFC 1952). RESOURCE_EXHAUSTED as soon as the output
// would pass `max_size` bytes (never allocates more than that); INTERNAL
// naming the encoding for corrupt or truncated data.
absl::StatusOr<std::string> Decompress(Compression c, std::string_view in, uint32_t max_size);

}  // namespace ringrpc::transport

#endif  // RINGRPC_CLIENT_TRANSPORT_COMPRESSION_H_
