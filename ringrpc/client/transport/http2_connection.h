// ringrpc/client/transport/http2_connection.h — one HTTP/2 connection speaking
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
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ringrpc/base/fork.h"
#include "ringrpc/base/socket_mutator.h"
#include "ringrpc/base/task.h"
#include "ringrpc/base/time.h"
#include "ringrpc/client/runtime/event_loop.h"
#include "ringrpc/client/runtime/loop_event.h"
#include "ringrpc/client/transport/address.h"
#include "ringrpc/client/transport/call.h"
#include "ringrpc/client/transport/grpc_wire.h"
#include "ringrpc/client/transport/internal/send_batch.h"
#include "ringrpc/client/transport/keepalive.h"
#include "ringrpc/client/transport/tls.h"

struct nghttp2_session;

namespace ringrpc::transport {

using runtime::EventLoop;
using runtime::LoopEvent;

struct ConnectionOptions {
  std::string authority = "localhost";
  std::string scheme = "http";
  std::string user_agent = "ringrpc/0.1";
  Duration connect_timeout = std::chrono::seconds(20);
  uint32_t max_receive_message_size = 4u << 20;
  std::optional<uint32_t> max_send_message_size;  // unset: unlimited
  uint32_t max_metadata_size = 16u << 10;         // received header list, per block
  uint32_t max_concurrent_streams = 1000;         // our cap; the peer may lower it
  // Keepalive (gRPC keepalive.md). Unset time: no keepalive PINGs.
  std::optional<Duration> keepalive_time;
  Duration keepalive_timeout = std::chrono::seconds(20);
  bool keepalive_permit_without_calls = false;
  int max_pings_without_data = 2;  // 0: no limit
  // Set: TLS (handshake after the TCP connect, ALPN h2 required).
  std::shared_ptr<const TlsConfig> tls;
  // Set: the dialled address is an HTTP proxy; the connection first asks it
  // to CONNECT to this "host:port" (sending http_connect_authorization as
  // Proxy-Authorization when not empty), then speaks TLS and HTTP/2
  // through the tunnel.
  std::string http_connect_target;
  std::string http_connect_authorization;
  // TCP_USER_TIMEOUT on each TCP socket (gRFC A18): unset, the kernel's
  // default; ChannelConfig sets it to keepalive_timeout when keepalive is
  // on, as grpc++ does.
  std::optional<std::chrono::milliseconds> tcp_user_timeout;
  // Run on each new socket before its connect (null: none).
  std::shared_ptr<SocketMutator> socket_mutator;
  // LocalCredentials: where the connection's own end must be, checked
  // after the connect (kAny: anywhere).
  enum class Locality : uint8_t { kAny, kUnixSocket, kLoopbackTcp };
  Locality locality = Locality::kAny;
  // Field by field; `tls` and `socket_mutator` by identity.
  bool operator==(const ConnectionOptions&) const = default;
};

struct ConnectionStats {
  uint64_t pings_sent = 0;
  uint64_t frames_received = 0;
  uint64_t sends = 0;               // socket writes
  uint64_t sends_with_headers = 0;  // writes that carried request HEADERS
  uint64_t streams_started = 0;
};

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

class Http2Connection : public std::enable_shared_from_this<Http2Connection> {
 public:
  // Dials `address`, sends the preface and SETTINGS, and waits for the
  // server's SETTINGS, all within options.connect_timeout. UNAVAILABLE
  // (refused, timed out, not HTTP/2) or DEADLINE_EXCEEDED, with the cause.
  static Task<absl::StatusOr<std::shared_ptr<Http2Connection>>> Connect(EventLoop& loop,
                                                                        Address address,
                                                                        ConnectionOptions options);

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
    // The request messages' grpc-encoding (each Write may still opt out),
    // and zlib's level for it. Every request offers kAcceptEncoding.
    Compression compression = Compression::kIdentity;
    int compression_level = kDefaultCompressionLevel;
    // :authority for this call; empty: the connection's.
    std::string_view authority;
    // This call's message limits, when smaller than the connection's (the
    // service config's maxRequestMessageBytes / maxResponseMessageBytes).
    std::optional<uint32_t> max_send_message_size;
    std::optional<uint32_t> max_receive_message_size;
    // A retry (gRFC A6): grpc-previous-rpc-attempts is sent when > 0.
    int previous_attempts = 0;
  };
  // Opens a stream and sends the request headers. UNAVAILABLE if the
  // connection is closed or draining (GOAWAY), RESOURCE_EXHAUSTED at the
  // stream limit, INVALID_ARGUMENT for bad metadata.
  absl::StatusOr<std::unique_ptr<Call>> StartCall(CallOptions options);

  // New streams are allowed (open, no GOAWAY, no protocol violation).
  bool accepting_streams() const { return closed_.ok() && !draining_; }
  // `f` runs once, on the loop thread, when the peer ends the connection
  // (GOAWAY) or it fails (a socket error, a keepalive timeout, a protocol
  // error): not when its owner closes it. Runs inside the connection's own
  // work: it must not destroy the connection.
  void OnLost(std::function<void(const absl::Status&)> f) { on_lost_ = std::move(f); }
  // The last GOAWAY's error code (NGHTTP2_NO_ERROR if none) and debug data.
  uint32_t goaway_code() const { return goaway_code_; }
  const std::string& goaway_debug() const { return goaway_debug_; }
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
  static absl::StatusOr<std::shared_ptr<Http2Connection>> Attach(EventLoop& loop,
                                                                 DetachedConnection detached);

 private:
  friend class Call;
  struct Callbacks;
  class KeepaliveTimer;

  Http2Connection(EventLoop& loop, Address address, ConnectionOptions options, int fd);
  absl::Status InitSession();
  // OK if a new stream may start on `path` now: open, not draining, under
  // the stream limit, a well-formed path.
  absl::Status CheckAcceptingCall(std::string_view path) const;
  // A call on this connection with the smaller of its and the options'
  // message limits (StartCall's; not yet submitted).
  std::unique_ptr<Call> NewCall(const CallOptions& options);
  void Start();  // the reader and the writer
  // Feeds bytes from the server to nghttp2; not OK: close with it.
  absl::Status Ingest(const uint8_t* data, size_t n);
  absl::Status RecvError(int res) const;
  // The CONNECT request and the proxy's answer, up to the end of its
  // header (nothing after it is read: the server's first bytes stay in the
  // socket for TLS or HTTP/2).
  // After the dial: the proxy's CONNECT tunnel, then the TLS handshake
  // (the session; null without TLS), within the connect timeout.
  static Task<absl::StatusOr<std::unique_ptr<TlsSession>>> Handshake(
      EventLoop& loop, int fd, const ConnectionOptions& options, const std::string& dialled,
      const std::string& where, TimePoint start);
  static Task<absl::Status> HttpConnect(EventLoop& loop, int fd, const ConnectionOptions& options,
                                        std::string where);
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
  // Starts (or, back from the reservoir, restarts) keepalive.
  void StartKeepalive();
  void ForgetCall(Call* call);
  // Consumes `n` received DATA bytes for flow control (connection, and the
  // stream while it exists), so WINDOW_UPDATEs go out.
  void Credit(int32_t stream_id, size_t n);
  void ResetStream(Call* call, uint32_t error_code);
  // Stops new calls after the server broke the gRPC protocol on a stream.
  void Distrust(const absl::Status& why);

  EventLoop* loop_;                                    // null while detached
  const uint64_t fork_generation_ = ForkGeneration();  // never attached in a child
  Address address_;
  ConnectionOptions options_;
  int fd_;
  nghttp2_session* session_ = nullptr;
  std::unique_ptr<TlsSession> tls_;  // null: plaintext
  // What the write loop's pass is gathering (nghttp2's bytes and, via
  // Callbacks::SendData, the DATA frames' payloads).
  SendBatch batch_;
  // The receive block being ingested (plaintext: decrypted, for TLS):
  // large message bodies are kept as slices of it rather than copied.
  RecvBlock::Ref recv_block_;
  std::unordered_map<int32_t, Call*> calls_;
  absl::Status closed_;
  bool draining_ = false;
  absl::Status distrust_reason_;
  void Lost(const absl::Status& why);  // runs on_lost_, once
  // The first `n` bytes of `block`, from the socket: through TLS (if any,
  // decrypted into other receive blocks), then nghttp2.
  absl::Status Receive(const RecvBlock::Ref& block, size_t n);
  // Plaintext bytes to nghttp2, with recv_block_ set to their block.
  absl::Status IngestBlock(const RecvBlock::Ref& block, size_t n);
  // A receive block no message holds (kRecvBlockSize bytes): one of those
  // kept, or a fresh one kept in place of the oldest (a medium-sized reply
  // holds its block until its caller parses it).
  RecvBlock::Ref TakeRecvBlock();
  absl::InlinedVector<RecvBlock::Ref, 4> recv_blocks_;
  size_t next_replaced_ = 0;
  std::function<void(const absl::Status&)> on_lost_;
  uint32_t goaway_code_ = 0;
  std::string goaway_debug_;
  std::string last_protocol_error_;
  absl::Status local_goaway_;  // set when nghttp2 ended the session
  bool batch_has_headers_ = false;
  int continuations_ = 0;  // CONTINUATION frames in the current header block
  std::string preface_;    // the server's first 9 bytes, checked for SETTINGS
  bool settings_received_ = false;
  ConnectionStats stats_;
  std::optional<LoopEvent> flush_event_;  // bound to loop_: rebuilt on attach
  std::optional<LoopEvent> settings_event_;
  // Reservoir support: the reader's receive in flight (for Interrupt), a
  // request to go quiet, the reader waiting on readability, a send in flight.
  runtime::IoOp* recv_op_ = nullptr;
  runtime::IoOp* send_op_ = nullptr;  // the writer's send in flight
  bool quiesce_ = false;
  bool polling_ = false;
  bool writing_ = false;
  // Keepalive, when options.keepalive_time is set: the policy lives as long
  // as the connection; its timer only while the connection is on a loop.
  std::optional<KeepalivePolicy> keepalive_;
  std::unique_ptr<KeepaliveTimer> keepalive_timer_;
  Task<void> reader_;
  Task<void> writer_;
};

}  // namespace ringrpc::transport

#endif  // RINGRPC_CLIENT_TRANSPORT_HTTP2_CONNECTION_H_
