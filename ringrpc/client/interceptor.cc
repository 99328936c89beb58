#include "ringrpc/client/interceptor.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "ringrpc/base/mutex.h"
#include "ringrpc/client/internal/call_access.h"
#include "ringrpc/client/internal/cancel_wake.h"
#include "ringrpc/client/internal/interceptors.h"
#include "ringrpc/client/runtime/event_loop.h"
#include "ringrpc/client/runtime/loop_event.h"

namespace ringrpc {
namespace internal {

using experimental::InterceptionHookPoints;

// A hook's wait for a late answer: woken by the answer's post, the call's
// deadline, or TryCancel. The call's thread only.
struct CallInterceptors::Wait final : TimerCallback {
  explicit Wait(runtime::EventLoop& l) : loop(l), event(l) {}
  Wait(const Wait&) = delete;
  Wait& operator=(const Wait&) = delete;
  ~Wait() {
    if (timer != 0) loop.CancelTimer(timer);
  }
  void OnTimer() override {
    timer = 0;
    event.Set();
  }
  void Wake() { event.Set(); }
  runtime::EventLoop& loop;
  runtime::LoopEvent event;
  uint64_t timer = 0;
};

// One hook point's run through the interceptors: what they see and may
// change (owned here, so an interceptor that answers later from its own
// thread reads nothing the call has let go), and each one's answer.
class CallInterceptors::Batch final : public experimental::InterceptorBatchMethods,
                                      public std::enable_shared_from_this<Batch> {
 public:
  Batch(InterceptionHookPoints point, std::shared_ptr<CallInterceptors> owner)
      : point_(point), owner_(std::move(owner)) {}
  bool QueryInterceptionHookPoint(InterceptionHookPoints type) override { return type == point_; }
  void Proceed() override { Answer(std::nullopt); }
  void Fail(Status status) override {
    Answer(status.ok() ? Status(StatusCode::UNKNOWN, "an interceptor failed the call with OK")
                       : std::move(status));
  }
  std::multimap<std::string, std::string>* GetSendInitialMetadata() override {
    return send_md ? &*send_md : nullptr;
  }
  std::string* GetSerializedSendMessage() override {
    return send_message ? &*send_message : nullptr;
  }
  const void* GetSendMessage() override {
    if (send_view_ == nullptr && send_message) {
      send_view_ = View(owner_->Prototype(/*request=*/true), *send_message);
    }
    return send_view_.get();
  }
  void ModifySendMessage(const void* message) override {
    if (!send_message || message == nullptr) return;
    static_cast<const google::protobuf::MessageLite*>(message)->SerializeToString(&*send_message);
    send_view_.reset();  // parsed again if asked
  }
  const std::multimap<std::string, std::string>* GetRecvInitialMetadata() override {
    return recv_initial ? &*recv_initial : nullptr;
  }
  const std::multimap<std::string, std::string>* GetRecvTrailingMetadata() override {
    return recv_trailing ? &*recv_trailing : nullptr;
  }
  std::string* GetSerializedRecvMessage() override {
    return recv_message ? &*recv_message : nullptr;
  }
  void* GetRecvMessage() override {
    if (recv_view_ == nullptr && recv_message) {
      recv_view_ = View(owner_->Prototype(/*request=*/false), *recv_message);
    }
    return recv_view_.get();
  }
  Status* GetRecvStatus() override { return recv_status ? &*recv_status : nullptr; }

  // After the interceptors: a received message that was looked at as its
  // type goes on as that (it may have been changed).
  void StoreRecvView() {
    if (recv_view_ != nullptr) recv_view_->SerializeToString(&*recv_message);
  }
  InterceptionHookPoints point() const { return point_; }

  // The call's thread: the next interceptor is about to run.
  void Begin() {
    MutexLock lock(&mu_);
    state_ = State::kIntercepting;
    failure_.reset();
  }
  // The call's thread: Intercept returned. kLater: not answered yet.
  Step Returned() {
    MutexLock lock(&mu_);
    if (state_ == State::kAnswered) return failure_ ? Step::kFailed : Step::kProceeded;
    state_ = State::kWaiting;
    return Step::kLater;
  }
  // The call's thread, while kLater: where a late answer wakes the call
  // (false: it came already).
  bool SetWake(std::weak_ptr<Wait> wake) {
    MutexLock lock(&mu_);
    if (state_ == State::kAnswered) return false;
    wake_ = std::move(wake);
    return true;
  }
  bool answered() {
    MutexLock lock(&mu_);
    return state_ == State::kAnswered;
  }
  std::optional<Status> failure() {
    MutexLock lock(&mu_);
    return failure_;
  }
  // The call's thread: it stops waiting for the answer; the batch (and the
  // call's interceptors) then live until it comes. False if it came first.
  bool Abandon() {
    MutexLock lock(&mu_);
    if (state_ != State::kWaiting) return false;
    state_ = State::kAbandoned;
    self_ = shared_from_this();
    return true;
  }

  std::optional<std::multimap<std::string, std::string>> send_md, recv_initial, recv_trailing;
  std::optional<std::string> send_message, recv_message;
  std::optional<Status> recv_status;

 private:
  enum class State { kIntercepting, kWaiting, kAnswered, kAbandoned };

  // Proceed or Fail, from any thread, inside Intercept or later; the first
  // answer to each Intercept counts.
  void Answer(std::optional<Status> failure) {
    std::shared_ptr<Batch> orphan;
    std::weak_ptr<Wait> wake;
    runtime::EventLoop* loop = nullptr;
    std::shared_ptr<void> keep;
    {
      MutexLock lock(&mu_);
      if (state_ == State::kAnswered) return;
      if (state_ == State::kWaiting || state_ == State::kAbandoned) {
        // Copied now: once the lock is let go, a waiting call may see the
        // answer (its timer fired) and let this batch go.
        loop = owner_->waits_.loop;
        keep = owner_->waits_.keep;
        wake = wake_;
      }
      if (state_ == State::kAbandoned) orphan = std::move(self_);
      failure_ = std::move(failure);
      state_ = State::kAnswered;
    }
    if (loop == nullptr) return;
    if (orphan != nullptr) {
      // Let go on the call's thread, where its interceptors were made.
      loop->Post([orphan = std::move(orphan), keep] {});
      return;
    }
    loop->Post([wake = std::move(wake), keep = std::move(keep)] {
      if (std::shared_ptr<Wait> w = wake.lock()) w->Wake();
    });
  }

  static std::unique_ptr<google::protobuf::Message> View(const google::protobuf::Message* type,
                                                         const std::string& bytes) {
    if (type == nullptr) return nullptr;
    std::unique_ptr<google::protobuf::Message> m(type->New());
    if (!m->ParseFromString(bytes)) return nullptr;  // not this type after all
    return m;
  }

  const InterceptionHookPoints point_;
  const std::shared_ptr<CallInterceptors> owner_;
  std::unique_ptr<google::protobuf::Message> send_view_, recv_view_;
  Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kIntercepting;
  std::optional<Status> failure_ ABSL_GUARDED_BY(mu_);
  std::weak_ptr<Wait> wake_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<Batch> self_ ABSL_GUARDED_BY(mu_);  // while abandoned
};

// The batch a hook's later part waits on; a frame destroyed before the
// answer came (the call went) lets it go.
class CallInterceptors::Hold {
 public:
  explicit Hold(std::shared_ptr<Batch> b) : batch(std::move(b)) {}
  Hold(Hold&&) = default;
  Hold& operator=(Hold&&) = delete;
  ~Hold() {
    if (batch != nullptr) batch->Abandon();
  }
  std::shared_ptr<Batch> batch;
};

namespace {

const char* HookName(InterceptionHookPoints p) {
  switch (p) {
    case InterceptionHookPoints::PRE_SEND_INITIAL_METADATA:
      return "PRE_SEND_INITIAL_METADATA";
    case InterceptionHookPoints::PRE_SEND_MESSAGE:
      return "PRE_SEND_MESSAGE";
    case InterceptionHookPoints::PRE_SEND_CLOSE:
      return "PRE_SEND_CLOSE";
    case InterceptionHookPoints::POST_RECV_INITIAL_METADATA:
      return "POST_RECV_INITIAL_METADATA";
    case InterceptionHookPoints::POST_RECV_MESSAGE:
      return "POST_RECV_MESSAGE";
    case InterceptionHookPoints::POST_RECV_STATUS:
      return "POST_RECV_STATUS";
    case InterceptionHookPoints::PRE_SEND_CANCEL:
      return "PRE_SEND_CANCEL";
    case InterceptionHookPoints::NUM_INTERCEPTION_HOOKS:
      break;
  }
  return "?";
}

experimental::ClientRpcInfo::Type RpcType(const ClientContext& ctx) {
  using Info = experimental::ClientRpcInfo;
  switch (CallAccess::call_kind(ctx)) {
    case CallKind::kUnary:
      return Info::UNARY;
    case CallKind::kClientStreaming:
      return Info::CLIENT_STREAMING;
    case CallKind::kServerStreaming:
      return Info::SERVER_STREAMING;
    case CallKind::kBidiStreaming:
      return Info::BIDI_STREAMING;
    case CallKind::kUnknown:
      break;
  }
  return Info::UNKNOWN;
}

std::multimap<std::string, std::string> ToMap(const transport::Metadata& md) {
  return {md.begin(), md.end()};
}

}  // namespace

std::shared_ptr<CallInterceptors> CallInterceptors::Create(const InterceptorFactories* factories,
                                                           const std::string& method,
                                                           ClientContext* ctx, Waits waits) {
  if (factories == nullptr || factories->empty()) return nullptr;
  auto out = std::make_shared<CallInterceptors>();
  out->method_ = method;
  out->waits_ = std::move(waits);
  experimental::ClientRpcInfo info(method, ctx, RpcType(*ctx));
  for (const auto& f : *factories) {
    if (experimental::Interceptor* i = f->CreateClientInterceptor(&info))
      out->list_.emplace_back(i);
  }
  if (out->list_.empty()) return nullptr;
  return out;
}

const google::protobuf::Message* CallInterceptors::Prototype(bool request) {
  std::call_once(types_once_, [this] {
    // "/package.Service/Method" is the method "package.Service.Method".
    const size_t slash = method_.rfind('/');
    if (slash == std::string::npos || slash <= 1 || method_[0] != '/') return;
    const std::string full = method_.substr(1, slash - 1) + "." + method_.substr(slash + 1);
    if (const google::protobuf::MethodDescriptor* md =
            google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(full)) {
      google::protobuf::MessageFactory* f = google::protobuf::MessageFactory::generated_factory();
      request_type_ = f->GetPrototype(md->input_type());
      response_type_ = f->GetPrototype(md->output_type());
    }
  });
  return request ? request_type_ : response_type_;
}

CallInterceptors::Step CallInterceptors::RunFrom(Batch& batch, size_t* next) {
  for (; *next < list_.size(); ++*next) {
    batch.Begin();
    list_[*next]->Intercept(&batch);
    const Step step = batch.Returned();
    if (step != Step::kProceeded) return step;
  }
  return Step::kProceeded;
}

template <typename Store>
ReadyOr<Status> CallInterceptors::Run(std::shared_ptr<Batch> batch, Store store) {
  size_t next = 0;
  const Step step = RunFrom(*batch, &next);
  if (step == Step::kLater) {
    return Later(shared_from_this(), Hold(std::move(batch)), next, std::move(store));
  }
  return store(*batch, step == Step::kFailed ? *batch->failure() : Status());
}

template <typename Store>
Task<Status> CallInterceptors::Later(std::shared_ptr<CallInterceptors> self, Hold hold, size_t next,
                                     Store store) {
  Batch& batch = *hold.batch;
  for (;;) {
    if (std::optional<Status> ended = co_await self->AwaitAnswer(hold.batch, next)) {
      co_return *ended;  // nothing is written back: the call ends so
    }
    if (std::optional<Status> failed = batch.failure()) co_return store(batch, *failed);
    ++next;
    const Step step = self->RunFrom(batch, &next);
    if (step == Step::kLater) continue;
    co_return store(batch, step == Step::kFailed ? *batch.failure() : Status());
  }
}

Task<std::optional<Status>> CallInterceptors::AwaitAnswer(std::shared_ptr<Batch> batch,
                                                          size_t index) {
  runtime::EventLoop& loop = *waits_.loop;
  auto wait = std::make_shared<Wait>(loop);
  if (!batch->SetWake(wait)) co_return std::nullopt;  // answered since it returned
  waiting_.push_back(wait.get());
  // Before the call opened, TryCancel reaches this wait through a
  // registration of its own; after, through PreSendCancel.
  std::optional<CancelWake> cancel_wake;
  if (!opened_ && waits_.cancel != nullptr) {
    cancel_wake.emplace(waits_.cancel, loop, [w = wait.get()] { w->Wake(); });
  }
  if (waits_.deadline != TimePoint::max())
    wait->timer = loop.ScheduleTimer(waits_.deadline, wait.get());
  const std::string where = "interceptor " + std::to_string(index) + " had answered at " +
                            HookName(batch->point()) + " (Proceed or Fail)";
  std::optional<Status> ended;
  for (;;) {
    if (batch->answered()) break;
    bool cancelled = cancelled_;
    if (!cancelled && waits_.cancel != nullptr) {
      MutexLock lock(&waits_.cancel->mu);
      cancelled = waits_.cancel->cancelled;
    }
    if (cancelled) {
      ended = Status(StatusCode::CANCELLED, "cancelled before " + where);
      break;
    }
    if (loop.Now() >= waits_.deadline) {
      ended = Status(StatusCode::DEADLINE_EXCEEDED, "deadline exceeded before " + where);
      break;
    }
    co_await wait->event.Wait();
  }
  std::erase(waiting_, wait.get());
  if (ended && !batch->Abandon()) ended.reset();  // the answer came just now: it counts
  co_return ended;
}

std::shared_ptr<CallInterceptors::Batch> CallInterceptors::NewBatch(InterceptionHookPoints point) {
  return std::make_shared<Batch>(point, shared_from_this());
}

ReadyOr<Status> CallInterceptors::PreSendInitialMetadata(transport::Metadata& md) {
  std::shared_ptr<Batch> b = NewBatch(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA);
  b->send_md.emplace(ToMap(md));
  return Run(std::move(b), [&md](Batch& b, Status s) {
    md.assign(b.send_md->begin(), b.send_md->end());
    return s;
  });
}

ReadyOr<Status> CallInterceptors::PreSendMessage(std::string& message) {
  std::shared_ptr<Batch> b = NewBatch(InterceptionHookPoints::PRE_SEND_MESSAGE);
  b->send_message.emplace(std::move(message));
  return Run(std::move(b), [&message](Batch& b, Status s) {
    message = std::move(*b.send_message);
    return s;
  });
}

ReadyOr<Status> CallInterceptors::PreSendClose() {
  return Run(NewBatch(InterceptionHookPoints::PRE_SEND_CLOSE), [](Batch&, Status s) { return s; });
}

ReadyOr<Status> CallInterceptors::PostRecvInitialMetadata(const transport::Metadata& md) {
  if (initial_reported_) return Status();
  initial_reported_ = true;
  std::shared_ptr<Batch> b = NewBatch(InterceptionHookPoints::POST_RECV_INITIAL_METADATA);
  b->recv_initial.emplace(ToMap(md));
  return Run(std::move(b), [](Batch&, Status s) { return s; });
}

ReadyOr<Status> CallInterceptors::PostRecvMessage(std::string& message) {
  std::shared_ptr<Batch> b = NewBatch(InterceptionHookPoints::POST_RECV_MESSAGE);
  b->recv_message.emplace(std::move(message));
  return Run(std::move(b), [&message](Batch& b, Status s) {
    b.StoreRecvView();
    message = std::move(*b.recv_message);
    return s;
  });
}

ReadyOr<Status> CallInterceptors::PostRecvStatus(Status status, const transport::Metadata& initial,
                                                 const transport::Metadata& trailing) {
  std::shared_ptr<Batch> b = NewBatch(InterceptionHookPoints::POST_RECV_STATUS);
  b->recv_initial.emplace(ToMap(initial));
  b->recv_trailing.emplace(ToMap(trailing));
  b->recv_status.emplace(std::move(status));
  return Run(std::move(b),
             [](Batch& b, Status s) { return s.ok() ? std::move(*b.recv_status) : std::move(s); });
}

void CallInterceptors::PreSendCancel() {
  cancelled_ = true;
  for (Wait* w : waiting_) w->Wake();  // a wait for a late answer ends CANCELLED
  std::shared_ptr<Batch> b = NewBatch(InterceptionHookPoints::PRE_SEND_CANCEL);
  size_t next = 0;
  if (RunFrom(*b, &next) == Step::kLater) b->Abandon();  // the call is cancelled regardless
}

}  // namespace internal
}  // namespace ringrpc
