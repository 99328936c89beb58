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

Call::Call(std::shared_ptr<Http2Connection> conn, uint32_t max_receive)
    : conn_(std::move(conn)),
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
    return status_->ok()
               ? absl::FailedPreconditionError("Write after the call ended")
               : *status_;
  }
  if (writes_done_)
    return absl::FailedPreconditionError("Write after WritesDone");
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

}  // namespace ringrpc::transport
