// ringrpc/client/transport/call.h — one RPC on an HTTP/2 connection: one stream,
// its outgoing message bytes, its incoming messages, metadata and status.
//
// A Call is made by Http2Connection::StartCall and fed by the connection's
// nghttp2 callbacks (http2_callbacks.cc); the application writes, reads and
// awaits its end here. It ends exactly once with a status.
//
// Threading: the connection's loop thread only. Never shared.
//
//   auto call = conn->StartCall({.path = "/pkg.Svc/Method"});
//   co_await (*call)->Write(request_bytes);
//   (*call)->WritesDone();
//   std::optional<std::string> reply = co_await (*call)->Read();
//   absl::Status status = co_await (*call)->Finish();
#ifndef RINGRPC_CLIENT_TRANSPORT_CALL_H_
#define RINGRPC_CLIENT_TRANSPORT_CALL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ringrpc/base/task.h"
#include "ringrpc/base/time.h"
#include "ringrpc/client/runtime/loop_event.h"
#include "ringrpc/client/transport/compression.h"
#include "ringrpc/client/transport/grpc_wire.h"
#include "ringrpc/client/transport/metadata.h"

namespace ringrpc::transport {

using runtime::LoopEvent;

class Http2Connection;
struct SendBatch;

// One RPC (one HTTP/2 stream). Ends exactly once with a status. Destroying
// an unfinished call cancels it (RST_STREAM CANCEL).
class Call {
 public:
  // Told once, on the connection's loop thread, when the call ends (its
  // status set; also when it ends by being destroyed).
  class EndObserver {
   public:
    virtual void OnCallEnd(const Call& call) = 0;

   protected:
    ~EndObserver() = default;
  };

  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  // Queues one message: its bytes are copied when Write is called, so the
  // caller may keep or drop `message` at once. The task waits while more
  // than 1 MiB is queued unsent. An ended call returns its status; a
  // message over max_send_message_size ends the call RESOURCE_EXHAUSTED.
  // With `compress` (and a request encoding other than identity) the
  // message is sent compressed, unless that does not make it smaller.
  Task<absl::Status> Write(std::string_view message, bool compress = true);
  // The same for a message whose large bytes are held, not copied: they
  // go to the socket from where they are (uncompressed).
  Task<absl::Status> Write(const OutgoingMessage& message, bool compress = true);
  // Half-closes: no more messages from the client.
  void WritesDone();
  // The largest message this call accepts (the smaller of the connection's
  // and the method's limits).
  uint32_t max_receive_message_size() const { return max_receive_; }
  // The next message (inflated if the server compressed it); nullopt once
  // the server has ended the stream (or the call ended): then Finish() has
  // the status. A message that cannot be inflated (corrupt, over the
  // receive limit once inflated, an encoding never offered) ends the call
  // with that error, even if the server had already ended it OK.
  Task<std::optional<ByteBuffer>> ReadBuffer();
  // ReadBuffer as one string (moved if it is one, else copied together).
  Task<std::optional<std::string>> Read();
  // Waits for the initial metadata (or the end of the call).
  Task<void> WaitForInitialMetadata();
  // Waits for the end of the call and returns its status. May be awaited
  // while another coroutine awaits Read() or Write() (not while one awaits
  // WaitForInitialMetadata()).
  Task<absl::Status> Finish();
  // Ends the call CANCELLED and resets the stream (idempotent).
  void Cancel();

  // Queued bytes past which Write waits for the socket to take some.
  static constexpr size_t kWriteHighWater = 1 << 20;

  bool finished() const { return status_.has_value(); }
  // Set once the call has ended.
  const std::optional<absl::Status>& status() const { return status_; }
  // Queues one message without waiting for room: what Write does before
  // it waits.
  absl::Status Enqueue(std::string_view message, bool compress = true);
  absl::Status Enqueue(const OutgoingMessage& message, bool compress = true);
  // The response's grpc-encoding as the server named it ("" if it sent
  // none); its compressed messages are inflated by Read().
  const std::string& response_encoding() const { return response_encoding_; }
  bool headers_received() const { return headers_received_; }
  // The server sent initial metadata of its own (not a trailers-only
  // response): what commits a call for gRFC A6's retries.
  bool initial_metadata_received() const { return initial_metadata_received_; }
  const Metadata& initial_metadata() const { return initial_metadata_; }
  const Metadata& trailing_metadata() const { return trailing_metadata_; }
  // grpc-status-details-bin, raw, if the server sent it.
  const std::optional<std::string>& status_details() const { return details_; }
  // True when the server never saw this call (GOAWAY above it, or
  // REFUSED_STREAM): safe to retry elsewhere.
  bool never_sent() const { return never_sent_; }
  int32_t stream_id() const { return stream_id_; }
  // Message bytes as sent and as received (compressed if they were), the
  // 5-byte prefixes not counted: gRFC A66's *_total_compressed_message_size.
  uint64_t sent_message_bytes() const { return sent_message_bytes_; }
  uint64_t received_message_bytes() const { return decoder_.message_bytes(); }
  // Null to stop; the observer must outlive the call or be unset first.
  void set_end_observer(EndObserver* observer) { end_observer_ = observer; }
  // Also rung (if set) when the initial metadata arrives and when the
  // call ends: how one coroutine watches several calls (a hedged stream's
  // copies) without waiting in any of them. Null to stop; the event must
  // outlive the call or be unset first.
  void set_progress_event(LoopEvent* event) { progress_event_ = event; }

 private:
  friend class Http2Connection;
  Call(std::shared_ptr<Http2Connection> conn, uint32_t max_receive,
       std::optional<uint32_t> max_send, Compression send_compression, int send_level);

  Task<absl::Status> WaitForRoom(absl::Status queued);
  // One step of a read: a message into `out`, the end, or wait for more.
  enum class ReadStep { kMessage, kEnd, kWait };
  ReadStep TakeMessage(ByteBuffer* out);
  // `held`: the owner of `message`'s bytes, to send them from (large ones).
  absl::Status Enqueue(std::string_view message, const std::shared_ptr<const std::string>* held,
                       bool compress);
  // The chunk at the end of out_ that bytes may be copied into.
  std::string& OwnTail();
  // Moves the next `n` queued bytes (at most out_bytes_) into `batch`:
  // copied, or held there too for a held message.
  void TakeOut(size_t n, SendBatch& batch);
  // A received message whose compressed flag was set, inflated per the
  // response's grpc-encoding (within the receive limit).
  absl::StatusOr<std::string> Inflate(std::string_view bytes) const;
  // Gives the server back window for the bytes the reader no longer waits
  // on: everything but complete messages not yet read.
  void CreditConsumed();
  // Ends the call DEADLINE_EXCEEDED at `deadline` unless it ends first.
  void StartDeadline(TimePoint deadline);
  // First status wins; wakes everyone waiting.
  void End(absl::Status status);
  void Wake();

  std::shared_ptr<Http2Connection> conn_;
  int32_t stream_id_ = -1;
  // Outgoing bytes not yet taken by nghttp2, in order: chunks of the
  // call's own (prefixes, small and compressed messages, copied in) and
  // large messages held (sent from where protobuf serialized them).
  struct OutChunk {
    std::string own;
    std::shared_ptr<const std::string> held;
    size_t at = 0;  // bytes already taken
    std::string_view rest() const {
      return (held ? std::string_view(*held) : std::string_view(own)).substr(at);
    }
  };
  absl::InlinedVector<OutChunk, 2> out_;
  size_t out_bytes_ = 0;  // bytes in out_ not yet taken
  uint64_t sent_message_bytes_ = 0;
  EndObserver* end_observer_ = nullptr;
  LoopEvent* progress_event_ = nullptr;
  bool writes_done_ = false;
  const std::optional<uint32_t> max_send_;  // none: no limit
  bool data_deferred_ = false;
  const Compression send_compression_;
  const int send_level_;  // zlib's level
  // Incoming.
  const uint32_t max_receive_;
  MessageDecoder decoder_;
  std::string response_encoding_;
  size_t held_ = 0;  // received DATA bytes not yet credited back (flow control)
  bool headers_received_ = false;
  bool initial_metadata_received_ = false;
  bool in_trailers_ = false;
  bool remote_closed_ = false;
  int http_status_ = 0;
  std::optional<std::string> grpc_status_;
  std::optional<std::string> grpc_message_;
  std::optional<std::string> details_;
  size_t header_bytes_ = 0;
  Metadata initial_metadata_;
  Metadata trailing_metadata_;
  std::optional<absl::Status> status_;
  bool never_sent_ = false;
  bool reset_ = false;  // RST_STREAM submitted (or the queued HEADERS cancelled)
  // Deadline.
  class DeadlineTimer;
  std::unique_ptr<DeadlineTimer> deadline_;
  // Wake-ups, one waiter each: Read; Write; WaitForInitialMetadata or
  // Finish (so a call can be read while another coroutine awaits its end).
  LoopEvent read_event_;
  LoopEvent write_event_;
  LoopEvent state_event_;
};

}  // namespace ringrpc::transport

#endif  // RINGRPC_CLIENT_TRANSPORT_CALL_H_
