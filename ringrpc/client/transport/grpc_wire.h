// ringrpc/client/transport/grpc_wire.h — the gRPC-over-HTTP/2 wire rules that need
// no socket: message framing (5-byte prefix), grpc-timeout, grpc-status and
// grpc-message decoding, HTTP-status mapping, -bin metadata. Pure functions
// and one incremental decoder, tested on their own and fuzzed.
//
//   MessageDecoder d(max_receive);
//   d.Feed(bytes);
//   while (auto m = d.Next()) Handle(*m);  // d.error() says why it stopped
#ifndef RINGRPC_CLIENT_TRANSPORT_GRPC_WIRE_H_
#define RINGRPC_CLIENT_TRANSPORT_GRPC_WIRE_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ringrpc/base/byte_buffer.h"
#include "ringrpc/base/time.h"

namespace ringrpc::transport {

// Appends the 5-byte prefix and `message` to `out`; `compressed` sets the
// prefix's flag (the bytes are then in the call's grpc-encoding).
void AppendFramedMessage(std::string& out, std::string_view message, bool compressed = false);
// The 5-byte prefix at out[at] for a message of `size` bytes.
void WriteMessagePrefix(std::string& out, size_t at, uint32_t size, bool compressed);

// grpc-timeout value for `d` (rounded up, at most 8 digits, the finest unit
// that fits). `d` <= 0 gives "1n" (already expired: let the server say so).
std::string EncodeGrpcTimeout(Duration d);

// grpc-status: "0".."16" -> that code; another number -> UNKNOWN (the spec:
// unknown codes are UNKNOWN); not a decimal number -> INTERNAL naming it.
absl::StatusOr<absl::StatusCode> ParseGrpcStatus(std::string_view value);

// grpc-message is percent-encoded; invalid escapes are kept literally.
std::string PercentDecode(std::string_view value);
std::string PercentEncode(std::string_view value);

// gRPC's http-grpc-status-mapping for a response without grpc-status.
absl::StatusCode HttpStatusToGrpcCode(int http_status);

// -bin metadata values travel base64-encoded; padding is optional on
// receive. INTERNAL on bad base64.
std::string EncodeBinaryHeader(std::string_view value);
absl::StatusOr<std::string> DecodeBinaryHeader(std::string_view value);
inline bool IsBinaryHeader(std::string_view key) {
  return key.size() > 4 && key.substr(key.size() - 4) == "-bin";
}

// One received message as it came: its bytes, and whether the prefix's
// compressed flag was set (then they are in the response's grpc-encoding).
struct ReceivedMessage {
  ByteBuffer bytes;
  bool compressed = false;
};

// Splits a DATA stream into gRPC messages. The length prefix is checked
// against the limit before anything is allocated for the message.
//
// No copy of large message bodies: a run of at least kShareMin body bytes
// fed from a receive block is kept as a slice of that block. Shorter runs
// (small messages, the ends of a frame split between two receives) are
// copied: holding a 64 KiB block for a few bytes would cost more.
class MessageDecoder {
 public:
  static constexpr size_t kShareMin = kZeroCopyMin;

  explicit MessageDecoder(uint32_t max_message_size) : max_(max_message_size) {}

  // Adds bytes; with `block`, they live in it (and may be kept as a slice
  // of it rather than copied). After an error, further bytes are ignored.
  void Feed(std::string_view bytes, const RecvBlock::Ref* block = nullptr);
  // The next complete message, or nullopt if none (yet).
  std::optional<ReceivedMessage> Next();
  // RESOURCE_EXHAUSTED (over the limit) or INTERNAL (a flag byte other than
  // 0 or 1) once broken; OK otherwise.
  const absl::Status& error() const { return error_; }
  // True when bytes of an unfinished message are buffered (a stream that
  // ends here ended mid-message).
  bool partial() const { return prefix_len_ != 0 || in_body_; }
  // Wire bytes (prefix included) of the complete messages not yet taken by
  // Next(): what the reader has not consumed (flow control credits the rest).
  size_t ready_bytes() const { return ready_bytes_; }
  // Body bytes (prefixes not counted) of every complete message so far.
  uint64_t message_bytes() const { return message_bytes_; }

 private:
  uint32_t max_;
  char prefix_[5];  // the next message's prefix, as far as it came
  size_t prefix_len_ = 0;
  size_t need_ = 0;  // body bytes still missing for current_
  bool in_body_ = false;
  ReceivedMessage current_;
  std::deque<ReceivedMessage> ready_;
  size_t ready_bytes_ = 0;
  uint64_t message_bytes_ = 0;
  absl::Status error_;
};

}  // namespace ringrpc::transport

#endif  // RINGRPC_CLIENT_TRANSPORT_GRPC_WIRE_H_
