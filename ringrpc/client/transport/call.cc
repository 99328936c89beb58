#include "ringrpc/client/transport/call.h"

#include <nghttp2/nghttp2.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/transport/http2_connection.h"
#include "ringrpc/client/transport/internal/send_batch.h"

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
    // grpc++'s words for a call whose deadline passed, so code (and logs)
    // written against its messages read the same.
    call->End(absl::DeadlineExceededError("Deadline Exceeded"));
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
  if (progress_event_ != nullptr) progress_event_->Set();
}

Task<absl::Status> Call::Write(std::string_view message, bool compress) {
  // The bytes are framed into out_ now, before the task starts: the caller
  // may drop (or keep, for a retry) `message` as soon as this returns.
  return WaitForRoom(Enqueue(message, nullptr, compress));
}

Task<absl::Status> Call::Write(const OutgoingMessage& message, bool compress) {
  return WaitForRoom(Enqueue(message, compress));
}

absl::Status Call::Enqueue(std::string_view message, bool compress) {
  return Enqueue(message, nullptr, compress);
}

absl::Status Call::Enqueue(const OutgoingMessage& message, bool compress) {
  return Enqueue(message.bytes(), message.large() ? &message.large() : nullptr, compress);
}

std::string& Call::OwnTail() {
  if (out_.empty() || out_.back().held) out_.emplace_back();
  return out_.back().own;
}

absl::Status Call::Enqueue(std::string_view message, const std::shared_ptr<const std::string>* held,
                           bool compress) {
  if (status_) {
    return status_->ok() ? absl::FailedPreconditionError("Write after the call ended") : *status_;
  }
  if (writes_done_) return absl::FailedPreconditionError("Write after WritesDone");
  const std::optional<uint32_t>& max = max_send_;
  if (max && message.size() > *max) {
    absl::Status s = absl::ResourceExhaustedError(
        absl::StrCat("sent message larger than max (", message.size(), " vs. ", *max, ")"));
    End(s);
    conn_->ResetStream(this, NGHTTP2_CANCEL);
    return s;
  }
  size_t queued = 0;  // bytes added, prefix included
  bool framed = false;
  if (compress && send_compression_ != Compression::kIdentity) {
    // Compressed straight into the call's own bytes behind a prefix written
    // afterwards; kept only if it is smaller (gRPC's rule: the flag is per
    // message).
    std::string& own = OwnTail();
    const size_t at = own.size();
    own.append(5, '\0');
    absl::Status s = Compress(send_compression_, send_level_, message, own);
    if (s.ok() && own.size() - at - 5 < message.size()) {
      WriteMessagePrefix(own, at, static_cast<uint32_t>(own.size() - at - 5), true);
      queued = own.size() - at;
      framed = true;
    } else {
      own.resize(at);
    }
  }
  if (!framed && held != nullptr && message.size() >= kZeroCopyMin) {
    // The prefix is the call's own; the message is sent from where it is.
    std::string& own = OwnTail();
    const size_t at = own.size();
    own.append(5, '\0');
    WriteMessagePrefix(own, at, static_cast<uint32_t>(message.size()), false);
    out_.push_back(OutChunk{.held = *held});
    queued = 5 + message.size();
  } else if (!framed) {
    std::string& own = OwnTail();
    const size_t at = own.size();
    AppendFramedMessage(own, message);
    queued = own.size() - at;
  }
  out_bytes_ += queued;
  sent_message_bytes_ += queued - 5;
  if (data_deferred_) {
    data_deferred_ = false;
    nghttp2_session_resume_data(conn_->session_, stream_id_);
  }
  conn_->Flush();
  return absl::OkStatus();
}

void Call::TakeOut(size_t n, SendBatch& batch) {
  while (n > 0 && !out_.empty()) {
    OutChunk& c = out_.front();
    if (c.rest().empty()) {  // an own chunk emptied and kept
      if (out_.size() == 1) break;
      out_.erase(out_.begin());
      continue;
    }
    std::string_view piece = c.rest().substr(0, n);
    if (c.held && piece.size() >= kZeroCopyMin) {
      batch.Hold(c.held, piece);
    } else {
      batch.Copy(piece.data(), piece.size());
    }
    c.at += piece.size();
    n -= piece.size();
    out_bytes_ -= piece.size();
    if (!c.rest().empty()) {
      if (!c.held && c.at > (1u << 20)) {  // a long stream of small writes
        c.own.erase(0, c.at);
        c.at = 0;
      }
    } else if (out_.size() == 1 && !c.held) {
      c.own.clear();  // kept with its capacity for the next message
      c.at = 0;
    } else {
      out_.erase(out_.begin());
    }
  }
  if (out_bytes_ <= kWriteHighWater) write_event_.Set();
}

Task<absl::Status> Call::WaitForRoom(absl::Status queued) {
  if (!queued.ok()) co_return queued;
  while (!status_ && out_bytes_ > kWriteHighWater) {
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

// (Read and ReadBuffer each loop on this step themselves: a coroutine
// wrapping the other would nest a frame per message, and a long stream
// read without waiting would grow the stack where transfers between
// coroutines are not tail calls, as in sanitized builds.)
Call::ReadStep Call::TakeMessage(ByteBuffer* out) {
  if (status_ && !status_->ok()) return ReadStep::kEnd;
  if (std::optional<ReceivedMessage> m = decoder_.Next()) {
    CreditConsumed();  // the reader took it: the server may send more
    if (!m->compressed) {
      *out = std::move(m->bytes);
      return ReadStep::kMessage;
    }
    absl::StatusOr<std::string> plain = Inflate(std::move(m->bytes).TakeString());
    if (plain.ok()) {
      *out = ByteBuffer(std::move(*plain));
      return ReadStep::kMessage;
    }
    // The server may have ended the call OK before this message was read:
    // a response the client cannot decode still fails the call.
    if (status_ && status_->ok()) status_ = plain.status();
    End(plain.status());
    conn_->ResetStream(this, NGHTTP2_CANCEL);
    return ReadStep::kEnd;
  }
  if (status_ || remote_closed_) return ReadStep::kEnd;
  return ReadStep::kWait;
}

Task<std::optional<std::string>> Call::Read() {
  for (;;) {
    ByteBuffer m;
    const ReadStep step = TakeMessage(&m);
    if (step == ReadStep::kMessage) co_return std::move(m).TakeString();
    if (step == ReadStep::kEnd) co_return std::nullopt;
    co_await read_event_.Wait();
  }
}

Task<std::optional<ByteBuffer>> Call::ReadBuffer() {
  for (;;) {
    ByteBuffer m;
    const ReadStep step = TakeMessage(&m);
    if (step == ReadStep::kMessage) co_return std::move(m);
    if (step == ReadStep::kEnd) co_return std::nullopt;
    co_await read_event_.Wait();
  }
}

absl::StatusOr<std::string> Call::Inflate(std::string_view bytes) const {
  if (response_encoding_.empty() || response_encoding_ == "identity") {
    return absl::InternalError(
        absl::StrCat("the server sent a compressed message without naming its grpc-encoding (",
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
