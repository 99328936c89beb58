#include "client/transport/call.h"

#include <nghttp2/nghttp2.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "client/transport/http2_connection.h"

namespace ringrpc::transport {

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

Call::Call(std::shared_ptr<Http2Connection> conn, uint32_t max_receive,
           std::optional<uint32_t> max_send, Compression send_compression, int send_level)
    : conn_(std::move(conn)),
      max_send_(max_send),
      send_compression_(send_compression),
      send_level_(send_level),
      max_receive_(max_receive),
      decoder_(max_receive),
      read_event_(*conn_->loop_),
      write_event_(*conn_->loop_),
      state_event_(*conn_->loop_) {}

Call::~Call() {
  if (!status_) End(absl::CancelledError("call destroyed before it ended"));
  conn_->ResetStream(this, NGHTTP2_CANCEL);
  conn_->ForgetCall(this);
}

void Call::StartDeadline(TimePoint deadline) {
  deadline_ = std::make_unique<DeadlineTimer>(this, deadline);
}

void Call::End(absl::Status status) {
  if (status_) return;
  status_ = std::move(status);
  deadline_.reset();
  Wake();
  if (end_observer_ != nullptr) end_observer_->OnCallEnd(*this);
}

void Call::Wake() {
  read_event_.Set();
  state_event_.Set();
  write_event_.Set();
}

Task<absl::Status> Call::Write(std::string_view message, bool compress) {
  // The bytes are framed into out_ now, before the task starts: the caller
  // may drop (or keep, for a retry) `message` as soon as this returns.
  return WaitForRoom(Enqueue(message, compress));
}

absl::Status Call::Enqueue(std::string_view message, bool compress) {
  if (status_) {
    return status_->ok()
               ? absl::FailedPreconditionError("Write after the call ended")
               : *status_;
  }
  if (writes_done_)
    return absl::FailedPreconditionError("Write after WritesDone");
  const std::optional<uint32_t>& max = max_send_;
  if (max && message.size() > *max) {
    absl::Status s = absl::ResourceExhaustedError(absl::StrCat(
        "sent message larger than max (", message.size(), " vs. ", *max, ")"));
    End(s);
    conn_->ResetStream(this, NGHTTP2_CANCEL);
    return s;
  }
  const size_t framed_before = out_.size();
  if (compress && send_compression_ != Compression::kIdentity) {
    // Compressed straight into out_ behind a prefix written afterwards; kept
    // only if it is smaller (gRPC's rule: the flag is per message).
    const size_t at = out_.size();
    out_.append(5, '\0');
    absl::Status s = Compress(send_compression_, send_level_, message, out_);
    if (s.ok() && out_.size() - at - 5 < message.size()) {
      WriteMessagePrefix(out_, at, static_cast<uint32_t>(out_.size() - at - 5), true);
    } else {
      out_.resize(at);
      AppendFramedMessage(out_, message);
    }
  } else {
    AppendFramedMessage(out_, message);
  }
  sent_message_bytes_ += out_.size() - framed_before - 5;
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
    if (std::optional<ReceivedMessage> m = decoder_.Next()) {
      CreditConsumed();  // the reader took it: the server may send more
      if (!m->compressed) co_return std::move(m->bytes);
      absl::StatusOr<std::string> plain = Inflate(m->bytes);
      if (plain.ok()) co_return std::move(*plain);
      // The server may have ended the call OK before this message was read:
      // a response the client cannot decode still fails the call.
      if (status_ && status_->ok()) status_ = plain.status();
      End(plain.status());
      conn_->ResetStream(this, NGHTTP2_CANCEL);
      co_return std::nullopt;
    }
    if (status_ || remote_closed_) co_return std::nullopt;
    co_await read_event_.Wait();
  }
}

absl::StatusOr<std::string> Call::Inflate(std::string_view bytes) const {
  if (response_encoding_.empty() || response_encoding_ == "identity") {
    return absl::InternalError(absl::StrCat(
        "the server sent a compressed message without naming its grpc-encoding (",
        response_encoding_.empty() ? "none" : "identity", ")"));
  }
  std::optional<Compression> c = ParseCompression(response_encoding_);
  if (!c) {
    return absl::InternalError(absl::StrCat(
        "the server compressed a message with \"", response_encoding_,
        "\", which the client did not offer (grpc-accept-encoding: ", kAcceptEncoding, ")"));
  }
  return Decompress(*c, bytes, max_receive_);
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

}  // namespace ringrpc::transport
