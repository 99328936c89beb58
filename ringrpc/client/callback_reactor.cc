#include "ringrpc/client/callback_reactor.h"

#include <deque>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "ringrpc/base/mutex.h"
#include "ringrpc/client/message_parse.h"
#include "ringrpc/client/runtime/event_loop.h"

namespace ringrpc {
namespace internal {

namespace {
CallKind CallKindOf(ReactorKind kind) {
  switch (kind) {
    case ReactorKind::kUnary:
      return CallKind::kUnary;
    case ReactorKind::kServerStreaming:
      return CallKind::kServerStreaming;
    case ReactorKind::kClientStreaming:
      return CallKind::kClientStreaming;
    case ReactorKind::kBidi:
      break;
  }
  return CallKind::kBidiStreaming;
}
}  // namespace

// The untyped call behind a reactor. Before StartCall: filled by Bind and
// collects operations (under mu_). From StartCall on: lives on one CQ
// thread's loop; operations from other threads are posted there.
class ReactorCore : public std::enable_shared_from_this<ReactorCore> {
 public:
  struct Op {
    enum class Kind : uint8_t { kRead, kWrite, kWritesDone, kHolds };
    Kind kind = Kind::kRead;
    google::protobuf::MessageLite* out = nullptr;  // kRead: a message, or
    std::string* raw = nullptr;                    // the bytes as they came
    std::string bytes;                             // kWrite
    bool last = false;                             // kWrite: then WritesDone
    bool compress = true;                          // kWrite: unless WriteOptions said no
    bool report = true;                            // false: the library's own
    int holds = 0;                                 // kHolds: +n or -1
  };

  explicit ReactorCore(ClientReactorBase* reactor) : reactor_(reactor) {}

  void Bind(std::shared_ptr<Channel> channel, std::string method, ClientContext* context,
            ReactorKind kind, std::string request, google::protobuf::MessageLite* response) {
    channel_ = std::move(channel);
    method_ = std::move(method);
    context_ = context;
    kind_ = kind;
    request_ = std::move(request);
    response_ = response;
  }

  // Any thread. From a reaction (the loop's own thread) the operation is
  // started at once, so OnDone cannot slip in before it.
  void Submit(Op op) {
    runtime::EventLoop* loop;
    {
      MutexLock lock(&mu_);
      if (loop_ == nullptr) {
        pending_.push_back(std::move(op));
        return;
      }
      loop = loop_;
    }
    if (loop == runtime::EventLoop::Current()) {
      Apply(std::move(op));
      return;
    }
    loop->Post(
        [self = shared_from_this(), op = std::move(op)]() mutable { self->Apply(std::move(op)); });
  }

  // Any thread.
  void StartCall() {
    {
      MutexLock lock(&mu_);
      if (started_) return;
      started_ = true;
    }
    Status refused;
    if (channel_ == nullptr) {
      refused = Status(StatusCode::FAILED_PRECONDITION,
                       "StartCall on a reactor no stub bound (call "
                       "stub->async()->Method(context, ..., reactor) first)");
    } else if (Status config = channel_->configuration_status(); !config.ok()) {
      refused = config;
    }
    if (!refused.ok()) {  // nothing can run: end once, on a CQ thread
      if (channel_ != nullptr && channel_->cq_thread_count() > 0) {
        channel_->Spawn([](std::shared_ptr<ReactorCore> self, Status s) -> Task<void> {
          ClientReactorBase* r = std::exchange(self->reactor_, nullptr);
          r->OnDone(s);
          co_return;
        }(shared_from_this(), refused));
        return;
      }
      // Unbound (a programming error) or no CQ thread at all: here.
      ClientReactorBase* r = std::exchange(reactor_, nullptr);
      r->OnDone(refused);
      return;
    }
    channel_->Spawn(Run(shared_from_this()));
  }

 private:
  using Kind = Op::Kind;

  Task<void> Run(std::shared_ptr<ReactorCore> self) {
    std::vector<Op> early;
    {
      MutexLock lock(&mu_);
      loop_ = run_loop_ = runtime::EventLoop::Current();
      early = std::move(pending_);
    }
    for (Op& op : early) Apply(std::move(op));  // held until the call is open
    Status status;
    call_ = co_await channel_->Open(method_, context_, &status, CallKindOf(kind_));
    opened_ = true;
    if (call_ == nullptr) {
      final_ = status;
    } else {
      if (kind_ == ReactorKind::kServerStreaming || kind_ == ReactorKind::kUnary) {
        writes_.push_back(
            Op{.kind = Kind::kWrite, .bytes = std::move(request_), .last = true, .report = false});
      }
      // Both counted before either starts: a call that has already ended
      // (a deadline in the past) finishes its Finisher synchronously, and
      // OnDone must not run while the response reader is still to come.
      const bool read_response =
          kind_ == ReactorKind::kClientStreaming || kind_ == ReactorKind::kUnary;
      running_ += read_response ? 2 : 1;
      run_loop_->Spawn(Finisher(self));
      if (read_response) run_loop_->Spawn(ReadResponse(self));
    }
    for (Op& op : std::exchange(before_open_, {})) Apply(std::move(op));
    PumpWrites();
    MaybeDone();
  }

  // Loop thread.
  void Apply(Op op) {
    if (op.kind == Kind::kHolds) {
      holds_ += op.holds;
      MaybeDone();
      return;
    }
    if (!opened_) {
      before_open_.push_back(std::move(op));
      return;
    }
    if (done_) return;  // after OnDone: the reactor may be gone
    if (op.kind == Kind::kRead) {
      reads_.push_back(ReadTarget{op.out, op.raw});
      PumpReads();
    } else {
      writes_.push_back(std::move(op));
      PumpWrites();
    }
  }

  // The next operation starts on a later loop pass (a posted task), never
  // inside the reaction that asked for it; it counts as running from now.
  void PumpReads() {
    if (reading_ || reads_.empty()) return;
    reading_ = true;
    ++running_;
    ReadTarget out = reads_.front();
    reads_.pop_front();
    run_loop_->Post(
        [self = shared_from_this(), out] { self->run_loop_->Spawn(self->ReadOne(self, out)); });
  }

  void PumpWrites() {
    if (writing_ || writes_.empty()) return;
    writing_ = true;
    ++running_;
    // The operation stays at the queue's head until WriteOne takes it.
    run_loop_->Post([self = shared_from_this()] { self->run_loop_->Spawn(self->WriteOne(self)); });
  }

  struct ReadTarget {
    google::protobuf::MessageLite* msg;
    std::string* raw;
  };

  Task<void> ReadOne(std::shared_ptr<ReactorCore> self, ReadTarget out) {
    bool ok = false;
    if (call_ != nullptr) {
      std::optional<ByteBuffer> m = co_await call_->ReadBuffer();
      if (m) {
        const bool published = co_await call_->AwaitPublishInitialMetadata();
        ReportMetadata(published);  // as in grpc++: first
        if (out.raw != nullptr) {
          *out.raw = std::move(*m).TakeString();
          ok = true;
        } else {
          ok = Parse(*m, out.msg);
        }
      }
    }
    reactor_->OnReadDone(ok);
    reading_ = false;
    --running_;
    PumpReads();
    MaybeDone();
  }

  Task<void> WriteOne(std::shared_ptr<ReactorCore> self) {
    Op op = std::move(writes_.front());
    writes_.pop_front();
    bool ok = false;
    if (call_ != nullptr) {
      if (op.kind == Kind::kWrite) {
        ok = (co_await call_->Write(OutgoingMessage(std::move(op.bytes)), op.compress)).ok();
        if (ok && op.last) (void)co_await call_->AwaitWritesDone();
      } else {
        (void)co_await call_->AwaitWritesDone();
        ok = true;
      }
    }
    if (op.report) {
      if (op.kind == Kind::kWrite) {
        reactor_->OnWriteDone(ok);
      } else {
        reactor_->OnWritesDoneDone(ok);
      }
    }
    writing_ = false;
    --running_;
    PumpWrites();
    MaybeDone();
  }

  // Client streaming: the single response, read as soon as it comes.
  Task<void> ReadResponse(std::shared_ptr<ReactorCore> self) {
    std::optional<ByteBuffer> m = co_await call_->ReadBuffer();
    got_response_ = m && Parse(*m, response_);
    --running_;
    MaybeDone();
  }

  Task<void> Finisher(std::shared_ptr<ReactorCore> self) {
    ReportMetadata(co_await call_->ReadInitialMetadata());
    final_ = co_await call_->Finish();
    --running_;
    MaybeDone();
  }

  // OnReadInitialMetadataDone runs once, before the first OnReadDone(true).
  void ReportMetadata(bool ok) {
    if (metadata_reported_) return;
    metadata_reported_ = true;
    reactor_->OnReadInitialMetadataDone(ok);
  }

  // A response that does not parse cancels the call; OnDone says INTERNAL.
  bool Parse(const ByteBuffer& bytes, google::protobuf::MessageLite* out) {
    if (ParseMessage(bytes, out)) return true;
    if (bad_message_.empty()) bad_message_ = out->GetTypeName();
    call_->Cancel();
    return false;
  }

  void MaybeDone() {
    if (done_ || !opened_ || !final_ || running_ > 0 || holds_ > 0 || !reads_.empty() ||
        !writes_.empty()) {
      return;
    }
    done_ = true;
    // The call's status now, not when the Finisher saw it: a response that
    // could not be decompressed after an OK end fails the call.
    Status s = call_ != nullptr ? call_->FinishNow() : *final_;
    if (!bad_message_.empty()) {
      s = Status(StatusCode::INTERNAL, "a response message does not parse as " + bad_message_);
    } else if (s.ok() && !got_response_ &&
               (kind_ == ReactorKind::kClientStreaming || kind_ == ReactorKind::kUnary)) {
      s = Status(StatusCode::INTERNAL,
                 kind_ == ReactorKind::kUnary
                     ? "the server ended a unary call OK without a response message"
                     : "the server ended a client-streaming call OK without a response message");
    }
    call_.reset();  // on its own thread: the stream and its lease go back
    ClientReactorBase* r = std::exchange(reactor_, nullptr);
    r->OnDone(s);  // last use: OnDone may delete the reactor
  }

  ClientReactorBase* reactor_;
  // Set by Bind, before StartCall; read-only after.
  std::shared_ptr<Channel> channel_;
  std::string method_;
  ClientContext* context_ = nullptr;
  ReactorKind kind_ = ReactorKind::kBidi;
  std::string request_;
  google::protobuf::MessageLite* response_ = nullptr;

  Mutex mu_;
  runtime::EventLoop* loop_ ABSL_GUARDED_BY(mu_) = nullptr;  // set once, on the loop
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<Op> pending_ ABSL_GUARDED_BY(mu_);  // before the loop is known

  // The loop's thread only.
  runtime::EventLoop* run_loop_ = nullptr;  // loop_, for the code running there
  std::unique_ptr<ClientCall> call_;
  bool opened_ = false;
  std::vector<Op> before_open_;
  std::deque<ReadTarget> reads_;
  bool reading_ = false;
  std::deque<Op> writes_;
  bool writing_ = false;
  int holds_ = 0;
  int running_ = 0;
  std::optional<Status> final_;
  std::string bad_message_;
  bool got_response_ = false;
  bool metadata_reported_ = false;
  bool done_ = false;
};

void BindReactor(ClientReactorBase* reactor, std::shared_ptr<Channel> channel, std::string method,
                 ClientContext* context, ReactorKind kind, std::string request,
                 google::protobuf::MessageLite* response) {
  reactor->core_->Bind(std::move(channel), std::move(method), context, kind, std::move(request),
                       response);
}

}  // namespace internal

using Op = internal::ReactorCore::Op;

ClientReactorBase::ClientReactorBase() : core_(std::make_shared<internal::ReactorCore>(this)) {}
ClientReactorBase::~ClientReactorBase() = default;

void ClientReactorBase::StartCall() { core_->StartCall(); }

void ClientReactorBase::AddMultipleHolds(int holds) {
  if (holds > 0) core_->Submit(Op{.kind = Op::Kind::kHolds, .holds = holds});
}

void ClientReactorBase::RemoveHold() { core_->Submit(Op{.kind = Op::Kind::kHolds, .holds = -1}); }

void ClientReactorBase::StartReadBytes(google::protobuf::MessageLite* out) {
  core_->Submit(Op{.kind = Op::Kind::kRead, .out = out});
}

void ClientReactorBase::StartReadRaw(std::string* out) {
  core_->Submit(Op{.kind = Op::Kind::kRead, .raw = out});
}

void ClientReactorBase::StartWriteBytes(std::string message, bool last, bool compress) {
  core_->Submit(Op{
      .kind = Op::Kind::kWrite, .bytes = std::move(message), .last = last, .compress = compress});
}

void ClientReactorBase::StartWritesDoneOp() { core_->Submit(Op{.kind = Op::Kind::kWritesDone}); }

}  // namespace ringrpc
