// ClientCall: one open call's operations (write, read, finish, cancel),
// through the channel's interceptors and, for a stream that may be sent
// again, its replay (the next attempt: stream_retry.cc).
#include "ringrpc/client/client_call.h"

#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "ringrpc/client/channel/channel_state.h"
#include "ringrpc/client/internal/call_access.h"
#include "ringrpc/client/internal/call_opener.h"
#include "ringrpc/client/internal/client_call_impl.h"
#include "ringrpc/client/internal/interceptors.h"
#include "ringrpc/client/runtime/event_loop.h"

namespace ringrpc {

using internal::CallAccess;

static_assert(static_cast<int>(transport::Compression::kGzip) ==
                  static_cast<int>(GRPC_COMPRESS_GZIP) &&
              static_cast<int>(transport::Compression::kDeflate) ==
                  static_cast<int>(GRPC_COMPRESS_DEFLATE));
ClientCall::ClientCall(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
// The call's state, let go where it lives; `released` (if any) is told
// once it is gone, also when the loop is destroyed before it ran.
struct ClientCall::Release {
  std::unique_ptr<Impl> impl;
  std::promise<void>* released = nullptr;
  Release(std::unique_ptr<Impl> i, std::promise<void>* r) : impl(std::move(i)), released(r) {}
  Release(Release&& o) noexcept
      : impl(std::move(o.impl)), released(std::exchange(o.released, nullptr)) {}
  ~Release() {
    impl.reset();
    if (released != nullptr) released->set_value();
  }
};

// Released on its own thread, whichever thread lets it go: from another of
// the channel's CQ threads it is handed over (waiting there could
// deadlock); from any other thread (a Channel::BlockingOpen caller's) the
// destructor waits, so the ClientContext may go right after it.
ClientCall::~ClientCall() {
  if (impl_ == nullptr || OnItsThread()) return;
  runtime::EventLoop* loop = impl_->loop;
  auto there = [](Release) -> Task<void> { co_return; };
  if (OnChannelThread()) {
    loop->PostSpawn(there(Release(std::move(impl_), nullptr)));
    return;
  }
  std::promise<void> released;
  loop->PostSpawn(there(Release(std::move(impl_), &released)));
  released.get_future().wait();
}

namespace {
Task<Status> Wrap(Task<absl::Status> t) { co_return Status::FromAbsl(co_await std::move(t)); }
}  // namespace

Task<Status> ClientCall::Write(std::string_view message, bool compress) {
  if (impl_->interceptors == nullptr && impl_->replay == nullptr) {
    return Wrap(impl_->call->Write(message, compress));
  }
  return Write(OutgoingMessage(std::string(message)), compress);
}

Task<Status> ClientCall::Write(OutgoingMessage message, bool compress) {
  if (impl_->interceptors != nullptr) {
    return [](ClientCall* self, OutgoingMessage message, bool compress) -> Task<Status> {
      // Interceptors see (and may change) the message as a string of its own.
      std::string m(message.bytes());
      Status s = co_await self->impl_->interceptors->PreSendMessage(m);
      if (!s.ok()) {
        self->impl_->Fail(s);
        co_return s;
      }
      co_return co_await self->WriteIntercepted(OutgoingMessage(std::move(m)), compress);
    }(this, std::move(message), compress);
  }
  return WriteIntercepted(std::move(message), compress);
}

Task<Status> ClientCall::WriteIntercepted(OutgoingMessage message, bool compress) {
  if (impl_->replay == nullptr) {
    return Wrap(impl_->call->Write(message, compress));  // queued before this returns
  }
  impl_->Remember(message, compress);
  // A write that finds the attempt ended before the call committed goes
  // out again with the next attempt's replay.
  return [](Impl* impl, OutgoingMessage m, bool compress) -> Task<Status> {
    for (;;) {
      const uint64_t generation = impl->replay->generation;
      absl::Status s;
      {
        Impl::Awaiting inside(impl);
        s = co_await impl->call->Write(m, compress);
      }
      if (s.ok()) co_return Status();
      if (!co_await internal::CallOpener::NextStreamAttempt(impl, generation)) {
        co_return Status::FromAbsl(s);
      }
      co_return Status();  // replayed with the new attempt
    }
  }(impl_.get(), std::move(message), compress);
}
bool ClientCall::never_sent() const { return impl_->call->never_sent(); }
void ClientCall::WritesDone() {
  ReadyOr<Status> done = AwaitWritesDone();
  if (!done.ready()) (void)LateAnswer("WritesDone");
}

ReadyOr<Status> ClientCall::AwaitWritesDone() {
  if (std::exchange(impl_->writes_done, true)) return Status();
  auto close = [](Impl* impl, Status s) {
    if (!s.ok()) {
      impl->Fail(s);
      return s;
    }
    impl->CloseWrites();
    return s;
  };
  if (impl_->interceptors == nullptr) return close(impl_.get(), Status());
  ReadyOr<Status> hooks = impl_->interceptors->PreSendClose();
  if (hooks.ready()) return close(impl_.get(), hooks.await_resume());
  return [](Impl* impl, ReadyOr<Status> hooks, decltype(close) close) -> Task<Status> {
    Status s = co_await hooks;
    co_return close(impl, std::move(s));
  }(impl_.get(), std::move(hooks), close);
}

Status ClientCall::LateAnswer(const char* method) {
  Status s(StatusCode::INTERNAL,
           std::string("an interceptor answers later (Proceed or Fail after Intercept returned), "
                       "and ClientCall::") +
               method +
               " cannot wait for it: use the awaited methods (Write, Read, "
               "ReadInitialMetadata, Finish) or a generated stub's call forms");
  impl_->Fail(s);
  return s;
}
Task<std::optional<std::string>> ClientCall::Read() {
  if (impl_->interceptors == nullptr && impl_->replay == nullptr) return impl_->call->Read();
  return ReadThrough<std::string>(impl_.get());
}

Task<std::optional<ByteBuffer>> ClientCall::ReadBuffer() {
  if (impl_->interceptors == nullptr && impl_->replay == nullptr) {
    return impl_->call->ReadBuffer();
  }
  return ReadThrough<ByteBuffer>(impl_.get());
}

// One coroutine over the transport's read (not one over the other: see
// transport::Call::TakeMessage).
template <typename Out>
Task<std::optional<Out>> ClientCall::ReadThrough(Impl* impl) {
  std::optional<ByteBuffer> m;
  for (;;) {
    const uint64_t generation = impl->replay != nullptr ? impl->replay->generation : 0;
    {
      Impl::Awaiting inside(impl);
      m = co_await impl->call->ReadBuffer();
    }
    // (One co_await per statement: GCC 12 mishandles them inside ||.)
    if (m || impl->replay == nullptr) break;
    if (!co_await internal::CallOpener::NextStreamAttempt(impl, generation)) break;
  }
  if (!m) co_return std::nullopt;
  impl->Commit();  // a message came: the server has the call
  if (impl->interceptors == nullptr) {
    if constexpr (std::is_same_v<Out, std::string>) {
      co_return std::move(*m).TakeString();
    } else {
      co_return std::move(*m);
    }
  }
  // Interceptors see (and may change) the message as one string.
  std::string flat = std::move(*m).TakeString();
  Status s = co_await impl->interceptors->PostRecvInitialMetadata(impl->call->initial_metadata());
  if (s.ok()) s = co_await impl->interceptors->PostRecvMessage(flat);
  if (!s.ok()) {
    impl->Fail(s);
    co_return std::nullopt;
  }
  co_return Out(std::move(flat));
}

void ClientCall::Cancel() {
  if (impl_->interceptors != nullptr) impl_->interceptors->PreSendCancel();
  if (impl_->replay != nullptr) {
    impl_->Commit();
    impl_->replay->cancelled = true;    // an attempt being opened is cancelled too
    impl_->replay->cancel_event.Set();  // a wait to retry ends now
  }
  impl_->call->Cancel();
}

void ClientCall::Run(Task<void> task) { impl_->loop->PostSpawn(std::move(task)); }

bool ClientCall::OnItsThread() const { return runtime::EventLoop::Current() == impl_->loop; }
bool ClientCall::OnChannelThread() const { return impl_->channel->CurrentIndex().has_value(); }

uint32_t ClientCall::max_receive_message_size() const {
  return impl_->call->max_receive_message_size();
}

Task<bool> ClientCall::ReadInitialMetadata() {
  for (;;) {
    const uint64_t generation = impl_->replay != nullptr ? impl_->replay->generation : 0;
    {
      Impl::Awaiting inside(impl_.get());
      co_await impl_->call->WaitForInitialMetadata();
    }
    if (impl_->call->initial_metadata_received() || impl_->replay == nullptr) break;
    if (!co_await internal::CallOpener::NextStreamAttempt(impl_.get(), generation)) break;
  }
  if (!impl_->call->headers_received() && impl_->call->finished()) {
    // None will come: the (empty) initial results are final now, before
    // anyone is told so.
    internal::CallAccess::SetInitialResults(*impl_->ctx, *impl_->call, impl_->sc->record->name(),
                                            /*publish=*/true);
  }
  co_return co_await AwaitPublishInitialMetadata();
}

bool ClientCall::PublishInitialMetadata() {
  ReadyOr<bool> published = AwaitPublishInitialMetadata();
  if (published.ready()) return published.await_resume();
  (void)LateAnswer("PublishInitialMetadata");
  return false;
}

ReadyOr<bool> ClientCall::AwaitPublishInitialMetadata() {
  if (!impl_->call->headers_received()) return false;
  auto publish = [](Impl* impl, Status s) {
    if (!s.ok()) impl->Fail(s);
    internal::CallAccess::SetInitialResults(*impl->ctx, *impl->call, impl->sc->record->name(),
                                            /*publish=*/true);
    return true;
  };
  if (impl_->interceptors == nullptr) return publish(impl_.get(), Status());
  ReadyOr<Status> hooks =
      impl_->interceptors->PostRecvInitialMetadata(impl_->call->initial_metadata());
  if (hooks.ready()) return publish(impl_.get(), hooks.await_resume());
  return [](Impl* impl, ReadyOr<Status> hooks, decltype(publish) publish) -> Task<bool> {
    Status s = co_await hooks;
    co_return publish(impl, std::move(s));
  }(impl_.get(), std::move(hooks), publish);
}

Task<Status> ClientCall::Finish() {
  for (;;) {
    const uint64_t generation = impl_->replay != nullptr ? impl_->replay->generation : 0;
    {
      Impl::Awaiting inside(impl_.get());
      (void)co_await impl_->call->Finish();  // FinishNow() reads the status
    }
    if (impl_->replay == nullptr) break;
    if (!co_await internal::CallOpener::NextStreamAttempt(impl_.get(), generation)) break;
  }
  if (impl_->replay != nullptr && impl_->replay->hedge != nullptr) {
    // A hedged stream's other copies read the context while they open:
    // the call ends once none does (they were cancelled at the commit).
    while (!impl_->replay->hedge->done) co_await impl_->replay->progress.Wait();
  }
  co_return co_await AwaitFinishNow();
}

bool ClientCall::finished() const { return impl_->call->finished(); }

Status ClientCall::FinishNow() {
  ReadyOr<Status> status = AwaitFinishNow();
  if (status.ready()) return status.await_resume();
  impl_->final_status = LateAnswer("FinishNow");
  return *impl_->final_status;
}

ReadyOr<Status> ClientCall::AwaitFinishNow() {
  internal::CallAccess::SetResults(*impl_->ctx, *impl_->call, impl_->call->trailing_metadata(),
                                   impl_->sc->record->name());
  if (impl_->replay != nullptr) {
    Status s =
        impl_->replay->failure
            ? *impl_->replay->failure
            : Status::FromAbsl(*impl_->call->status(), impl_->call->status_details().value_or(""));
    impl_->RecordCallEnd(s.error_code());
    if (impl_->interceptors == nullptr || impl_->replay->failure) return s;
  }
  if (impl_->interceptors == nullptr) {
    return Status::FromAbsl(*impl_->call->status(), impl_->call->status_details().value_or(""));
  }
  if (impl_->final_status) return *impl_->final_status;  // interceptors see it once
  Status s = impl_->failed ? *impl_->failed
                           : Status::FromAbsl(*impl_->call->status(),
                                              impl_->call->status_details().value_or(""));
  ReadyOr<Status> initial = Status();
  if (impl_->call->headers_received()) {
    initial = impl_->interceptors->PostRecvInitialMetadata(impl_->call->initial_metadata());
  }
  if (initial.ready()) {
    (void)initial.await_resume();
    ReadyOr<Status> hooks = impl_->interceptors->PostRecvStatus(
        std::move(s), impl_->call->initial_metadata(), impl_->call->trailing_metadata());
    if (hooks.ready()) {
      impl_->final_status = hooks.await_resume();
      return *impl_->final_status;
    }
    return [](Impl* impl, ReadyOr<Status> hooks) -> Task<Status> {
      impl->final_status = co_await hooks;
      co_return *impl->final_status;
    }(impl_.get(), std::move(hooks));
  }
  return [](Impl* impl, ReadyOr<Status> initial, Status s) -> Task<Status> {
    (void)co_await initial;
    impl->final_status = co_await impl->interceptors->PostRecvStatus(
        std::move(s), impl->call->initial_metadata(), impl->call->trailing_metadata());
    co_return *impl->final_status;
  }(impl_.get(), std::move(initial), std::move(s));
}

Status ClientCall::WriteNow(std::string_view message) {
  if (impl_->interceptors == nullptr && impl_->replay == nullptr) {
    return Status::FromAbsl(impl_->call->Enqueue(message));
  }
  return WriteNow(OutgoingMessage(std::string(message)));
}

Status ClientCall::WriteNow(const OutgoingMessage& message) {
  ReadyOr<Status> written = AwaitWriteNow(message);
  if (written.ready()) return written.await_resume();
  return LateAnswer("WriteNow");
}

ReadyOr<Status> ClientCall::AwaitWriteNow(const OutgoingMessage& message) {
  if (impl_->interceptors == nullptr) {
    impl_->Remember(message, true);
    return Status::FromAbsl(impl_->call->Enqueue(message));
  }
  auto enqueue = [](Impl* impl, Status s, std::string m) {
    if (!s.ok()) {
      impl->Fail(s);
      return s;
    }
    OutgoingMessage changed(std::move(m));
    impl->Remember(changed, true);
    return Status::FromAbsl(impl->call->Enqueue(changed));
  };
  // The hook writes the message back when it is answered, maybe later:
  // into a string that lives until then.
  auto m = std::make_shared<std::string>(message.bytes());
  ReadyOr<Status> hooks = impl_->interceptors->PreSendMessage(*m);
  if (hooks.ready()) return enqueue(impl_.get(), hooks.await_resume(), std::move(*m));
  return [](Impl* impl, ReadyOr<Status> hooks, std::shared_ptr<std::string> m,
            decltype(enqueue) enqueue) -> Task<Status> {
    Status s = co_await hooks;
    co_return enqueue(impl, std::move(s), std::move(*m));
  }(impl_.get(), std::move(hooks), m, enqueue);
}

}  // namespace ringrpc
