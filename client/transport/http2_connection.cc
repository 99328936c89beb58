#include "client/transport/http2_connection.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/container/inlined_vector.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace ringrpc::transport {
namespace {

constexpr size_t kWriteHighWater = 1 << 20;  // queued bytes before Write waits
constexpr uint32_t kStreamWindow = 4u << 20;
constexpr int32_t kConnectionWindow = 16 << 20;
constexpr int kMaxContinuations = 64;

std::string Ms(Duration d) {
  return absl::StrCat(std::chrono::duration_cast<std::chrono::milliseconds>(d).count(), "ms");
}

nghttp2_nv Header(std::string_view name, std::string_view value) {
  return nghttp2_nv{const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(name.data())),
                    const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(value.data())),
                    name.size(), value.size(), NGHTTP2_NV_FLAG_NONE};
}

// Metadata keys the application may not set: they are the protocol's.
bool IsReservedKey(std::string_view k) {
  return k.empty() || k[0] == ':' || k == "te" || k == "content-type" ||
         k == "user-agent" || k.rfind("grpc-", 0) == 0 ||
         // Connection-specific fields: HTTP/2 forbids them (RFC 9113 8.2.2).
         k == "connection" || k == "transfer-encoding" || k == "upgrade" ||
         k == "keep-alive" || k == "proxy-connection";
}

// nghttp2's default limit on one outgoing header block (HEADERS plus its
// CONTINUATIONs): above it nghttp2 drops the HEADERS and closes the stream
// as if refused, which would look safe to retry.
constexpr size_t kMaxSendHeaderBlock = 65536;

// "application/grpc", alone or followed by '+' or ';' (gRPC's
// PROTOCOL-HTTP2.md).
bool IsGrpcContentType(std::string_view v) {
  constexpr std::string_view kGrpc = "application/grpc";
  if (v.substr(0, kGrpc.size()) != kGrpc) return false;
  return v.size() == kGrpc.size() || v[kGrpc.size()] == '+' || v[kGrpc.size()] == ';';
}

absl::Status ValidateMetadata(const Metadata& md) {
  for (const auto& [k, v] : md) {
    for (char c : k) {
      bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                c == '_' || c == '.';
      if (!ok) {
        return absl::InvalidArgumentError(absl::StrCat(
            "metadata key \"", k, "\" must be lowercase letters, digits, '-', '_' or '.'"));
      }
    }
    if (IsReservedKey(k)) {
      return absl::InvalidArgumentError(
          absl::StrCat("metadata key \"", k, "\" is reserved by the protocol"));
    }
    if (!IsBinaryHeader(k)) {
      for (char c : v) {
        if (c < 0x20 || c > 0x7e) {
          return absl::InvalidArgumentError(absl::StrCat(
              "metadata value of \"", k,
              "\" must be printable ASCII (use a -bin key for binary values)"));
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

// ---- Call -------------------------------------------------------------------

class Call::DeadlineTimer final : public TimerCallback {
 public:
  DeadlineTimer(Call* call, TimePoint deadline) : call_(call) {
    id_ = call_->conn_->loop_->ScheduleTimer(deadline, this);
  }
  ~DeadlineTimer() {
    if (id_ != 0) call_->conn_->loop_->CancelTimer(id_);
  }
  void OnTimer() override {
    id_ = 0;
    Call* call = call_;  // End() destroys this timer
    call->End(absl::DeadlineExceededError("deadline exceeded"));
    call->conn_->ResetStream(call, NGHTTP2_CANCEL);
  }

 private:
  Call* call_;
  uint64_t id_ = 0;
};

Call::Call(std::shared_ptr<Http2Connection> conn, uint32_t max_receive)
    : conn_(std::move(conn)),
      decoder_(max_receive),
      read_event_(*conn_->loop_),
      state_event_(*conn_->loop_),
      write_event_(*conn_->loop_) {}

Call::~Call() {
  if (!status_) End(absl::CancelledError("call destroyed before it ended"));
  conn_->ResetStream(this, NGHTTP2_CANCEL);
  conn_->ForgetCall(this);
}

void Call::End(absl::Status status) {
  if (status_) return;
  status_ = std::move(status);
  deadline_.reset();
  Wake();
}

void Call::Wake() {
  read_event_.Set();
  state_event_.Set();
  write_event_.Set();
}

Task<absl::Status> Call::Write(std::string_view message) {
  // The bytes are framed into out_ now, before the task starts: the caller
  // may drop (or keep, for a retry) `message` as soon as this returns.
  return WaitForRoom(Enqueue(message));
}

absl::Status Call::Enqueue(std::string_view message) {
  if (status_) {
    return status_->ok() ? absl::FailedPreconditionError("Write after the call ended") : *status_;
  }
  if (writes_done_) return absl::FailedPreconditionError("Write after WritesDone");
  const auto& max = conn_->options_.max_send_message_size;
  if (max && message.size() > *max) {
    absl::Status s = absl::ResourceExhaustedError(absl::StrCat(
        "sent message larger than max (", message.size(), " vs. ", *max, ")"));
    End(s);
    conn_->ResetStream(this, NGHTTP2_CANCEL);
    return s;
  }
  AppendFramedMessage(out_, message);
  if (data_deferred_) {
    data_deferred_ = false;
    nghttp2_session_resume_data(conn_->session_, stream_id_);
  }
  conn_->Flush();
  return absl::OkStatus();
}

Task<absl::Status> Call::WaitForRoom(absl::Status queued) {
  if (!queued.ok()) co_return queued;
  while (!status_ && out_.size() - out_offset_ > kWriteHighWater) {
    co_await write_event_.Wait();
  }
  if (status_ && !status_->ok()) co_return *status_;
  co_return absl::OkStatus();
}

void Call::WritesDone() {
  if (writes_done_ || status_) return;
  writes_done_ = true;
  if (data_deferred_) {
    data_deferred_ = false;
    nghttp2_session_resume_data(conn_->session_, stream_id_);
  }
  conn_->Flush();
}

void Call::CreditConsumed() {
  size_t unread = decoder_.ready_bytes();
  if (held_ > unread) {
    conn_->Credit(stream_id_, held_ - unread);
    held_ = unread;
  }
}

Task<std::optional<std::string>> Call::Read() {
  for (;;) {
    if (status_ && !status_->ok()) co_return std::nullopt;
    if (std::optional<std::string> m = decoder_.Next()) {
      CreditConsumed();  // the reader took it: the server may send more
      co_return m;
    }
    if (status_ || remote_closed_) co_return std::nullopt;
    co_await read_event_.Wait();
  }
}

Task<void> Call::WaitForInitialMetadata() {
  while (!headers_received_ && !status_) co_await state_event_.Wait();
}

Task<absl::Status> Call::Finish() {
  while (!status_) co_await state_event_.Wait();
  co_return *status_;
}

void Call::Cancel() {
  End(absl::CancelledError("cancelled by the client"));
  conn_->ResetStream(this, NGHTTP2_CANCEL);
}

// ---- nghttp2 callbacks --------------------------------------------------------

struct Http2Connection::Callbacks {
  static Http2Connection* Conn(void* user_data) {
    return static_cast<Http2Connection*>(user_data);
  }
  static Call* CallOf(nghttp2_session* s, int32_t stream_id) {
    return static_cast<Call*>(nghttp2_session_get_stream_user_data(s, stream_id));
  }

  // nghttp2 1.52 predates the CONTINUATION-flood fix (CVE-2024-28182):
  // it would decode CONTINUATION frames of one header block for as long as
  // the server sends them. A header block longer than 64 frames (1 MiB at
  // the default frame size, far over max_metadata_size) ends the session.
  static int OnBeginFrame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user_data) {
    Http2Connection* conn = Conn(user_data);
    if (hd->type == NGHTTP2_HEADERS) {
      conn->continuations_ = 0;
    } else if (hd->type == NGHTTP2_CONTINUATION && ++conn->continuations_ > kMaxContinuations) {
      conn->last_protocol_error_ = absl::StrCat(
          "more than ", kMaxContinuations, " CONTINUATION frames in one header block");
      return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
    return 0;
  }

  static int OnBeginHeaders(nghttp2_session* s, const nghttp2_frame* frame, void*) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    Call* call = CallOf(s, frame->hd.stream_id);
    if (call == nullptr) return 0;
    // A block that ends the stream is trailers (or trailers-only).
    call->in_trailers_ = frame->headers.cat == NGHTTP2_HCAT_HEADERS ||
                         (frame->hd.flags & NGHTTP2_FLAG_END_STREAM);
    call->header_bytes_ = 0;
    return 0;
  }

  static int OnHeader(nghttp2_session* s, const nghttp2_frame* frame,
                      const uint8_t* name, size_t namelen, const uint8_t* value,
                      size_t valuelen, uint8_t, void* user_data) {
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    Call* call = CallOf(s, frame->hd.stream_id);
    if (call == nullptr || call->status_) return 0;
    Http2Connection* conn = Conn(user_data);
    call->header_bytes_ += namelen + valuelen + 32;
    if (call->header_bytes_ > conn->options_.max_metadata_size) {
      call->End(absl::ResourceExhaustedError(absl::StrCat(
          "received metadata larger than the limit of ", conn->options_.max_metadata_size,
          " bytes")));
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // nghttp2 resets the stream
    }
    std::string_view k(reinterpret_cast<const char*>(name), namelen);
    std::string_view v(reinterpret_cast<const char*>(value), valuelen);
    if (k == ":status") {
      int st = 0;
      for (char c : v) st = (c >= '0' && c <= '9') ? st * 10 + (c - '0') : -1000;
      call->http_status_ = st;
    } else if (k == "grpc-status") {
      call->grpc_status_ = std::string(v);
    } else if (k == "grpc-message") {
      call->grpc_message_ = PercentDecode(v);
    } else if (k == "content-type") {
      // gRPC requires application/grpc*; a 200 with anything else is not a
      // gRPC server answering (a proxy's error page, say). Other HTTP
      // statuses are mapped from the status instead.
      if (!call->headers_received_ && call->http_status_ == 200 && !IsGrpcContentType(v)) {
        call->End(absl::UnknownError(absl::StrCat(
            "the server answered with content-type \"", absl::CHexEscape(absl::string_view(v.data(), v.size())),
            "\", not application/grpc")));
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // nghttp2 resets the stream
      }
    } else if (k == "grpc-status-details-bin") {
      absl::StatusOr<std::string> d = DecodeBinaryHeader(v);
      if (d.ok()) call->details_ = std::move(*d);
    } else if (!k.empty() && k[0] != ':' && k != "content-type" &&
               k != "grpc-encoding" && k != "grpc-accept-encoding") {
      std::string decoded(v);
      if (IsBinaryHeader(k)) {
        absl::StatusOr<std::string> d = DecodeBinaryHeader(v);
        if (!d.ok()) {
          Violation(call, absl::InternalError(absl::StrCat(
                              "malformed base64 in metadata \"", std::string(k),
                              "\" from the server")));
          return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }
        decoded = std::move(*d);
      }
      (call->in_trailers_ ? call->trailing_metadata_ : call->initial_metadata_)
          .emplace_back(std::string(k), std::move(decoded));
    }
    return 0;
  }

  // A server that breaks the gRPC protocol gets no new calls on this
  // connection; the calls it has finish.
  static void Violation(Call* call, absl::Status status) {
    call->conn_->Distrust(status);
    call->End(std::move(status));
  }

  static void FinishFromTrailers(Call* call) {
    call->remote_closed_ = true;
    call->headers_received_ = true;
    if (call->decoder_.partial()) {
      Violation(call, absl::InternalError("stream ended in the middle of a message"));
      return;
    }
    if (call->grpc_status_) {
      absl::StatusOr<absl::StatusCode> code = ParseGrpcStatus(*call->grpc_status_);
      if (!code.ok()) {
        Violation(call, code.status());
        return;
      }
      std::string message = call->grpc_message_.value_or("");
      if (message.empty() && *code != absl::StatusCode::kOk) {
        // Say who decided, rather than hand the user an empty message.
        message = absl::StrCat("the server ended the call with ", absl::StatusCodeToString(*code),
                               " and no grpc-message");
      }
      call->End(absl::Status(*code, message));
      return;
    }
    if (call->http_status_ != 200 && call->http_status_ != 0) {
      call->End(absl::Status(HttpStatusToGrpcCode(call->http_status_),
                             absl::StrCat("HTTP status ", call->http_status_,
                                          " with no grpc-status")));
      return;
    }
    Violation(call, absl::InternalError("server ended the stream without grpc-status"));
  }

  static int OnFrameRecv(nghttp2_session* s, const nghttp2_frame* frame, void* user_data) {
    Http2Connection* conn = Conn(user_data);
    conn->OnFrameReceived();
    switch (frame->hd.type) {
      case NGHTTP2_SETTINGS:
        if (!(frame->hd.flags & NGHTTP2_FLAG_ACK)) {
          conn->settings_received_ = true;
          conn->settings_event_->Set();
        }
        break;
      case NGHTTP2_GOAWAY: {
        conn->draining_ = true;
        int32_t last = frame->goaway.last_stream_id;
        std::vector<Call*> refused;
        for (auto& [id, call] : conn->calls_) {
          if (id > last) refused.push_back(call);
        }
        for (Call* call : refused) {
          call->never_sent_ = true;
          call->End(absl::UnavailableError(
              "the server sent GOAWAY before processing this call (safe to retry)"));
        }
        break;
      }
      case NGHTTP2_HEADERS: {
        Call* call = CallOf(s, frame->hd.stream_id);
        if (call == nullptr || call->status_) break;
        if (call->in_trailers_) {
          FinishFromTrailers(call);
        } else {
          call->headers_received_ = true;
          if (call->http_status_ != 200) {
            call->End(absl::Status(HttpStatusToGrpcCode(call->http_status_),
                                   absl::StrCat("HTTP status ", call->http_status_)));
            conn->ResetStream(call, NGHTTP2_CANCEL);
          }
          call->read_event_.Set();
          call->state_event_.Set();
        }
        break;
      }
      case NGHTTP2_DATA: {
        Call* call = CallOf(s, frame->hd.stream_id);
        if (call != nullptr && !call->status_ && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
          call->remote_closed_ = true;
          Violation(call, absl::InternalError(
                              "server ended the stream without trailers (no grpc-status)"));
        }
        break;
      }
      default:
        break;
    }
    return 0;
  }

  static int OnDataChunk(nghttp2_session* s, uint8_t, int32_t stream_id,
                         const uint8_t* data, size_t len, void* user_data) {
    Call* call = CallOf(s, stream_id);
    Http2Connection* conn = Conn(user_data);
    if (call == nullptr || call->status_) {
      conn->Credit(stream_id, len);  // nobody will read it
      return 0;
    }
    call->decoder_.Feed(std::string_view(reinterpret_cast<const char*>(data), len));
    call->held_ += len;
    call->CreditConsumed();  // all but complete messages the reader has not taken
    if (!call->decoder_.error().ok()) {
      const absl::Status& e = call->decoder_.error();
      // Over our own limit is not the server's fault; bad framing is.
      if (e.code() == absl::StatusCode::kInternal) {
        Violation(call, e);
      } else {
        call->End(e);
      }
      Conn(user_data)->ResetStream(call, NGHTTP2_CANCEL);
      return 0;
    }
    call->read_event_.Set();
    return 0;
  }

  static int OnStreamClose(nghttp2_session* s, int32_t stream_id, uint32_t error_code,
                           void*) {
    Call* call = CallOf(s, stream_id);
    if (call == nullptr) return 0;
    if (!call->status_) {
      if (error_code == NGHTTP2_REFUSED_STREAM) {
        call->never_sent_ = true;
        call->End(absl::UnavailableError("stream refused by the server (safe to retry)"));
      } else if (error_code == NGHTTP2_CANCEL) {
        call->End(absl::CancelledError("stream cancelled by the server"));
      } else {
        call->End(absl::InternalError(absl::StrCat(
            "stream reset: ", nghttp2_http2_strerror(error_code),
            error_code == NGHTTP2_FLOW_CONTROL_ERROR ? " (the server sent past the window)" : "")));
      }
    }
    nghttp2_session_set_stream_user_data(s, stream_id, nullptr);
    call->stream_id_ = -call->stream_id_;  // closed: never reset again
    return 0;
  }

  // nghttp2 explains what it found wrong before it ends the session.
  static int OnError(nghttp2_session*, int, const char* msg, size_t len, void* user_data) {
    Conn(user_data)->last_protocol_error_.assign(msg, len);
    return 0;
  }

  static int OnFrameSend(nghttp2_session*, const nghttp2_frame* frame, void* user_data) {
    Http2Connection* conn = Conn(user_data);
    if (frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS) {
      conn->pings_without_data_ = 0;
      if (frame->hd.type == NGHTTP2_HEADERS) conn->batch_has_headers_ = true;
    } else if (frame->hd.type == NGHTTP2_GOAWAY && frame->goaway.error_code != NGHTTP2_NO_ERROR) {
      // nghttp2 found a connection error in what the server sent and ended
      // the session with this GOAWAY; the write loop closes once it is out.
      conn->local_goaway_ = absl::UnavailableError(absl::StrCat(
          "HTTP/2 protocol error from ", conn->address_.ToString(), ": ",
          nghttp2_http2_strerror(frame->goaway.error_code),
          conn->last_protocol_error_.empty() ? "" : " (",
          conn->last_protocol_error_, conn->last_protocol_error_.empty() ? "" : ")"));
    }
    return 0;
  }

  static ssize_t ReadData(nghttp2_session* s, int32_t stream_id, uint8_t* buf,
                          size_t length, uint32_t* flags, nghttp2_data_source*, void*) {
    Call* call = CallOf(s, stream_id);
    if (call == nullptr) {  // its Call is gone; the stream is being reset
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      return 0;
    }
    size_t avail = call->out_.size() - call->out_offset_;
    if (avail == 0) {
      if (call->writes_done_) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        return 0;
      }
      call->data_deferred_ = true;
      return NGHTTP2_ERR_DEFERRED;
    }
    size_t n = std::min(length, avail);
    std::memcpy(buf, call->out_.data() + call->out_offset_, n);
    call->out_offset_ += n;
    if (call->out_offset_ == call->out_.size()) {
      call->out_.clear();
      call->out_offset_ = 0;
      if (call->writes_done_) *flags |= NGHTTP2_DATA_FLAG_EOF;
    } else if (call->out_offset_ > (1u << 20)) {
      call->out_.erase(0, call->out_offset_);
      call->out_offset_ = 0;
    }
    if (call->out_.size() - call->out_offset_ <= kWriteHighWater) call->write_event_.Set();
    return static_cast<ssize_t>(n);
  }
};

// ---- keepalive ---------------------------------------------------------------

class Http2Connection::KeepaliveTimer final : public TimerCallback {
 public:
  explicit KeepaliveTimer(Http2Connection* conn) : conn_(conn) { SchedulePing(); }
  ~KeepaliveTimer() {
    if (id_ != 0) conn_->loop_->CancelTimer(id_);
  }
  bool watching() const { return watching_; }
  // Any frame from the peer proves it alive.
  void OnFrame() {
    if (!watching_) return;
    conn_->loop_->CancelTimer(id_);
    SchedulePing();
  }

 private:
  void SchedulePing() {
    watching_ = false;
    id_ = conn_->loop_->ScheduleTimer(conn_->loop_->Now() + *conn_->options_.keepalive_time,
                                     this);
  }
  void OnTimer() override {
    id_ = 0;
    const ConnectionOptions& o = conn_->options_;
    if (watching_) {
      conn_->Close(absl::UnavailableError(absl::StrCat(
          "keepalive timeout: no frame from the server within ", Ms(o.keepalive_timeout),
          " of a PING")));
      return;  // Close destroyed this timer
    }
    bool allowed = !conn_->calls_.empty() || o.keepalive_permit_without_calls;
    if (allowed && (o.max_pings_without_data == 0 ||
                    conn_->pings_without_data_ < o.max_pings_without_data)) {
      nghttp2_submit_ping(conn_->session_, NGHTTP2_FLAG_NONE, nullptr);
      ++conn_->stats_.pings_sent;
      ++conn_->pings_without_data_;
      conn_->Flush();
      watching_ = true;
      id_ = conn_->loop_->ScheduleTimer(conn_->loop_->Now() + o.keepalive_timeout, this);
      return;
    }
    SchedulePing();
  }

  Http2Connection* conn_;
  uint64_t id_ = 0;
  bool watching_ = false;
};

// ---- connection --------------------------------------------------------------

Http2Connection::Http2Connection(EventLoop& loop, Address address,
                                 ConnectionOptions options, int fd)
    : loop_(&loop),
      address_(address),
      options_(std::move(options)),
      fd_(fd) {
  flush_event_.emplace(loop);
  settings_event_.emplace(loop);
}

Http2Connection::~Http2Connection() {
  keepalive_.reset();
  reader_.Reset();  // cancels the receive in flight
  writer_.Reset();
  if (session_ != nullptr) nghttp2_session_del(session_);
  if (loop_ != nullptr) {
    loop_->Close(fd_);
  } else {
    ::close(fd_);  // detached (parked): no loop watches it
  }
}

absl::Status Http2Connection::InitSession() {
  nghttp2_session_callbacks* cbs;
  nghttp2_session_callbacks_new(&cbs);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, Callbacks::OnBeginHeaders);
  nghttp2_session_callbacks_set_on_begin_frame_callback(cbs, Callbacks::OnBeginFrame);
  nghttp2_session_callbacks_set_on_header_callback(cbs, Callbacks::OnHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, Callbacks::OnFrameRecv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, Callbacks::OnDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, Callbacks::OnStreamClose);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, Callbacks::OnFrameSend);
  nghttp2_session_callbacks_set_error_callback2(cbs, Callbacks::OnError);
  nghttp2_option* opt;
  nghttp2_option_new(&opt);
  nghttp2_option_set_no_closed_streams(opt, 1);
  // Flow control follows the reader: a stream's window reopens only as the
  // application takes its messages (Call::CreditConsumed), so a server
  // cannot make a slow reader buffer without bound.
  nghttp2_option_set_no_auto_window_update(opt, 1);
  int rv = nghttp2_session_client_new2(&session_, cbs, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);
  if (rv != 0) {
    return absl::InternalError(absl::StrCat("nghttp2_session_client_new2: ", nghttp2_strerror(rv)));
  }
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kStreamWindow},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, options_.max_metadata_size},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, iv, 3);
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, kConnectionWindow);
  return absl::OkStatus();
}

Task<absl::StatusOr<std::shared_ptr<Http2Connection>>> Http2Connection::Connect(
    EventLoop& loop, Address address, ConnectionOptions options) {
  const TimePoint start = loop.Now();
  const std::string where = address.ToString();
  int fd = ::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    co_return absl::UnavailableError(
        absl::StrCat("socket for ", where, ": ", std::strerror(errno)));
  }
  if (address.family() != AF_UNIX) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  // The socket is this frame's until Adopt takes it: a caller that gives
  // up (its deadline) destroys the frame mid-connect, and the socket must
  // close with it (the fault suite found one left ESTABLISHED).
  struct SocketGuard {
    EventLoop& loop;
    int fd;
    ~SocketGuard() {
      if (fd >= 0) loop.Close(fd);
    }
  } guard{loop, fd};
  auto dial = [](EventLoop& loop, int fd, Address a) -> Task<int> {
    runtime::IoResult r = co_await loop.Connect(fd, a.sockaddr_ptr(), a.len);
    co_return r.res;
  };
  std::optional<int> res = co_await runtime::WithTimeout<int>(
      loop, dial(loop, fd, address), options.connect_timeout);
  if (!res || *res < 0) {
    co_return absl::UnavailableError(
        !res ? absl::StrCat("connect to ", where, " timed out after ",
                            Ms(options.connect_timeout))
             : absl::StrCat("connect to ", where, ": ", std::strerror(-*res)));
  }
  std::unique_ptr<TlsSession> tls;
  if (options.tls) {
    absl::StatusOr<std::unique_ptr<TlsSession>> session = TlsSession::New(*options.tls);
    if (!session.ok()) co_return session.status();
    Duration left = options.connect_timeout - (loop.Now() - start);
    std::optional<absl::Status> shaken = co_await runtime::WithTimeout<absl::Status>(
        loop, TlsHandshake(loop, fd, session->get(), where),
        std::max(left, Duration(std::chrono::milliseconds(1))));
    if (!shaken) {
      co_return absl::UnavailableError(absl::StrCat("TLS handshake with ", where,
                                                    " timed out after ",
                                                    Ms(options.connect_timeout)));
    }
    if (!shaken->ok()) co_return *shaken;
    tls = std::move(*session);
  }
  guard.fd = -1;  // Adopt owns it from here, even when it fails
  absl::StatusOr<std::shared_ptr<Http2Connection>> adopted =
      Adopt(loop, fd, address, std::move(options), std::move(tls));
  if (!adopted.ok()) co_return adopted.status();
  std::shared_ptr<Http2Connection> conn = std::move(*adopted);

  // The server's SETTINGS prove it speaks HTTP/2 (and end the backoff,
  // gRPC's connection-backoff spec).
  auto settings = [](Http2Connection* c) -> Task<int> {
    while (!c->settings_received_ && c->closed_.ok()) co_await c->settings_event_->Wait();
    co_return 0;
  };
  Duration left = conn->options_.connect_timeout - (loop.Now() - start);
  std::optional<int> got = co_await runtime::WithTimeout<int>(
      loop, settings(conn.get()), std::max(left, Duration(std::chrono::milliseconds(1))));
  if (!conn->closed_.ok()) co_return conn->closed_;
  if (!got) {
    absl::Status s = absl::UnavailableError(absl::StrCat(
        "no HTTP/2 SETTINGS from ", where, " within ",
        Ms(conn->options_.connect_timeout), " (is it an HTTP/2 server?)"));
    conn->Close(s);
    co_return s;
  }
  if (conn->options_.keepalive_time) {
    conn->keepalive_ = std::make_unique<KeepaliveTimer>(conn.get());
  }
  co_return conn;
}

Task<absl::Status> Http2Connection::TlsHandshake(EventLoop& loop, int fd, TlsSession* tls,
                                                 std::string where) {
  std::vector<uint8_t> in(16 << 10), out;
  for (;;) {
    absl::StatusOr<bool> done = tls->Handshake();
    out.clear();
    tls->TakeCiphertext(&out);  // a ClientHello, a Finished, or an alert
    for (size_t off = 0; off < out.size();) {
      runtime::IoResult r = co_await loop.Send(fd, std::move(out), off);
      out = std::move(r.buf);
      if (r.res < 0) {
        co_return absl::UnavailableError(
            absl::StrCat("TLS handshake with ", where, ": send: ", std::strerror(-r.res)));
      }
      off += r.res;
    }
    if (!done.ok()) {
      co_return absl::UnavailableError(absl::StrCat(done.status().message(), " (", where, ")"));
    }
    if (*done) break;
    runtime::IoResult r = co_await loop.Recv(fd, std::move(in));
    in = std::move(r.buf);
    if (r.res <= 0) {
      co_return absl::UnavailableError(absl::StrCat(
          "TLS handshake with ", where, ": the connection closed (is it a TLS server?)"));
    }
    tls->FeedCiphertext(in.data(), r.res);
  }
  if (tls->alpn() != "h2") {
    co_return absl::UnavailableError(absl::StrCat(
        "TLS server ", where, " did not choose HTTP/2 by ALPN (it chose \"", tls->alpn(), "\")"));
  }
  co_return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Http2Connection>> Http2Connection::Adopt(
    EventLoop& loop, int fd, Address address, ConnectionOptions options,
    std::unique_ptr<TlsSession> tls) {
  std::shared_ptr<Http2Connection> conn(
      new Http2Connection(loop, address, std::move(options), fd));
  conn->tls_ = std::move(tls);
  if (absl::Status s = conn->InitSession(); !s.ok()) return s;
  conn->Start();
  return conn;
}

void Http2Connection::Distrust(const absl::Status& why) {
  if (draining_) return;
  draining_ = true;
  distrust_reason_ = why;
}

absl::Status Http2Connection::Ingest(const uint8_t* data, size_t n) {
  if (preface_.size() < 9) {
    // nghttp2 skips frames of unknown type whatever their length, so a
    // non-HTTP/2 peer ("HTTP/1.1 400 ...") would look like one endless
    // frame. The server's preface must start with a SETTINGS frame.
    preface_.append(reinterpret_cast<const char*>(data), std::min<size_t>(9 - preface_.size(), n));
    if (preface_.size() == 9 && (preface_[3] != 4 || (preface_[4] & 1) != 0 ||
                                 (preface_[5] | preface_[6] | preface_[7] | preface_[8]) != 0)) {
      std::string shown;
      for (char c : preface_) shown.push_back(c >= 0x20 && c < 0x7f ? c : '.');
      return absl::UnavailableError(absl::StrCat(
          "HTTP/2 protocol error from ", address_.ToString(),
          ": the server did not start with SETTINGS (it sent \"", shown,
          "...\"; not an HTTP/2 server?)"));
    }
  }
  ssize_t rv = nghttp2_session_mem_recv(session_, data, n);
  if (rv < 0) {
    return absl::UnavailableError(absl::StrCat(
        "HTTP/2 protocol error from ", address_.ToString(), ": ",
        rv == NGHTTP2_ERR_CALLBACK_FAILURE && !last_protocol_error_.empty()
            ? last_protocol_error_
            : std::string(nghttp2_strerror(static_cast<int>(rv)))));
  }
  if (!nghttp2_session_want_read(session_)) {
    // nghttp2 found a connection error and ended the session (its GOAWAY
    // is queued): the server broke HTTP/2.
    return absl::UnavailableError(absl::StrCat(
        "HTTP/2 protocol error from ", address_.ToString(), ": ",
        last_protocol_error_.empty() ? "session terminated" : last_protocol_error_));
  }
  return absl::OkStatus();
}

absl::Status Http2Connection::RecvError(int res) const {
  return absl::UnavailableError(
      res == 0 ? absl::StrCat("connection to ", address_.ToString(), " closed by the server")
               : absl::StrCat("recv from ", address_.ToString(), ": ", std::strerror(-res)));
}

Task<void> Http2Connection::ReadLoop() {
  std::vector<uint8_t> buf(64 << 10);
  for (;;) {
    if (std::exchange(quiesce_, false) && calls_.empty()) {
      // Going quiet for the reservoir: wait for readability without taking
      // bytes, so the connection can be detached at any point of the wait.
      runtime::IoAwaitable poll = loop_->PollIn(fd_);
      polling_ = true;
      runtime::IoResult p = co_await poll;
      polling_ = false;
      if (p.res < 0 && p.res != -ECANCELED) {
        Close(RecvError(p.res));
        co_return;
      }
    }
    runtime::IoAwaitable recv = loop_->Recv(fd_, std::move(buf));
    recv_op_ = recv.op();
    runtime::IoResult r = co_await recv;
    recv_op_ = nullptr;
    buf = std::move(r.buf);
    if (r.res == -ECANCELED) continue;  // TryQuiesce() interrupted it
    if (r.res <= 0) {
      Close(RecvError(r.res));
      co_return;
    }
    if (tls_ != nullptr) {
      tls_->FeedCiphertext(buf.data(), r.res);
      plain_.clear();
      bool closed = false;
      absl::Status s = tls_->ReadPlaintext(&plain_, &closed);
      if (s.ok() && !plain_.empty()) {
        s = Ingest(reinterpret_cast<const uint8_t*>(plain_.data()), plain_.size());
      }
      if (s.ok() && closed) s = RecvError(0);
      if (!s.ok()) {
        Close(std::move(s));
        co_return;
      }
    } else if (absl::Status s = Ingest(buf.data(), r.res); !s.ok()) {
      Close(std::move(s));
      co_return;
    }
    Flush();  // acks, window updates, resets
  }
}

bool Http2Connection::Quiescent() const {
  // A TLS connection is never parked: its session state stays on its thread.
  return tls_ == nullptr && polling_ && !writing_ && calls_.empty() && closed_.ok() && !draining_ &&
         !nghttp2_session_want_write(session_) && !(keepalive_ && keepalive_->watching());
}

bool Http2Connection::TryQuiesce() {
  if (Quiescent()) return true;
  if (tls_ == nullptr && calls_.empty() && closed_.ok() && !draining_ && !quiesce_ &&
      recv_op_ != nullptr) {
    quiesce_ = true;
    loop_->Interrupt(recv_op_);
  }
  return false;
}

absl::StatusOr<DetachedConnection> Http2Connection::Detach(
    std::shared_ptr<Http2Connection> conn) {
  if (!conn->Quiescent()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "connection to ", conn->address_.ToString(),
        " is not quiescent (calls, a send or a PING in flight, or a receive armed)"));
  }
  if (conn.use_count() != 1) {
    return absl::FailedPreconditionError("connection is still referenced elsewhere");
  }
  conn->keepalive_.reset();
  conn->reader_.Reset();  // abandons the poll: it took no bytes
  conn->writer_.Reset();
  conn->flush_event_.reset();
  conn->settings_event_.reset();
  conn->loop_->Release(conn->fd_);
  conn->loop_ = nullptr;
  conn->polling_ = false;
  return DetachedConnection(std::move(conn));
}

absl::StatusOr<std::shared_ptr<Http2Connection>> Http2Connection::Attach(
    EventLoop& loop, DetachedConnection detached) {
  std::shared_ptr<Http2Connection> conn = std::move(detached.conn_);
  if (conn == nullptr) return absl::InvalidArgumentError("attach of an empty connection");
  conn->loop_ = &loop;
  conn->flush_event_.emplace(loop);
  conn->settings_event_.emplace(loop);
  // First whatever arrived while parked: PINGs, SETTINGS, a GOAWAY, EOF.
  absl::Status failed;
  std::vector<uint8_t> buf(64 << 10);
  while (failed.ok()) {
    ssize_t n = ::recv(conn->fd_, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    failed = n <= 0 ? conn->RecvError(n < 0 ? -errno : 0)
                    : conn->Ingest(buf.data(), static_cast<size_t>(n));
  }
  if (conn->draining_) {  // the clearer cause, even if the socket closed after it
    failed = absl::UnavailableError(absl::StrCat(
        "connection to ", conn->address_.ToString(), " got GOAWAY while parked"));
  }
  if (!failed.ok()) {
    conn->Close(failed);
    return failed;
  }
  conn->Start();
  if (conn->options_.keepalive_time) {
    conn->keepalive_ = std::make_unique<KeepaliveTimer>(conn.get());
  }
  return conn;
}

void Http2Connection::Start() {
  reader_ = ReadLoop();
  writer_ = WriteLoop();
  reader_.handle().resume();
  writer_.handle().resume();
  Flush();
}

// Sends up to this size may be quiet: small enough that the socket takes
// them whole at once on any kernel.
constexpr size_t kQuietSendMax = 16 << 10;

Task<void> Http2Connection::WriteLoop() {
  std::vector<uint8_t> out;
  for (;;) {
    co_await flush_event_->Wait();
    if (!closed_.ok()) continue;
    out.clear();
    for (;;) {
      const uint8_t* data = nullptr;
      ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) {
        Close(absl::InternalError(absl::StrCat("nghttp2_session_mem_send: ",
                                               nghttp2_strerror(static_cast<int>(n)))));
        break;
      }
      if (n == 0) break;
      out.insert(out.end(), data, data + n);
    }
    if (tls_ != nullptr && closed_.ok()) {
      if (absl::Status st = tls_->WritePlaintext(out.data(), out.size()); !st.ok()) {
        Close(std::move(st));
        continue;
      }
      out.clear();
      tls_->TakeCiphertext(&out);  // also what reading produced (key updates)
    }
    size_t off = 0;
    while (off < out.size() && closed_.ok()) {
      writing_ = true;
      runtime::IoAwaitable send = loop_->Send(fd_, std::move(out), off);
      send_op_ = send.op();
      // Quiet when all that is pending went into this (small) send and a
      // call awaits a reply: the reply, not the send, is what wakes us.
      loop_->SetQuiet(send_op_, send_op_->buf.size() - off <= kQuietSendMax &&
                                    !calls_.empty() && !nghttp2_session_want_write(session_));
      runtime::IoResult r = co_await send;
      send_op_ = nullptr;
      writing_ = false;
      out = std::move(r.buf);
      ++stats_.sends;
      if (r.res < 0) {
        Close(absl::UnavailableError(absl::StrCat("send to ", address_.ToString(), ": ",
                                                  std::strerror(-r.res))));
        break;
      }
      off += r.res;
    }
    if (batch_has_headers_ && !out.empty()) ++stats_.sends_with_headers;
    batch_has_headers_ = false;
    if (!local_goaway_.ok()) Close(local_goaway_);
  }
}

void Http2Connection::OnFrameReceived() {
  ++stats_.frames_received;
  if (keepalive_) keepalive_->OnFrame();
}

uint32_t Http2Connection::max_concurrent_streams() const {
  uint32_t peer = session_ ? nghttp2_session_get_remote_settings(
                                 session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
                           : 100;
  return std::min(peer, options_.max_concurrent_streams);
}

absl::StatusOr<std::unique_ptr<Call>> Http2Connection::StartCall(CallOptions options) {
  if (!closed_.ok()) {
    return absl::UnavailableError(absl::StrCat("connection closed: ", closed_.message()));
  }
  if (draining_) {
    return absl::UnavailableError(
        distrust_reason_.ok()
            ? std::string("connection is draining after GOAWAY: no new calls")
            : absl::StrCat("connection retired after a protocol violation by the server: ",
                           distrust_reason_.message()));
  }
  if (calls_.size() >= max_concurrent_streams()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "connection at its stream limit (", max_concurrent_streams(), ")"));
  }
  if (options.path.empty() || options.path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        "method path \"", std::string(options.path), "\" must look like /package.Service/Method"));
  }
  if (absl::Status s = ValidateMetadata(options.metadata); !s.ok()) return s;
  {
    // What the server will accept (SETTINGS_MAX_HEADER_LIST_SIZE, counted
    // as RFC 7541 does) and what nghttp2 will send: over either, the call
    // can never succeed, so it fails here and is not retried.
    size_t list = 0, block = 0;
    for (const auto& [k, v] : options.metadata) {
      size_t value = IsBinaryHeader(k) ? (v.size() + 2) / 3 * 4 : v.size();
      list += k.size() + value + 32;
      block += k.size() + value + 2;
    }
    const size_t fixed = options.path.size() + options_.authority.size() + 256;
    const uint32_t peer = session_ ? nghttp2_session_get_remote_settings(
                                         session_, NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE)
                                   : UINT32_MAX;
    if (list + fixed > peer || block + fixed > kMaxSendHeaderBlock) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "request metadata of ", list, " bytes is over the limit of ",
          std::min<size_t>(peer, kMaxSendHeaderBlock),
          list + fixed > peer ? " bytes the server accepts (SETTINGS_MAX_HEADER_LIST_SIZE)"
                              : " bytes of one HTTP/2 header block"));
    }
  }

  std::string timeout;
  absl::InlinedVector<nghttp2_nv, 12> nva = {
      Header(":method", "POST"),
      Header(":scheme", options_.scheme),
      Header(":path", options.path),
      Header(":authority", options_.authority),
      Header("te", "trailers"),
      Header("content-type", "application/grpc"),
      Header("user-agent", options_.user_agent),
  };
  if (options.deadline) {
    timeout = EncodeGrpcTimeout(*options.deadline - loop_->Now());
    nva.push_back(Header("grpc-timeout", timeout));
  }
  std::vector<std::string> encoded;  // keeps base64 values alive for submit
  encoded.reserve(options.metadata.size());
  for (const auto& [k, v] : options.metadata) {
    if (IsBinaryHeader(k)) {
      encoded.push_back(EncodeBinaryHeader(v));
      nva.push_back(Header(k, encoded.back()));
    } else {
      nva.push_back(Header(k, v));
    }
  }

  std::unique_ptr<Call> call(new Call(shared_from_this(), options_.max_receive_message_size));
  nghttp2_data_provider provider;
  provider.source.ptr = call.get();
  provider.read_callback = Callbacks::ReadData;
  int32_t id = nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), &provider,
                                      call.get());
  if (id < 0) {
    call->stream_id_ = 0;
    call->End(absl::InternalError(absl::StrCat("nghttp2_submit_request: ", nghttp2_strerror(id))));
    return call->status_.value();
  }
  call->stream_id_ = id;
  calls_.emplace(id, call.get());
  ++stats_.streams_started;
  if (options.deadline) {
    if (*options.deadline <= loop_->Now()) {
      call->End(absl::DeadlineExceededError("deadline exceeded before the call started"));
      ResetStream(call.get(), NGHTTP2_CANCEL);
    } else {
      call->deadline_ = std::make_unique<Call::DeadlineTimer>(call.get(), *options.deadline);
    }
  }
  Flush();
  return call;
}

void Http2Connection::ResetStream(Call* call, uint32_t error_code) {
  int32_t id = call->stream_id_;
  // Once per stream: a second RST for a stream whose HEADERS were cancelled
  // while queued would go out as an RST_STREAM for an idle stream (a
  // connection error for the server).
  if (id <= 0 || session_ == nullptr || call->reset_) return;
  call->reset_ = true;
  // A stream whose HEADERS nghttp2 has not written yet is not in its stream
  // map (find_stream says NULL), but nghttp2_submit_rst_stream cancels the
  // queued HEADERS: the stream then closes without reaching the wire, and
  // its DATA is never asked for.
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, error_code);
  Flush();
}

void Http2Connection::Credit(int32_t stream_id, size_t n) {
  if (n == 0 || session_ == nullptr || !closed_.ok()) return;
  nghttp2_session_consume_connection(session_, n);
  if (stream_id > 0 && nghttp2_session_find_stream(session_, stream_id) != nullptr) {
    nghttp2_session_consume_stream(session_, stream_id, n);
  }
  // nghttp2 queues a WINDOW_UPDATE once half a window is consumed; only
  // then is there something to send (not once per message read).
  if (nghttp2_session_want_write(session_)) Flush();
}

void Http2Connection::ForgetCall(Call* call) {
  int32_t id = call->stream_id_ < 0 ? -call->stream_id_ : call->stream_id_;
  if (id == 0) return;
  Credit(id, std::exchange(call->held_, 0));  // messages never read
  calls_.erase(id);
  // Unconditionally: for a stream still queued (HEADERS not yet written)
  // find_stream says NULL, yet nghttp2 keeps the pointer with the queued
  // HEADERS and would hand it to ReadData and every other callback once the
  // stream opens: a freed Call, or another call's at the same address. Set
  // on a queued stream updates the queued HEADERS; on a stream that is gone
  // it fails harmlessly (INVALID_ARGUMENT).
  if (session_ != nullptr && call->stream_id_ > 0) {
    nghttp2_session_set_stream_user_data(session_, id, nullptr);
  }
}

void Http2Connection::Close(absl::Status reason) {
  if (!closed_.ok()) return;
  closed_ = std::move(reason);
  keepalive_.reset();
  std::vector<Call*> calls;
  for (auto& [id, call] : calls_) calls.push_back(call);
  for (Call* call : calls) call->End(closed_);
  ::shutdown(fd_, SHUT_RDWR);
  settings_event_->Set();
}

}  // namespace ringrpc::transport
