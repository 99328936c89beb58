// ringrpc/client/message_parse.h — parsing a received message (ByteBuffer) into a
// protobuf message where it lies: a flat buffer directly, slices of the
// receive buffers through a ZeroCopyInputStream over them. No copy of the
// bytes is made first; protobuf's own parse is the one copy of a bytes
// field's contents.
//
//   ByteBuffer reply;  ... the call fills it ...
//   if (!ParseMessage(reply, &response)) ... "does not parse" ...
#ifndef RINGRPC_CLIENT_MESSAGE_PARSE_H_
#define RINGRPC_CLIENT_MESSAGE_PARSE_H_

#include <google/protobuf/io/zero_copy_stream.h>
#include <google/protobuf/message_lite.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string_view>

#include "ringrpc/base/byte_buffer.h"
#include "ringrpc/client/status.h"

namespace ringrpc {

// The bytes of a ByteBuffer as protobuf's input stream. The buffer must
// outlive the stream, unchanged.
class ByteBufferInputStream final : public google::protobuf::io::ZeroCopyInputStream {
 public:
  explicit ByteBufferInputStream(const ByteBuffer& bytes)
      : bytes_(bytes), n_(bytes.slice_count()) {}

  bool Next(const void** data, int* size) override {
    while (i_ < n_ && at_ == bytes_.slice(i_).size()) {
      ++i_;
      at_ = 0;
    }
    if (i_ == n_) return false;
    // A slice over INT_MAX bytes is handed out in pieces.
    const std::string_view s = bytes_.slice(i_);
    const size_t n = std::min<size_t>(s.size() - at_, INT_MAX);
    *data = s.data() + at_;
    *size = static_cast<int>(n);
    at_ += n;
    count_ += static_cast<int64_t>(n);
    return true;
  }
  // Only after Next, at most what it gave (protobuf's contract).
  void BackUp(int count) override {
    at_ -= static_cast<size_t>(count);
    count_ -= count;
  }
  bool Skip(int count) override {
    const void* data;
    int size;
    while (count > 0) {
      if (!Next(&data, &size)) return false;
      if (size > count) {
        BackUp(size - count);
        return true;
      }
      count -= size;
    }
    return true;
  }
  int64_t ByteCount() const override { return count_; }

 private:
  const ByteBuffer& bytes_;
  const size_t n_;  // its slice count
  size_t i_ = 0;    // the slice Next hands out from
  size_t at_ = 0;   // bytes of it handed out
  int64_t count_ = 0;
};

// Parses `bytes` into `out`; false if they do not parse as it.
inline bool ParseMessage(const ByteBuffer& bytes, google::protobuf::MessageLite* out) {
  if (bytes.flat() && bytes.size() <= size_t(INT_MAX)) {
    std::string_view only = bytes.flat_bytes();
    return out->ParseFromArray(only.data(), static_cast<int>(only.size()));
  }
  ByteBufferInputStream in(bytes);
  return out->ParseFromZeroCopyStream(&in);
}

// The call's status, unless it is OK and `reply` does not parse into
// `response` (INTERNAL, saying so).
inline Status ParseReply(const Status& s, const ByteBuffer& reply,
                         google::protobuf::MessageLite* response) {
  if (!s.ok()) return s;
  if (!ParseMessage(reply, response)) {
    return Status(StatusCode::INTERNAL,
                  "the response message does not parse as " + response->GetTypeName());
  }
  return s;
}

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_MESSAGE_PARSE_H_
