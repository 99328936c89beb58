// client/transport/http2_connection.h — one HTTP/2 connection speaking
// gRPC, owned by one completion-queue thread.
//
// The connection is its own single owner loop (seeds/004): on its CQ thread
// it reads, writes, runs the nghttp2 session (framing, HPACK, flow control),
// its keepalive and liveness timers, and the calls' deadlines. nghttp2 is
// driven with mem_recv/mem_send only; every frame pending after a loop pass
// goes out in one send. Its lifetime belongs to whoever holds it (the
// subchannel's pool, later), never to a call: calls hold a reference.
//
// Threading: everything on the connection's loop thread. Never shared.
//
//   auto conn = co_await Http2Connection::Connect(loop, addr, options);
//   auto call = (*conn)->StartCall({.path = "/pkg.Svc/Method"});
//   co_await (*call)->Write(request_bytes);
//   (*call)->WritesDone();
//   std::optional<std::string> reply = co_await (*call)->Read();
//   absl::Status status = co_await (*call)->Finish();
#ifndef RINGRPC_CLIENT_TRANSPORT_HTTP2_CONNECTION_H_
#define RINGRPC_CLIENT_TRANSPORT_HTTP2_CONNECTION_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/task.h"
#include "base/time.h"
#include "client/runtime/event_loop.h"
#include "client/runtime/loop_event.h"
#include "client/transport/address.h"
#include "client/transport/grpc_wire.h"
#include "client/transport/tls.h"

struct nghttp2_session;

namespace ringrpc::transport {

using runtime::EventLoop;
using runtime::LoopEvent;

// Metadata as the application sees it: -bin values decoded.
using Metadata = std::vector<std::pair<std::string, std::string>>;

struct ConnectionOptions {
  std::string authority = "localhost";
  std::string scheme = "http";
  std::string user_agent = "ringrpc/0.1";
  Duration connect_timeout = std::chrono::seconds(20);
  uint32_t max_receive_message_size = 4u << 20;
  std::optional<uint32_t> max_send_message_size;  // unset: unlimited
  uint32_t max_metadata_size = 16u << 10;  // received header list, per block
  uint32_t max_concurrent_streams = 1000;  // our cap; the peer may lower it
  // Keepalive (gRPC keepalive.md). Unset time: no keepalive PINGs.
  std::optional<Duration> keepalive_time;
  Duration keepalive_timeout = std::chrono::seconds(20);
  bool keepalive_permit_without_calls = false;
  int max_pings_without_data = 2;  // 0: no limit
  // Set: TLS (handshake after the TCP connect, ALPN h2 required).
  std::shared_ptr<const TlsConfig> tls;
  // Field by field; `tls` by identity (one channel's TLS settings).
  bool operator==(const ConnectionOptions&) const = default;
};

struct ConnectionStats {
  uint64_t pings_sent = 0;
  uint64_t frames_received = 0;
  uint64_t sends = 0;               // socket writes
  uint64_t sends_with_headers = 0;  // writes that carried request HEADERS
  uint64_t streams_started = 0;
};

class Http2Connection;

// A connection taken off its loop (for the pool's reservoir): owns the
// socket and the HTTP/2 session, runs nothing. Destroying it closes the
// socket. Any thread may hold it; Http2Connection::Attach puts it on a loop.
class DetachedConnection {
 public:
  DetachedConnection(DetachedConnection&&) noexcept = default;
  DetachedConnection& operator=(DetachedConnection&&) noexcept = default;

 private:
  friend class Http2Connection;
  explicit DetachedConnection(std::shared_ptr<Http2Connection> c) : conn_(std::move(c)) {}
  std::shared_ptr<Http2Connection> conn_;
};

// One RPC (one HTTP/2 stream). Ends exactly once with a status. Destroying
// an unfinished call cancels it (RST_STREAM CANCEL).
class Call {
 public:
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  // Queues one message: its bytes are copied when Write is called, so the
  // caller may keep or drop `message` at once. The task waits while more
  // than 1 MiB is queued unsent. An ended call returns its status; a
  // message over max_send_message_size ends the call RESOURCE_EXHAUSTED.
  Task<absl::Status> Write(std::string_view message);
  // Half-closes: no more messages from the client.
  void WritesDone();
  // The next message; nullopt once the server has ended the stream (or the
  // call ended): then Finish() has the status.
  Task<std::optional<std::string>> Read();
  // Waits for the initial metadata (or the end of the call).
  Task<void> WaitForInitialMetadata();
  // Waits for the end of the call and returns its status. May be awaited
  // while another coroutine awaits Read() or Write() (not while one awaits
  // WaitForInitialMetadata()).
  Task<absl::Status> Finish();
  // Ends the call CANCELLED and resets the stream (idempotent).
  void Cancel();

  bool finished() const { return status_.has_value(); }
  // Set once the call has ended.
  const std::optional<absl::Status>& status() const { return status_; }
  // Queues one message (copied now) without waiting for room: what Write
  // does before it waits.
  absl::Status Enqueue(std::string_view message);
  bool headers_received() const { return headers_received_; }
  const Metadata& initial_metadata() const { return initial_metadata_; }
  const Metadata& trailing_metadata() const { return trailing_metadata_; }
  // grpc-status-details-bin, raw, if the server sent it.
  const std::optional<std::string>& status_details() const { return details_; }
  // True when the server never saw this call (GOAWAY above it, or
  // REFUSED_STREAM): safe to retry elsewhere.
  bool never_sent() const { return never_sent_; }
  int32_t stream_id() const { return stream_id_; }

 private:
  friend class Http2Connection;
  Call(std::shared_ptr<Http2Connection> conn, uint32_t max_receive);

  Task<absl::Status> WaitForRoom(absl::Status queued);
  // Gives the server back window for the bytes the reader no longer waits
  // on: everything but complete messages not yet read.
  void CreditConsumed();
  // First status wins; wakes everyone waiting.
  void End(absl::Status status);
  void Wake();

  std::shared_ptr<Http2Connection> conn_;
  int32_t stream_id_ = -1;
  // Outgoing framed bytes not yet taken by nghttp2.
  std::string out_;
  size_t out_offset_ = 0;
  bool writes_done_ = false;
  bool data_deferred_ = false;
  // Incoming.
  MessageDecoder decoder_;
  size_t held_ = 0;  // received DATA bytes not yet credited back (flow control)
  bool headers_received_ = false;
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

class Http2Connection : public std::enable_shared_from_this<Http2Connection> {
 public:
  // Dials `address`, sends the preface and SETTINGS, and waits for the
  // server's SETTINGS, all within options.connect_timeout. UNAVAILABLE
  // (refused, timed out, not HTTP/2) or DEADLINE_EXCEEDED, with the cause.
  static Task<absl::StatusOr<std::shared_ptr<Http2Connection>>> Connect(
      EventLoop& loop, Address address, ConnectionOptions options);

  // Runs the connection over `fd`, an already connected non-blocking
  // socket (tests, fuzzing, and later TLS). Does not wait for SETTINGS.
  // `tls`: a session whose handshake is done (its socket is `fd`).
  static absl::StatusOr<std::shared_ptr<Http2Connection>> Adopt(
      EventLoop& loop, int fd, Address address, ConnectionOptions options,
      std::unique_ptr<TlsSession> tls = nullptr);

  ~Http2Connection();
  Http2Connection(const Http2Connection&) = delete;
  Http2Connection& operator=(const Http2Connection&) = delete;

  struct CallOptions {
    std::string_view path;  // "/package.Service/Method"; read during StartCall only
    std::optional<TimePoint> deadline;
    Metadata metadata;  // -bin values raw; encoded on the wire
  };
  // Opens a stream and sends the request headers. UNAVAILABLE if the
  // connection is closed or draining (GOAWAY), RESOURCE_EXHAUSTED at the
  // stream limit, INVALID_ARGUMENT for bad metadata.
  absl::StatusOr<std::unique_ptr<Call>> StartCall(CallOptions options);

  // New streams are allowed (open, no GOAWAY, no protocol violation).
  bool accepting_streams() const { return closed_.ok() && !draining_; }
  // Why it closed (OK while open).
  const absl::Status& close_reason() const { return closed_; }
  // Concurrent streams allowed: the peer's MAX_CONCURRENT_STREAMS capped by
  // options.max_concurrent_streams. The pool slot's capacity.
  uint32_t max_concurrent_streams() const;
  size_t active_calls() const { return calls_.size(); }
  const ConnectionStats& stats() const { return stats_; }
  const Address& address() const { return address_; }

  // Fails every call UNAVAILABLE with `reason` and shuts the socket.
  void Close(absl::Status reason);

  // Moving between CQ threads (the reservoir, decision 0013). An idle
  // connection is quiescent when it has no calls, no send, no pending frame
  // and no PING in flight, and its reader waits for readability instead of
  // holding a receive. TryQuiesce() says whether it is quiescent now; if
  // not, and it has no calls, it interrupts its receive so that it soon is.
  bool TryQuiesce();
  bool Quiescent() const;
  // Takes a quiescent connection, held by `conn` alone, off its loop.
  // FAILED_PRECONDITION otherwise (and `conn` is dropped).
  static absl::StatusOr<DetachedConnection> Detach(std::shared_ptr<Http2Connection> conn);
  // Puts a detached connection on `loop` (the calling thread's): first
  // processes what the socket received while parked; UNAVAILABLE (and the
  // connection closed) if the server closed it or sent GOAWAY meanwhile.
  static absl::StatusOr<std::shared_ptr<Http2Connection>> Attach(
      EventLoop& loop, DetachedConnection detached);

 private:
  friend class Call;
  struct Callbacks;
  class KeepaliveTimer;

  Http2Connection(EventLoop& loop, Address address, ConnectionOptions options, int fd);
  absl::Status InitSession();
  void Start();  // the reader and the writer
  // Feeds bytes from the server to nghttp2; not OK: close with it.
  absl::Status Ingest(const uint8_t* data, size_t n);
  absl::Status RecvError(int res) const;
  static Task<absl::Status> TlsHandshake(EventLoop& loop, int fd, TlsSession* tls,
                                         std::string where);
  Task<void> ReadLoop();
  Task<void> WriteLoop();
  void Flush() {
    flush_event_->Set();
    // The writer must come back as soon as its send ends: no longer quiet.
    if (send_op_ != nullptr) loop_->SetQuiet(send_op_, false);
  }
  void OnFrameReceived();
  void ForgetCall(Call* call);
  // Consumes `n` received DATA bytes for flow control (connection, and the
  // stream while it exists), so WINDOW_UPDATEs go out.
  void Credit(int32_t stream_id, size_t n);
  void ResetStream(Call* call, uint32_t error_code);
  // Stops new calls after the server broke the gRPC protocol on a stream.
  void Distrust(const absl::Status& why);

  EventLoop* loop_;  // null while detached
  Address address_;
  ConnectionOptions options_;
  int fd_;
  nghttp2_session* session_ = nullptr;
  std::unique_ptr<TlsSession> tls_;  // null: plaintext
  std::string plain_;                // decrypted bytes, reused
  std::unordered_map<int32_t, Call*> calls_;
  absl::Status closed_;
  bool draining_ = false;
  absl::Status distrust_reason_;
  std::string last_protocol_error_;
  absl::Status local_goaway_;  // set when nghttp2 ended the session
  bool batch_has_headers_ = false;
  int continuations_ = 0;  // CONTINUATION frames in the current header block
  std::string preface_;  // the server's first 9 bytes, checked for SETTINGS
  bool settings_received_ = false;
  ConnectionStats stats_;
  int pings_without_data_ = 0;
  std::optional<LoopEvent> flush_event_;  // bound to loop_: rebuilt on attach
  std::optional<LoopEvent> settings_event_;
  // Reservoir support: the reader's receive in flight (for Interrupt), a
  // request to go quiet, the reader waiting on readability, a send in flight.
  runtime::IoOp* recv_op_ = nullptr;
  runtime::IoOp* send_op_ = nullptr;  // the writer's send in flight
  bool quiesce_ = false;
  bool polling_ = false;
  bool writing_ = false;
  std::unique_ptr<KeepaliveTimer> keepalive_;
  Task<void> reader_;
  Task<void> writer_;
};

}  // namespace ringrpc::transport

#endif  // RINGRPC_CLIENT_TRANSPORT_HTTP2_CONNECTION_H_
