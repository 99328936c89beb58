#include "ringrpc/client/transport/grpc_wire.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <new>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace ringrpc::transport {

void WriteMessagePrefix(std::string& out, size_t at, uint32_t n, bool compressed) {
  const char prefix[5] = {char(compressed ? 1 : 0), char(n >> 24), char(n >> 16), char(n >> 8),
                          char(n)};
  out.replace(at, 5, prefix, 5);
}

void AppendFramedMessage(std::string& out, std::string_view message, bool compressed) {
  const size_t at = out.size();
  out.append(5, '\0');
  WriteMessagePrefix(out, at, static_cast<uint32_t>(message.size()), compressed);
  out.append(message);
}

std::string EncodeGrpcTimeout(Duration d) {
  using namespace std::chrono;
  if (d <= Duration::zero()) return "1n";
  int64_t ns = duration_cast<nanoseconds>(d).count();
  constexpr int64_t kMax = 99999999;  // 8 digits
  struct Unit {
    int64_t ns;
    char c;
  };
  for (Unit u : {Unit{1, 'n'}, Unit{1000, 'u'}, Unit{1000000, 'm'}, Unit{1000000000, 'S'},
                 Unit{60000000000, 'M'}, Unit{3600000000000, 'H'}}) {
    int64_t v = (ns + u.ns - 1) / u.ns;  // round up: never promise less time
    if (v <= kMax) return absl::StrCat(v, std::string(1, u.c));
  }
  return absl::StrCat(kMax, "H");
}

absl::StatusOr<absl::StatusCode> ParseGrpcStatus(std::string_view v) {
  if (v.empty() || v.size() > 9) {
    return absl::InternalError(
        absl::StrCat("malformed grpc-status \"", std::string(v.substr(0, 32)), "\""));
  }
  int code = 0;
  for (char c : v) {
    if (c < '0' || c > '9') {
      return absl::InternalError(
          absl::StrCat("malformed grpc-status \"", std::string(v.substr(0, 32)), "\""));
    }
    code = code * 10 + (c - '0');
  }
  if (code > 16) return absl::StatusCode::kUnknown;
  return static_cast<absl::StatusCode>(code);
}

std::string PercentDecode(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '%' && i + 2 < v.size() && hex(v[i + 1]) >= 0 && hex(v[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(v[i + 1]) * 16 + hex(v[i + 2])));
      i += 2;
    } else {
      out.push_back(v[i]);
    }
  }
  return out;
}

std::string PercentEncode(std::string_view v) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : v) {
    if (c >= 0x20 && c <= 0x7e && c != '%') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

absl::StatusCode HttpStatusToGrpcCode(int s) {
  switch (s) {
    case 400:
      return absl::StatusCode::kInternal;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kUnimplemented;
    case 429:
    case 502:
    case 503:
    case 504:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kUnknown;
  }
}

std::string EncodeBinaryHeader(std::string_view value) {
  return absl::Base64Escape(absl::string_view(value.data(), value.size()));
}

absl::StatusOr<std::string> DecodeBinaryHeader(std::string_view value) {
  std::string out;
  if (!absl::Base64Unescape(absl::string_view(value.data(), value.size()), &out)) {
    return absl::InternalError("malformed base64 in -bin metadata");
  }
  return out;
}

void MessageDecoder::Feed(std::string_view bytes, const RecvBlock::Ref* block) {
  size_t pos = 0;
  while (error_.ok() && pos < bytes.size()) {
    if (!in_body_) {
      const size_t take = std::min(5 - prefix_len_, bytes.size() - pos);
      std::memcpy(prefix_ + prefix_len_, bytes.data() + pos, take);
      prefix_len_ += take;
      pos += take;
      if (prefix_len_ < 5) break;
      prefix_len_ = 0;
      auto b = reinterpret_cast<const unsigned char*>(prefix_);
      if (b[0] > 1) {
        error_ = absl::InternalError(absl::StrCat("invalid gRPC message flag byte ", int(b[0])));
        break;
      }
      uint32_t len =
          uint32_t(b[1]) << 24 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 8 | uint32_t(b[4]);
      if (len > max_) {
        error_ = absl::ResourceExhaustedError(
            absl::StrCat("received message larger than max (", len, " vs. ", max_, ")"));
        break;
      }
      in_body_ = true;
      need_ = len;
      current_.compressed = b[0] == 1;
      // What has arrived, not what the peer announces: a 4 GiB prefix
      // under an unlimited receive size must not allocate 4 GiB up front.
      current_.bytes.Reserve(std::min<size_t>(len, bytes.size() - pos));
    }
    const size_t take = std::min(need_, bytes.size() - pos);
    try {
      if (block != nullptr && take >= kShareMin) {
        current_.bytes.AppendShared(bytes.data() + pos, take, *block);
      } else {
        current_.bytes.Append(bytes.substr(pos, take));
      }
    } catch (const std::bad_alloc&) {
      // Out of memory (or address space) growing a message: the call ends
      // with a status; nothing escapes into the user's code (this runs
      // inside nghttp2's callbacks).
      error_ = absl::ResourceExhaustedError(absl::StrCat("out of memory receiving a message of ",
                                                         current_.bytes.size() + need_, " bytes"));
      current_ = ReceivedMessage();
      break;
    }
    pos += take;
    need_ -= take;
    if (need_ != 0) break;
    in_body_ = false;
    ready_bytes_ += 5 + current_.bytes.size();
    message_bytes_ += current_.bytes.size();
    ready_.push_back(std::move(current_));
    current_ = ReceivedMessage();
  }
}

std::optional<ReceivedMessage> MessageDecoder::Next() {
  if (ready_.empty()) return std::nullopt;
  ReceivedMessage m = std::move(ready_.front());
  ready_.pop_front();
  ready_bytes_ -= 5 + m.bytes.size();
  return m;
}

}  // namespace ringrpc::transport
