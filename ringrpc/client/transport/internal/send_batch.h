// ringrpc/client/transport/internal/send_batch.h — what one pass of a connection's
// write loop sends: the bytes nghttp2 serialized and the DATA frames'
// headers, copied into one buffer, interleaved with large message bytes
// held by reference (sent from the strings protobuf serialized into, by one
// gathered sendmsg). Loop thread only. Private to ringrpc/client/transport.
#ifndef RINGRPC_CLIENT_TRANSPORT_INTERNAL_SEND_BATCH_H_
#define RINGRPC_CLIENT_TRANSPORT_INTERNAL_SEND_BATCH_H_

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ringrpc::transport {

struct SendBatch {
  // Linux's UIO_MAXIOV: a sendmsg with more iovecs fails with EMSGSIZE.
  static constexpr size_t kMaxIovecs = 1024;
  // One run of the batch: bytes[off, off + len) when `held` is null, else
  // `len` bytes at `held` (inside a string that `keep` holds).
  struct Piece {
    const char* held;
    size_t off;
    size_t len;
  };

  std::vector<uint8_t> bytes;
  std::vector<Piece> pieces;
  std::vector<std::shared_ptr<const std::string>> keep;

  void Copy(const void* p, size_t n) {
    if (n == 0) return;
    auto* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
    Counted(n);
  }
  void Zeros(size_t n) {
    if (n == 0) return;
    bytes.resize(bytes.size() + n);  // zero-filled
    Counted(n);
  }
  // The last `n` bytes of `bytes` were just added: they join the last
  // piece if it is the batch's own too.
  void Counted(size_t n) {
    if (!pieces.empty() && pieces.back().held == nullptr) {
      pieces.back().len += n;
    } else {
      pieces.push_back(Piece{nullptr, bytes.size() - n, n});
    }
  }
  void Hold(const std::shared_ptr<const std::string>& owner, std::string_view piece) {
    pieces.push_back(Piece{piece.data(), 0, piece.size()});
    if (keep.empty() || keep.back() != owner) keep.push_back(owner);
  }
  // Held pieces: then the batch goes out by sendmsg (else by send of bytes).
  bool has_held() const { return !keep.empty(); }
  void Clear() {
    bytes.clear();
    pieces.clear();
    keep.clear();
  }
  // The pieces from byte `skip` on, as iovecs into `bytes` and the held
  // strings: at most `max` of them (the writer sends the rest with the
  // next sendmsg).
  std::vector<iovec> Iovecs(size_t skip, size_t max = kMaxIovecs) const {
    std::vector<iovec> out;
    for (const Piece& p : pieces) {
      if (out.size() == max) break;
      if (skip >= p.len) {
        skip -= p.len;
        continue;
      }
      const char* base =
          p.held != nullptr ? p.held : reinterpret_cast<const char*>(bytes.data()) + p.off;
      out.push_back(iovec{const_cast<char*>(base + skip), p.len - skip});
      skip = 0;
    }
    return out;
  }
  size_t size() const {
    size_t n = 0;
    for (const Piece& p : pieces) n += p.len;
    return n;
  }
};

}  // namespace ringrpc::transport

#endif  // RINGRPC_CLIENT_TRANSPORT_INTERNAL_SEND_BATCH_H_
