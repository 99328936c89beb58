#include "ringrpc/client/transport/http2_connection.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/transport/internal/http2_callbacks.h"
#include "ringrpc/client/transport/internal/ms.h"

namespace ringrpc::transport {
namespace {

constexpr uint32_t kStreamWindow = 4u << 20;
constexpr size_t kRecvBlockSize = 64 << 10;
constexpr size_t kRecvBlocksKept = 4;  // recv_blocks_'s inline size
constexpr int32_t kConnectionWindow = 16 << 20;

}  // namespace

// ---- keepalive ---------------------------------------------------------------

// Drives keepalive_ (the policy) with one loop timer at its deadline.
class Http2Connection::KeepaliveTimer final : public TimerCallback {
 public:
  explicit KeepaliveTimer(Http2Connection* conn) : conn_(conn) { Schedule(); }
  ~KeepaliveTimer() {
    if (id_ != 0) conn_->loop_->CancelTimer(id_);
  }
  // The policy's deadline moved: the timer follows it.
  void Reschedule() {
    if (id_ != 0) conn_->loop_->CancelTimer(id_);
    Schedule();
  }

 private:
  void Schedule() { id_ = conn_->loop_->ScheduleTimer(conn_->keepalive_->deadline(), this); }
  void OnTimer() override {
    id_ = 0;
    switch (conn_->keepalive_->OnTimer(conn_->loop_->Now(), !conn_->calls_.empty())) {
      case KeepalivePolicy::Action::kDeclareDead:
        conn_->Close(absl::UnavailableError(
            absl::StrCat("keepalive timeout: no frame from the server within ",
                         Ms(conn_->options_.keepalive_timeout), " of a PING")));
        return;  // Close destroyed this timer
      case KeepalivePolicy::Action::kSendPing:
        nghttp2_submit_ping(conn_->session_, NGHTTP2_FLAG_NONE, nullptr);
        ++conn_->stats_.pings_sent;
        conn_->Flush();
        break;
      case KeepalivePolicy::Action::kWait:
        break;
    }
    Schedule();
  }

  Http2Connection* conn_;
  uint64_t id_ = 0;
};

void Http2Connection::StartKeepalive() {
  const ConnectionOptions& o = options_;
  if (!o.keepalive_time) return;
  if (keepalive_) {
    keepalive_->Restart(loop_->Now());
  } else {
    keepalive_.emplace(KeepaliveSettings{.time = *o.keepalive_time,
                                         .timeout = o.keepalive_timeout,
                                         .permit_without_calls = o.keepalive_permit_without_calls,
                                         .max_pings_without_data = o.max_pings_without_data},
                       loop_->Now());
  }
  keepalive_timer_ = std::make_unique<KeepaliveTimer>(this);
}

void Http2Connection::OnFrameReceived() {
  ++stats_.frames_received;
  if (keepalive_ && keepalive_->OnFrameReceived(loop_->Now()) && keepalive_timer_) {
    keepalive_timer_->Reschedule();
  }
}

// ---- connection --------------------------------------------------------------

Http2Connection::Http2Connection(EventLoop& loop, Address address, ConnectionOptions options,
                                 int fd)
    : loop_(&loop), address_(address), options_(std::move(options)), fd_(fd) {
  flush_event_.emplace(loop);
  settings_event_.emplace(loop);
}

Http2Connection::~Http2Connection() {
  keepalive_timer_.reset();
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
  Callbacks::Install(cbs);
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
      return absl::UnavailableError(
          absl::StrCat("HTTP/2 protocol error from ", address_.ToString(),
                       ": the server did not start with SETTINGS (it sent \"", shown,
                       "...\"; not an HTTP/2 server?)"));
    }
  }
  ssize_t rv = nghttp2_session_mem_recv(session_, data, n);
  if (rv < 0) {
    return absl::UnavailableError(
        absl::StrCat("HTTP/2 protocol error from ", address_.ToString(), ": ",
                     rv == NGHTTP2_ERR_CALLBACK_FAILURE && !last_protocol_error_.empty()
                         ? last_protocol_error_
                         : std::string(nghttp2_strerror(static_cast<int>(rv)))));
  }
  if (!nghttp2_session_want_read(session_)) {
    // nghttp2 found a connection error and ended the session (its GOAWAY
    // is queued): the server broke HTTP/2.
    return absl::UnavailableError(
        absl::StrCat("HTTP/2 protocol error from ", address_.ToString(), ": ",
                     last_protocol_error_.empty() ? "session terminated" : last_protocol_error_));
  }
  return absl::OkStatus();
}

absl::Status Http2Connection::RecvError(int res) const {
  return absl::UnavailableError(
      res == 0 ? absl::StrCat("connection to ", address_.ToString(), " closed by the server")
               : absl::StrCat("recv from ", address_.ToString(), ": ", std::strerror(-res)));
}

RecvBlock::Ref Http2Connection::TakeRecvBlock() {
  for (const RecvBlock::Ref& b : recv_blocks_) {
    if (b->Unshared()) return b;
  }
  RecvBlock::Ref fresh = RecvBlock::Make(std::vector<uint8_t>(kRecvBlockSize));
  if (recv_blocks_.size() < kRecvBlocksKept) {
    recv_blocks_.push_back(fresh);
  } else {
    recv_blocks_[next_replaced_] = fresh;  // its messages keep the old one
    next_replaced_ = (next_replaced_ + 1) % kRecvBlocksKept;
  }
  return fresh;
}

Task<void> Http2Connection::ReadLoop() {
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
    RecvBlock::Ref block = TakeRecvBlock();
    runtime::IoAwaitable recv = loop_->Recv(fd_, std::move(block->bytes()));
    recv_op_ = recv.op();
    runtime::IoResult r = co_await recv;
    recv_op_ = nullptr;
    block->bytes() = std::move(r.buf);
    if (r.res == -ECANCELED) continue;  // TryQuiesce() interrupted it
    if (r.res <= 0) {
      Close(RecvError(r.res));
      co_return;
    }
    if (absl::Status s = Receive(block, r.res); !s.ok()) {
      Close(std::move(s));
      co_return;
    }
    Flush();  // acks, window updates, resets
  }
}

absl::Status Http2Connection::Receive(const RecvBlock::Ref& block, size_t n) {
  if (tls_ == nullptr) return IngestBlock(block, n);
  tls_->FeedCiphertext(block->bytes().data(), n);
  // Decrypted straight into receive blocks, which messages may keep.
  for (;;) {
    RecvBlock::Ref plain = TakeRecvBlock();
    size_t got = 0;
    bool closed = false;
    absl::Status s =
        tls_->ReadPlaintext(plain->bytes().data(), plain->bytes().size(), &got, &closed);
    if (s.ok() && got > 0) s = IngestBlock(plain, got);
    if (!s.ok()) return s;
    if (closed) return RecvError(0);
    if (got < plain->bytes().size()) return absl::OkStatus();
  }
}

absl::Status Http2Connection::IngestBlock(const RecvBlock::Ref& block, size_t n) {
  // Only a well-filled block may be held by messages: a server trickling a
  // large message a few KiB per receive would otherwise pin a 64 KiB block
  // for each few KiB (those bytes are copied instead).
  if (n >= kRecvBlockSize / 4) recv_block_ = block;
  absl::Status s = Ingest(block->bytes().data(), n);
  recv_block_ = RecvBlock::Ref();
  return s;
}

bool Http2Connection::Quiescent() const {
  // A TLS session moves with the connection (its records go through
  // memory buffers, never the socket): parked too once it has nothing
  // left to send.
  return polling_ && !writing_ && calls_.empty() && closed_.ok() && !draining_ &&
         !nghttp2_session_want_write(session_) && !(keepalive_ && keepalive_->awaiting_ack()) &&
         (tls_ == nullptr || !tls_->has_ciphertext());
}

bool Http2Connection::TryQuiesce() {
  if (Quiescent()) return true;
  if (calls_.empty() && closed_.ok() && !draining_ && !quiesce_ && recv_op_ != nullptr) {
    quiesce_ = true;
    loop_->Interrupt(recv_op_);
  }
  return false;
}

absl::StatusOr<DetachedConnection> Http2Connection::Detach(std::shared_ptr<Http2Connection> conn) {
  if (!conn->Quiescent()) {
    return absl::FailedPreconditionError(
        absl::StrCat("connection to ", conn->address_.ToString(),
                     " is not quiescent (calls, a send or a PING in flight, or a receive armed)"));
  }
  if (conn.use_count() != 1) {
    return absl::FailedPreconditionError("connection is still referenced elsewhere");
  }
  conn->keepalive_timer_.reset();
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
  if (conn->fork_generation_ != ForkGeneration()) {
    // Parked by the parent before fork(): its socket is the parent's
    // connection. Dropped unread and unwritten (its descriptor closes here).
    return absl::UnavailableError("connection made before fork() (it belongs to the parent)");
  }
  conn->loop_ = &loop;
  conn->flush_event_.emplace(loop);
  conn->settings_event_.emplace(loop);
  // First whatever arrived while parked: PINGs, SETTINGS, a GOAWAY, EOF.
  absl::Status failed;
  while (failed.ok()) {
    RecvBlock::Ref block = conn->TakeRecvBlock();
    ssize_t n = ::recv(conn->fd_, block->bytes().data(), block->bytes().size(), MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    failed =
        n <= 0 ? conn->RecvError(n < 0 ? -errno : 0) : conn->Receive(block, static_cast<size_t>(n));
  }
  if (conn->draining_) {  // the clearer cause, even if the socket closed after it
    failed = absl::UnavailableError(
        absl::StrCat("connection to ", conn->address_.ToString(), " got GOAWAY while parked"));
  }
  if (!failed.ok()) {
    conn->Close(failed);
    return failed;
  }
  conn->Start();
  conn->StartKeepalive();
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
  for (;;) {
    co_await flush_event_->Wait();
    if (!closed_.ok()) continue;
    batch_.Clear();
    for (;;) {
      const uint8_t* data = nullptr;
      ssize_t n = nghttp2_session_mem_send(session_, &data);  // may call SendData
      if (n < 0) {
        Close(absl::InternalError(
            absl::StrCat("nghttp2_session_mem_send: ", nghttp2_strerror(static_cast<int>(n)))));
        break;
      }
      if (n == 0) break;
      batch_.Copy(data, static_cast<size_t>(n));
    }
    if (tls_ != nullptr && closed_.ok()) {
      absl::Status st;
      for (const SendBatch::Piece& p : batch_.pieces) {
        const uint8_t* at = p.held != nullptr ? reinterpret_cast<const uint8_t*>(p.held)
                                              : batch_.bytes.data() + p.off;
        st = tls_->WritePlaintext(at, p.len);
        if (!st.ok()) break;
      }
      if (!st.ok()) {
        Close(std::move(st));
        continue;
      }
      batch_.Clear();
      tls_->TakeCiphertext(&batch_.bytes);  // also what reading produced (key updates)
      batch_.pieces.push_back(SendBatch::Piece{nullptr, 0, batch_.bytes.size()});
    }
    const size_t total = batch_.size();
    size_t off = 0;
    while (off < total && closed_.ok()) {
      writing_ = true;
      // Large messages ride along by reference: one gathered sendmsg. (The
      // iovecs are made before the bytes move: they point into their heap
      // storage, which the move keeps.)
      std::vector<iovec> iov;
      if (batch_.has_held()) iov = batch_.Iovecs(off);
      runtime::IoAwaitable send =
          batch_.has_held()
              ? loop_->SendMsg(fd_, std::move(batch_.bytes), std::move(iov), batch_.keep)
              : loop_->Send(fd_, std::move(batch_.bytes), off);
      send_op_ = send.op();
      // Quiet when all that is pending went into this (small) send and a
      // call awaits a reply: the reply, not the send, is what wakes us.
      loop_->SetQuiet(send_op_, total - off <= kQuietSendMax && !calls_.empty() &&
                                    !nghttp2_session_want_write(session_));
      runtime::IoResult r = co_await send;
      send_op_ = nullptr;
      writing_ = false;
      batch_.bytes = std::move(r.buf);
      ++stats_.sends;
      if (r.res < 0) {
        Close(absl::UnavailableError(
            absl::StrCat("send to ", address_.ToString(), ": ", std::strerror(-r.res))));
        break;
      }
      off += r.res;
    }
    if (batch_has_headers_ && total != 0) ++stats_.sends_with_headers;
    batch_has_headers_ = false;
    batch_.keep.clear();  // the held messages' strings may go now
    if (!local_goaway_.ok()) Close(local_goaway_);
  }
}

void Http2Connection::Lost(const absl::Status& why) {
  if (!on_lost_) return;
  std::function<void(const absl::Status&)> f = std::move(on_lost_);
  on_lost_ = nullptr;
  f(why);
}

void Http2Connection::Close(absl::Status reason) {
  if (!closed_.ok()) return;
  closed_ = std::move(reason);
  Lost(closed_);
  keepalive_timer_.reset();
  std::vector<Call*> calls;
  for (auto& [id, call] : calls_) calls.push_back(call);
  for (Call* call : calls) call->End(closed_);
  ::shutdown(fd_, SHUT_RDWR);
  settings_event_->Set();
}

}  // namespace ringrpc::transport
