// FromServerContext's cancellation watch, and the Status conversions.
//
// grpc++ gives a synchronous or callback handler no event when its call is
// cancelled, only ServerContextBase::IsCancelled(). So one thread (started
// with the first watch, asleep while there is none) asks each watched
// server call every 10 ms and cancels the ringrpc calls made from those
// that ended. A watch lasts as long as its ClientContext; the question is
// asked under the watch list's lock, so no server context is read after
// the ClientContext made from it is gone.
#include "ringrpc/grpcpp/interop.h"

#include <chrono>
#include <cstddef>
#include <list>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "ringrpc/base/mutex.h"

namespace ringrpc {
namespace internal {

namespace {

class CancelWatch {
 public:
  struct Entry {
    const grpc::ServerContextBase* server;
    std::shared_ptr<CancelState> cancel;
  };
  using Handle = std::list<Entry>::iterator;

  static CancelWatch& Get() {
    static CancelWatch* const watch = new CancelWatch;  // lives as long as the process
    return *watch;
  }

  Handle Add(const grpc::ServerContextBase* server, std::shared_ptr<CancelState> cancel) {
    MutexLock lock(&mu_);
    if (!started_) {
      started_ = true;
      std::thread([this] { Run(); }).detach();
    }
    entries_.push_front(Entry{server, std::move(cancel)});
    ++watching_;
    wake_.Signal();
    return entries_.begin();
  }

  // After this returns, `h`'s server context is not read again.
  void Remove(Handle h) {
    MutexLock lock(&mu_);
    if (h->server != nullptr) --watching_;
    entries_.erase(h);
  }

 private:
  static constexpr std::chrono::milliseconds kInterval{10};

  void Run() {
    std::vector<std::shared_ptr<CancelState>> ended;
    for (;;) {
      {
        MutexLock lock(&mu_);
        wake_.Wait(&mu_, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return watching_ > 0; });
        for (Entry& e : entries_) {
          if (e.server != nullptr && e.server->IsCancelled()) {
            e.server = nullptr;  // asked no more; its ClientContext removes the entry
            --watching_;
            ended.push_back(std::move(e.cancel));
          }
        }
      }
      for (const auto& c : ended) c->Cancel();  // outside the lock: posts to CQ threads
      ended.clear();
      std::this_thread::sleep_for(kInterval);
    }
  }

  Mutex mu_;
  CondVar wake_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  std::list<Entry> entries_ ABSL_GUARDED_BY(mu_);
  size_t watching_ ABSL_GUARDED_BY(mu_) = 0;  // entries with a server to ask
};

}  // namespace

struct ServerContextLink {
  static std::unique_ptr<ClientContext> Make(const grpc::ServerContextBase& server,
                                             PropagationOptions options) {
    auto ctx = std::make_unique<ClientContext>();
    if (options.deadline()) {
      const std::chrono::system_clock::time_point d = server.deadline();
      if (d != std::chrono::system_clock::time_point::max()) {
        ctx->deadline_cap_ = d;
        ctx->deadline_ = d;
      }
    }
    if (options.cancellation()) {
      if (server.IsCancelled()) {
        ctx->TryCancel();
      } else {
        CancelWatch::Handle h = CancelWatch::Get().Add(&server, ctx->cancel_);
        ctx->server_link_ =
            std::shared_ptr<void>(nullptr, [h](void*) { CancelWatch::Get().Remove(h); });
      }
    }
    return ctx;
  }
};

}  // namespace internal

std::unique_ptr<ClientContext> ClientContext::FromServerContext(
    const grpc::ServerContextBase& server_context, PropagationOptions options) {
  return internal::ServerContextLink::Make(server_context, options);
}

std::unique_ptr<ClientContext> ClientContext::FromCallbackServerContext(
    const grpc::CallbackServerContext& server_context, PropagationOptions options) {
  return internal::ServerContextLink::Make(server_context, options);
}

grpc::Status ToGrpcStatus(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.error_code()), status.error_message(),
                      status.error_details());
}

Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return Status();
  return Status(static_cast<StatusCode>(status.error_code()), status.error_message(),
                status.error_details());
}

}  // namespace ringrpc
