// ringrpc/base/byte_buffer.h — message bytes that cross the layers without being
// copied. ByteBuffer: one received message as it came off the wire, either
// one string of its own or slices of the receive buffers it arrived in
// (shared, never copied); what protobuf parses from (ringrpc/client/message_parse.h
// reads it through a ZeroCopyInputStream). OutgoingMessage: one message to
// send, a large one held by reference so that the transport sends from
// the very string protobuf serialized into (and a retry sends it again).
//
// Messages under kZeroCopyMin bytes are copied (into the received or the
// sent stream's own buffer): one memcpy of a few KiB costs less than
// holding a 64 KiB receive block or a reference for them.
//
// Threading: a ByteBuffer is a value owned by one thread at a time; it may
// move between threads. The receive buffers it shares are reference
// counted atomically, so a slice can be dropped on any thread.
//
//   ByteBuffer b;
//   b.AppendShared(data, n, block);  // transport: bytes that live in `block`
//   for (size_t i = 0; i < b.slice_count(); ++i) use(b.slice(i));
//   std::string flat = std::move(b).TakeString();  // one copy unless owned
#ifndef RINGRPC_BASE_BYTE_BUFFER_H_
#define RINGRPC_BASE_BYTE_BUFFER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"

namespace ringrpc {

inline constexpr size_t kZeroCopyMin = 4096;

// A receive buffer: bytes the socket filled, shared by the messages that
// point into it. Freed when the last reference goes (on any thread).
class RecvBlock {
 public:
  // A counted reference; copying adds one.
  class Ref {
   public:
    Ref() = default;
    explicit Ref(RecvBlock* b) : b_(b) {
      if (b_ != nullptr) b_->refs_.fetch_add(1, std::memory_order_relaxed);
    }
    Ref(const Ref& o) : Ref(o.b_) {}
    Ref(Ref&& o) noexcept : b_(std::exchange(o.b_, nullptr)) {}
    Ref& operator=(Ref o) noexcept {
      std::swap(b_, o.b_);
      return *this;
    }
    ~Ref() {
      if (b_ != nullptr && b_->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete b_;
    }
    RecvBlock* get() const { return b_; }
    RecvBlock* operator->() const { return b_; }
    explicit operator bool() const { return b_ != nullptr; }

   private:
    RecvBlock* b_ = nullptr;
  };

  static Ref Make(std::vector<uint8_t> bytes) { return Ref(new RecvBlock(std::move(bytes))); }

  std::vector<uint8_t>& bytes() { return bytes_; }
  // True when the caller's reference is the only one: it may refill it.
  // Acquire: every other holder's reads are done before the refill.
  bool Unshared() const { return refs_.load(std::memory_order_acquire) == 1; }

 private:
  explicit RecvBlock(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
  std::atomic<int> refs_{0};
  std::vector<uint8_t> bytes_;
};

class ByteBuffer {
 public:
  ByteBuffer() = default;
  // The bytes of `s`, moved in (no copy).
  explicit ByteBuffer(std::string s) : owned_(std::move(s)) {}

  size_t size() const { return owned_.size() + shared_size_; }
  bool empty() const { return size() == 0; }

  // Appends bytes by copying them (into the buffer's own string, or a
  // block of their own once shared slices came first).
  void Append(std::string_view bytes) {
    if (shared_.empty()) {
      owned_.append(bytes);
      return;
    }
    RecvBlock::Ref b = RecvBlock::Make(std::vector<uint8_t>(bytes.begin(), bytes.end()));
    const char* at = reinterpret_cast<const char*>(b->bytes().data());
    AppendShared(at, bytes.size(), std::move(b));
  }
  // Appends `n` bytes at `data`, which live in `block`: held, not copied.
  void AppendShared(const char* data, size_t n, RecvBlock::Ref block) {
    shared_.push_back(Slice{std::string_view(data, n), std::move(block)});
    shared_size_ += n;
  }
  // Reserves room for Append.
  void Reserve(size_t n) { owned_.reserve(n); }

  // The bytes in order, as slice_count() views valid while the buffer
  // lives unchanged: slice(0) .. slice(slice_count() - 1). No list is built.
  size_t slice_count() const { return (owned_.empty() ? 0 : 1) + shared_.size(); }
  std::string_view slice(size_t i) const {
    if (!owned_.empty()) {
      if (i == 0) return owned_;
      --i;
    }
    return shared_[i].bytes;
  }
  // True when the bytes are one string of the buffer's own.
  bool flat() const { return shared_.empty(); }
  // Those bytes, when flat() (no slice list built).
  std::string_view flat_bytes() const { return owned_; }
  // The bytes as one string: moved out if they are the buffer's own, else
  // copied together (the only copy; for callers that need a std::string).
  std::string TakeString() && {
    if (shared_.empty()) return std::move(owned_);
    std::string out;
    out.reserve(size());
    out.append(owned_);
    for (const Slice& s : shared_) out.append(s.bytes);
    return out;
  }
  void Clear() {
    owned_.clear();
    shared_.clear();
    shared_size_ = 0;
  }

 private:
  struct Slice {
    std::string_view bytes;
    RecvBlock::Ref block;
  };
  std::string owned_;  // first: bytes copied in
  absl::InlinedVector<Slice, 1> shared_;
  size_t shared_size_ = 0;
};

// One message to send. Copying one shares a large message's bytes (and
// copies a small one's).
class OutgoingMessage {
 public:
  OutgoingMessage() = default;
  // Takes `bytes` (moved: no copy either way).
  explicit OutgoingMessage(std::string bytes) {
    if (bytes.size() >= kZeroCopyMin) {
      large_ = std::make_shared<const std::string>(std::move(bytes));
    } else {
      small_ = std::move(bytes);
    }
  }
  std::string_view bytes() const { return large_ ? std::string_view(*large_) : small_; }
  size_t size() const { return bytes().size(); }
  // The holder of a large message's bytes (null for a small one).
  const std::shared_ptr<const std::string>& large() const { return large_; }

 private:
  std::string small_;
  std::shared_ptr<const std::string> large_;
};

}  // namespace ringrpc

#endif  // RINGRPC_BASE_BYTE_BUFFER_H_
