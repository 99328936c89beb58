// A connection's streams: whether it takes a call, a call's request
// HEADERS, resets, flow-control credit, and forgetting a call that ended.
// Loop thread only, as all of Http2Connection.
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "ringrpc/client/transport/http2_connection.h"
#include "ringrpc/client/transport/internal/http2_callbacks.h"
#include "ringrpc/client/transport/metadata.h"

namespace ringrpc::transport {
namespace {

nghttp2_nv Header(std::string_view name, std::string_view value) {
  return nghttp2_nv{const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(name.data())),
                    const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(value.data())),
                    name.size(), value.size(), NGHTTP2_NV_FLAG_NONE};
}

}  // namespace

uint32_t Http2Connection::max_concurrent_streams() const {
  uint32_t peer = session_ ? nghttp2_session_get_remote_settings(
                                 session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
                           : 100;
  return std::min(peer, options_.max_concurrent_streams);
}

absl::Status Http2Connection::CheckAcceptingCall(std::string_view path) const {
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
    return absl::ResourceExhaustedError(
        absl::StrCat("connection at its stream limit (", max_concurrent_streams(), ")"));
  }
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat("method path \"", std::string(path),
                                                   "\" must look like /package.Service/Method"));
  }
  return absl::OkStatus();
}

std::unique_ptr<Call> Http2Connection::NewCall(const CallOptions& options) {
  // The smaller of the connection's and the call's limits.
  const uint32_t max_receive = std::min(options_.max_receive_message_size,
                                        options.max_receive_message_size.value_or(UINT32_MAX));
  std::optional<uint32_t> max_send = options_.max_send_message_size;
  if (options.max_send_message_size) {
    max_send = std::min(max_send.value_or(UINT32_MAX), *options.max_send_message_size);
  }
  return std::unique_ptr<Call>(new Call(shared_from_this(), max_receive, max_send,
                                        options.compression, options.compression_level));
}

absl::StatusOr<std::unique_ptr<Call>> Http2Connection::StartCall(CallOptions options) {
  if (absl::Status s = CheckAcceptingCall(options.path); !s.ok()) return s;
  if (absl::Status s = ValidateMetadata(options.metadata); !s.ok()) return s;
  const uint32_t peer_limit = session_ ? nghttp2_session_get_remote_settings(
                                             session_, NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE)
                                       : UINT32_MAX;
  if (absl::Status s = CheckRequestHeaderSize(
          options.metadata,
          options.path.size() + std::max(options_.authority.size(), options.authority.size()),
          peer_limit);
      !s.ok()) {
    return s;
  }

  std::string timeout;
  absl::InlinedVector<nghttp2_nv, 12> nva = {
      Header(":method", "POST"),
      Header(":scheme", options_.scheme),
      Header(":path", options.path),
      Header(":authority", options.authority.empty() ? options_.authority : options.authority),
      Header("te", "trailers"),
      Header("content-type", "application/grpc"),
      Header("user-agent", options_.user_agent),
      Header("grpc-accept-encoding", kAcceptEncoding),
  };
  if (options.compression != Compression::kIdentity) {
    nva.push_back(Header("grpc-encoding", CompressionName(options.compression)));
  }
  if (options.deadline) {
    timeout = EncodeGrpcTimeout(*options.deadline - loop_->Now());
    nva.push_back(Header("grpc-timeout", timeout));
  }
  std::string previous;
  if (options.previous_attempts > 0) {
    previous = std::to_string(options.previous_attempts);
    nva.push_back(Header("grpc-previous-rpc-attempts", previous));
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

  std::unique_ptr<Call> call = NewCall(options);
  nghttp2_data_provider provider;
  provider.source.ptr = call.get();
  provider.read_callback = Callbacks::ReadData;
  int32_t id =
      nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), &provider, call.get());
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
      call->StartDeadline(*options.deadline);
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

}  // namespace ringrpc::transport
