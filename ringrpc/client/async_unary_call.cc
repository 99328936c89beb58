#include "ringrpc/client/async_unary_call.h"

#include <atomic>
#include <utility>

#include "ringrpc/base/byte_buffer.h"
#include "ringrpc/base/mutex.h"

namespace ringrpc {
namespace internal {

// Shared by the reader (the user's handle) and the running call: freed
// when both are done with it. Finish and the call's end meet under mu_;
// whichever comes second completes (parses, sets the status, delivers).
class AsyncUnaryCore {
 public:
  AsyncUnaryCore(std::shared_ptr<Channel> channel, std::string method, ClientContext* context,
                 std::string request, CompletionQueue* cq)
      : channel_(std::move(channel)),
        method_(std::move(method)),
        context_(context),
        request_(std::move(request)),
        cq_(cq != nullptr ? CqAccess::Core(cq) : nullptr) {}

  void StartCall() {
    if (started_ || cq_ == nullptr) return;
    started_ = true;
    refs_.fetch_add(1, std::memory_order_relaxed);  // the call's
    // A raw pointer: the callback stays within std::function's own storage.
    channel_->UnaryCallAsync(std::move(method_), context_, std::move(request_), &reply_,
                             [core = this](Status s) { core->OnEnd(std::move(s)); });
  }

  void ReadInitialMetadata(void* tag) {
    if (cq_ == nullptr || !cq_->Begin(tag)) return;
    bool ok = false;  // a second request: ok false
    {
      MutexLock lock(&mu_);
      if (!metadata_asked_) {
        metadata_asked_ = true;
        if (!ended_) {
          metadata_tag_ = tag;  // delivered by OnEnd
          return;
        }
        ok = metadata_ok_;
      }
    }
    cq_->End(tag, ok);
  }

  void Finish(void* response, ReadResponseFn read, Status* status, void* tag) {
    if (cq_ == nullptr) {
      *status = Status(StatusCode::INVALID_ARGUMENT,
                       "Finish on a call made with no CompletionQueue (a null cq)");
      return;
    }
    if (!cq_->Begin(tag)) {
      // The queue is shut down: the tag went out (or was dropped) with ok
      // false; the call has no one to tell its end, so it stops.
      context_->TryCancel();
      return;
    }
    bool complete_now = false;
    bool second = false;
    {
      MutexLock lock(&mu_);
      if (finish_asked_) {
        second = true;
      } else {
        finish_asked_ = true;
        response_ = response;
        read_ = read;
        status_ = status;
        finish_tag_ = tag;
        complete_now = ended_;
      }
    }
    if (second) {
      cq_->End(tag, false);
      return;
    }
    if (complete_now) Complete();
  }

  // The reader is gone. A call it never started ends here: tags owed are
  // delivered with ok false (and *status is not touched).
  void Release() {
    if (!started_ && cq_ != nullptr) {
      void* tags[2];
      int n = 0;
      {
        MutexLock lock(&mu_);
        if (metadata_tag_ != nullptr) tags[n++] = std::exchange(metadata_tag_, nullptr);
        if (finish_asked_) tags[n++] = finish_tag_;
      }
      for (int i = 0; i < n; ++i) cq_->End(tags[i], false);
    }
    Unref();
  }

 private:
  // On the CQ thread that ran the call.
  void OnEnd(Status s) {
    void* metadata_tag = nullptr;
    bool metadata_ok;
    bool complete_now;
    {
      MutexLock lock(&mu_);
      final_ = std::move(s);
      ended_ = true;
      // A call that ended OK had headers; a failed one had them if the
      // server sent any metadata before its status.
      metadata_ok = metadata_ok_ = final_.ok() || !context_->GetServerInitialMetadata().empty();
      metadata_tag = std::exchange(metadata_tag_, nullptr);
      complete_now = finish_asked_;
    }
    if (metadata_tag != nullptr) cq_->End(metadata_tag, metadata_ok);
    if (complete_now) Complete();
    Unref();
  }

  // Once, after both the end and Finish; the delivery is the last touch of
  // what the caller owns (the reader may go the moment it is seen).
  void Complete() {
    *status_ = read_(final_, reply_, response_);
    cq_->End(finish_tag_, true);
  }

  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  std::atomic<int> refs_{1};  // the reader's, and the running call's
  const std::shared_ptr<Channel> channel_;
  std::string method_;  // moved into the call
  ClientContext* const context_;
  std::string request_;
  const std::shared_ptr<CqCore> cq_;
  bool started_ = false;  // the reader's thread
  ByteBuffer reply_;      // written by the call until OnEnd

  Mutex mu_;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_asked_ ABSL_GUARDED_BY(mu_) = false;
  bool metadata_asked_ ABSL_GUARDED_BY(mu_) = false;
  void* metadata_tag_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool metadata_ok_ ABSL_GUARDED_BY(mu_) = false;
  // Written before ended_ is set (under mu_), read after it was seen set.
  Status final_;
  void* response_ = nullptr;
  ReadResponseFn read_ = nullptr;
  Status* status_ = nullptr;
  void* finish_tag_ = nullptr;
};

AsyncUnaryHandle::AsyncUnaryHandle(std::shared_ptr<Channel> channel, std::string method,
                                   ClientContext* context, std::string request, CompletionQueue* cq)
    : core_(new AsyncUnaryCore(std::move(channel), std::move(method), context, std::move(request),
                               cq)) {}

AsyncUnaryHandle::~AsyncUnaryHandle() { core_->Release(); }

void AsyncUnaryHandle::StartCall() { core_->StartCall(); }

void AsyncUnaryHandle::ReadInitialMetadata(void* tag) { core_->ReadInitialMetadata(tag); }

void AsyncUnaryHandle::Finish(void* response, ReadResponseFn read, Status* status, void* tag) {
  core_->Finish(response, read, status, tag);
}

}  // namespace internal
}  // namespace ringrpc
