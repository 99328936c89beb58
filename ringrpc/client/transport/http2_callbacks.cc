#include "ringrpc/client/transport/internal/http2_callbacks.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "ringrpc/client/transport/grpc_wire.h"
#include "ringrpc/client/transport/internal/send_batch.h"
#include "ringrpc/client/transport/metadata.h"

namespace ringrpc::transport {
namespace {

constexpr int kMaxContinuations = 64;

}  // namespace

void Http2Connection::Callbacks::Install(nghttp2_session_callbacks* cbs) {
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, OnBeginHeaders);
  nghttp2_session_callbacks_set_on_begin_frame_callback(cbs, OnBeginFrame);
  nghttp2_session_callbacks_set_on_header_callback(cbs, OnHeader);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, OnFrameRecv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, OnDataChunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, OnStreamClose);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, OnFrameSend);
  nghttp2_session_callbacks_set_error_callback2(cbs, OnError);
  nghttp2_session_callbacks_set_send_data_callback(cbs, SendData);
}

Http2Connection* Http2Connection::Callbacks::Conn(void* user_data) {
  return static_cast<Http2Connection*>(user_data);
}

Call* Http2Connection::Callbacks::CallOf(nghttp2_session* s, int32_t stream_id) {
  return static_cast<Call*>(nghttp2_session_get_stream_user_data(s, stream_id));
}

// nghttp2 1.52 predates the CONTINUATION-flood fix (CVE-2024-28182):
// it would decode CONTINUATION frames of one header block for as long as
// the server sends them. A header block longer than 64 frames (1 MiB at
// the default frame size, far over max_metadata_size) ends the session.
int Http2Connection::Callbacks::OnBeginFrame(nghttp2_session*, const nghttp2_frame_hd* hd,
                                             void* user_data) {
  Http2Connection* conn = Conn(user_data);
  if (hd->type == NGHTTP2_HEADERS) {
    conn->continuations_ = 0;
  } else if (hd->type == NGHTTP2_CONTINUATION && ++conn->continuations_ > kMaxContinuations) {
    conn->last_protocol_error_ =
        absl::StrCat("more than ", kMaxContinuations, " CONTINUATION frames in one header block");
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  return 0;
}

int Http2Connection::Callbacks::OnBeginHeaders(nghttp2_session* s, const nghttp2_frame* frame,
                                               void*) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  Call* call = CallOf(s, frame->hd.stream_id);
  if (call == nullptr) return 0;
  // A block that ends the stream is trailers (or trailers-only).
  call->in_trailers_ =
      frame->headers.cat == NGHTTP2_HCAT_HEADERS || (frame->hd.flags & NGHTTP2_FLAG_END_STREAM);
  call->header_bytes_ = 0;
  return 0;
}

int Http2Connection::Callbacks::OnHeader(nghttp2_session* s, const nghttp2_frame* frame,
                                         const uint8_t* name, size_t namelen, const uint8_t* value,
                                         size_t valuelen, uint8_t, void* user_data) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  Call* call = CallOf(s, frame->hd.stream_id);
  if (call == nullptr || call->status_) return 0;
  Http2Connection* conn = Conn(user_data);
  call->header_bytes_ += namelen + valuelen + 32;
  if (call->header_bytes_ > conn->options_.max_metadata_size) {
    call->End(
        absl::ResourceExhaustedError(absl::StrCat("received metadata larger than the limit of ",
                                                  conn->options_.max_metadata_size, " bytes")));
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
          "the server answered with content-type \"",
          absl::CHexEscape(absl::string_view(v.data(), v.size())), "\", not application/grpc")));
      return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // nghttp2 resets the
                                                     // stream
    }
  } else if (k == "grpc-encoding") {
    if (!call->in_trailers_) call->response_encoding_ = std::string(v);
  } else if (k == "grpc-status-details-bin") {
    absl::StatusOr<std::string> d = DecodeBinaryHeader(v);
    if (d.ok()) call->details_ = std::move(*d);
  } else if (!k.empty() && k[0] != ':' && k != "grpc-accept-encoding") {
    std::string decoded(v);
    if (IsBinaryHeader(k)) {
      absl::StatusOr<std::string> d = DecodeBinaryHeader(v);
      if (!d.ok()) {
        Violation(call, absl::InternalError(absl::StrCat("malformed base64 in metadata \"",
                                                         std::string(k), "\" from the server")));
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
void Http2Connection::Callbacks::Violation(Call* call, absl::Status status) {
  call->conn_->Distrust(status);
  call->End(std::move(status));
}

void Http2Connection::Callbacks::FinishFromTrailers(Call* call) {
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
    call->End(
        absl::Status(HttpStatusToGrpcCode(call->http_status_),
                     absl::StrCat("HTTP status ", call->http_status_, " with no grpc-status")));
    return;
  }
  Violation(call, absl::InternalError("server ended the stream without grpc-status"));
}

int Http2Connection::Callbacks::OnFrameRecv(nghttp2_session* s, const nghttp2_frame* frame,
                                            void* user_data) {
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
      conn->goaway_code_ = frame->goaway.error_code;
      conn->goaway_debug_.assign(reinterpret_cast<const char*>(frame->goaway.opaque_data),
                                 frame->goaway.opaque_data_len);
      int32_t last = frame->goaway.last_stream_id;
      std::vector<Call*> refused;
      for (auto& [id, call] : conn->calls_) {
        if (id > last) refused.push_back(call);
      }
      for (Call* call : refused) {
        call->never_sent_ = true;
        call->End(
            absl::UnavailableError("the server sent GOAWAY before processing "
                                   "this call (safe to retry)"));
      }
      conn->Lost(absl::UnavailableError(absl::StrCat(
          "GOAWAY ", nghttp2_http2_strerror(conn->goaway_code_),
          conn->goaway_debug_.empty() ? "" : " ", absl::CHexEscape(conn->goaway_debug_))));
      break;
    }
    case NGHTTP2_HEADERS: {
      Call* call = CallOf(s, frame->hd.stream_id);
      if (call == nullptr || call->status_) break;
      if (call->in_trailers_) {
        FinishFromTrailers(call);
      } else {
        call->headers_received_ = true;
        call->initial_metadata_received_ = true;
        if (call->http_status_ != 200) {
          call->End(absl::Status(HttpStatusToGrpcCode(call->http_status_),
                                 absl::StrCat("HTTP status ", call->http_status_)));
          conn->ResetStream(call, NGHTTP2_CANCEL);
        }
        call->read_event_.Set();
        call->state_event_.Set();
        if (call->progress_event_ != nullptr) call->progress_event_->Set();
      }
      break;
    }
    case NGHTTP2_DATA: {
      Call* call = CallOf(s, frame->hd.stream_id);
      if (call != nullptr && !call->status_ && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
        call->remote_closed_ = true;
        Violation(call,
                  absl::InternalError("server ended the stream without trailers (no grpc-status)"));
      }
      break;
    }
    default:
      break;
  }
  return 0;
}

int Http2Connection::Callbacks::OnDataChunk(nghttp2_session* s, uint8_t, int32_t stream_id,
                                            const uint8_t* data, size_t len, void* user_data) {
  Call* call = CallOf(s, stream_id);
  Http2Connection* conn = Conn(user_data);
  if (call == nullptr || call->status_) {
    conn->Credit(stream_id, len);  // nobody will read it
    return 0;
  }
  call->decoder_.Feed(std::string_view(reinterpret_cast<const char*>(data), len),
                      conn->recv_block_ ? &conn->recv_block_ : nullptr);
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

int Http2Connection::Callbacks::OnStreamClose(nghttp2_session* s, int32_t stream_id,
                                              uint32_t error_code, void*) {
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
int Http2Connection::Callbacks::OnError(nghttp2_session*, int, const char* msg, size_t len,
                                        void* user_data) {
  Conn(user_data)->last_protocol_error_.assign(msg, len);
  return 0;
}

int Http2Connection::Callbacks::OnFrameSend(nghttp2_session*, const nghttp2_frame* frame,
                                            void* user_data) {
  Http2Connection* conn = Conn(user_data);
  if (frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS) {
    if (conn->keepalive_) conn->keepalive_->OnDataSent();
    if (frame->hd.type == NGHTTP2_HEADERS) conn->batch_has_headers_ = true;
  } else if (frame->hd.type == NGHTTP2_GOAWAY && frame->goaway.error_code != NGHTTP2_NO_ERROR) {
    // nghttp2 found a connection error in what the server sent and ended
    // the session with this GOAWAY; the write loop closes once it is out.
    conn->local_goaway_ = absl::UnavailableError(
        absl::StrCat("HTTP/2 protocol error from ", conn->address_.ToString(), ": ",
                     nghttp2_http2_strerror(frame->goaway.error_code),
                     conn->last_protocol_error_.empty() ? "" : " (", conn->last_protocol_error_,
                     conn->last_protocol_error_.empty() ? "" : ")"));
  }
  return 0;
}

// How much of the call's queue the next DATA frame takes; the bytes
// themselves go into the write batch when nghttp2 sends the frame
// (SendData: NO_COPY), never through nghttp2's own buffer.
ssize_t Http2Connection::Callbacks::ReadData(nghttp2_session* s, int32_t stream_id, uint8_t*,
                                             size_t length, uint32_t* flags, nghttp2_data_source*,
                                             void*) {
  Call* call = CallOf(s, stream_id);
  if (call == nullptr) {  // its Call is gone; the stream is being reset
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    return 0;
  }
  if (call->out_bytes_ == 0) {
    if (call->writes_done_) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      return 0;
    }
    call->data_deferred_ = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  size_t n = std::min(length, call->out_bytes_);
  *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  if (n == call->out_bytes_ && call->writes_done_) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

// Called inside nghttp2_session_mem_send, in order with the bytes it
// returns: the frame header, then the call's next `length` bytes.
int Http2Connection::Callbacks::SendData(nghttp2_session* s, nghttp2_frame* frame,
                                         const uint8_t* framehd, size_t length,
                                         nghttp2_data_source*, void* user_data) {
  SendBatch& batch = Conn(user_data)->batch_;
  batch.Copy(framehd, 9);
  const size_t padlen = frame->data.padlen;  // never set by ringrpc
  if (padlen > 0) {
    const uint8_t pad_length = static_cast<uint8_t>(padlen - 1);
    batch.Copy(&pad_length, 1);
  }
  Call* call = CallOf(s, frame->hd.stream_id);
  if (call != nullptr && call->out_bytes_ >= length) {
    call->TakeOut(length, batch);
  } else {
    // Cannot happen (ReadData sized the frame from this queue); the frame
    // is already committed, so it is filled rather than left short.
    batch.Zeros(length);
  }
  if (padlen > 1) batch.Zeros(padlen - 1);
  return 0;
}

}  // namespace ringrpc::transport
