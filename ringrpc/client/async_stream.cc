#include "ringrpc/client/async_stream.h"

#include <atomic>
#include <deque>
#include <utility>
#include <vector>

#include "ringrpc/base/mutex.h"

namespace ringrpc {
namespace internal {

// A stream in the CompletionQueue form is a callback reactor whose
// reactions deliver tags: the reactor core runs the call (on a CQ thread,
// with every feature of the callback form) and reports each operation
// once, in order; this class remembers whose tag each report is.
// Shared by the user's stream object and the running call: freed when both
// are done with it.
class AsyncStreamCore final : public ClientReactorBase {
 public:
  AsyncStreamCore(std::shared_ptr<Channel> channel, const char* method, ClientContext* context,
                  CompletionQueue* cq, ReactorKind kind, std::string request,
                  google::protobuf::MessageLite* response)
      : context_(context), cq_(cq != nullptr ? CqAccess::Core(cq) : nullptr) {
    BindReactor(this, std::move(channel), method, context, kind, std::move(request), response);
  }

  void Start(void* tag) {
    if (cq_ == nullptr || !cq_->Begin(tag)) return;
    bool again;  // a second StartCall: its tag with ok false
    bool hold;
    {
      MutexLock lock(&mu_);
      again = started_;
      started_ = true;
      hold = !again && finish_tag_ == nullptr;  // Finish came first: no hold
      if (!again && !hold) hold_released_ = true;
    }
    if (again) {
      cq_->End(tag, false);
      return;
    }
    refs_.fetch_add(1, std::memory_order_relaxed);  // the running call's
    // Held until Finish (or the object's end): the messages that came
    // before the status stay readable however late Read is called, where
    // a reactor would end at the status.
    if (hold) AddHold();
    StartCall();
    cq_->End(tag, true);
  }

  void ReadInitialMetadata(void* tag) {
    if (cq_ == nullptr || !cq_->Begin(tag)) return;
    bool ok = false;  // a second request, or the call over: ok false
    {
      MutexLock lock(&mu_);
      if (!metadata_asked_) {
        metadata_asked_ = true;
        if (!metadata_known_ && !done_) {
          metadata_tag_ = tag;  // delivered by OnReadInitialMetadataDone
          return;
        }
        ok = metadata_ok_;
      }
    }
    cq_->End(tag, ok);
  }

  void Read(google::protobuf::MessageLite* out, void* tag) {
    if (!Owe(tag, &reads_)) return;
    StartReadBytes(out);
  }

  void ReadRaw(std::string* out, void* tag) {
    if (!Owe(tag, &reads_)) return;
    StartReadRaw(out);
  }

  void Write(std::string bytes, WriteOptions options, void* tag) {
    if (!Owe(tag, &writes_)) return;
    StartWriteBytes(std::move(bytes), options.is_last_message(), !options.get_no_compression());
  }

  void WritesDone(void* tag) {
    if (!Owe(tag, &writes_)) return;
    StartWritesDoneOp();
  }

  void Finish(Status* status, void* tag) {
    if (cq_ == nullptr) {
      *status = Status(StatusCode::INVALID_ARGUMENT,
                       "Finish on a stream made with no CompletionQueue (a null cq)");
      return;
    }
    if (!cq_->Begin(tag)) {
      context_->TryCancel();  // the queue is shut down: no one to tell
      ReleaseHold();
      return;
    }
    bool now = false;
    bool second = false;
    Status final;
    {
      MutexLock lock(&mu_);
      if (finish_tag_ != nullptr || finished_) {
        second = true;
      } else if (done_) {
        now = true;
        finished_ = true;
        final = final_;
      } else {
        finish_tag_ = tag;
        finish_status_ = status;
      }
    }
    if (second) {
      cq_->End(tag, false);
      return;
    }
    ReleaseHold();  // the call may now end (and deliver the tag)
    if (now) {
      *status = std::move(final);
      cq_->End(tag, true);
    }
  }

  // The user's object is gone. A call never started ends here: its owed
  // tags are delivered with ok false.
  void Release() {
    bool started;
    {
      MutexLock lock(&mu_);
      started = started_;
    }
    if (!started && cq_ != nullptr) {
      for (void* tag : TakeOwed(nullptr)) cq_->End(tag, false);
    }
    ReleaseHold();  // never finished: the call ends on its own
    Unref();
  }

 private:
  // Reactions, on the call's CQ thread.
  void OnReadInitialMetadataDone(bool ok) override {
    void* tag;
    {
      MutexLock lock(&mu_);
      metadata_known_ = true;
      metadata_ok_ = ok;
      tag = std::exchange(metadata_tag_, nullptr);
    }
    if (tag != nullptr) cq_->End(tag, ok);
  }
  void OnReadDone(bool ok) override { cq_->End(Next(&reads_), ok); }
  void OnWriteDone(bool ok) override { cq_->End(Next(&writes_), ok); }
  void OnWritesDoneDone(bool ok) override { cq_->End(Next(&writes_), ok); }
  void OnDone(const Status& s) override {
    Status* status;
    void* finish;
    std::vector<void*> owed;
    {
      MutexLock lock(&mu_);
      done_ = true;
      final_ = s;
      finish = finish_tag_;
      status = finish_status_;
      finished_ = status != nullptr;
      owed = TakeOwedLocked();
    }
    // Operations the call ended before running (dropped by the reactor).
    for (void* tag : owed) cq_->End(tag, false);
    if (status != nullptr) {
      *status = s;
      cq_->End(finish, true);
    }
    Unref();
  }

  // Once: the hold Start took.
  void ReleaseHold() {
    {
      MutexLock lock(&mu_);
      if (!started_ || hold_released_) return;
      hold_released_ = true;
    }
    RemoveHold();
  }

  // Records a tag the reactor will report (false: refused, or the call is
  // over and it was delivered with ok false).
  bool Owe(void* tag, std::deque<void*>* queue) {
    if (cq_ == nullptr || !cq_->Begin(tag)) return false;
    {
      MutexLock lock(&mu_);
      if (!done_) {
        queue->push_back(tag);
        return true;
      }
    }
    cq_->End(tag, false);
    return false;
  }

  void* Next(std::deque<void*>* queue) {
    MutexLock lock(&mu_);
    void* tag = queue->front();
    queue->pop_front();
    return tag;
  }

  std::vector<void*> TakeOwed(std::nullptr_t) {
    MutexLock lock(&mu_);
    std::vector<void*> owed = TakeOwedLocked();
    if (finish_tag_ != nullptr) owed.push_back(std::exchange(finish_tag_, nullptr));
    finish_status_ = nullptr;
    return owed;
  }

  std::vector<void*> TakeOwedLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<void*> owed(reads_.begin(), reads_.end());
    owed.insert(owed.end(), writes_.begin(), writes_.end());
    if (metadata_tag_ != nullptr) owed.push_back(std::exchange(metadata_tag_, nullptr));
    reads_.clear();
    writes_.clear();
    return owed;
  }

  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  std::atomic<int> refs_{1};  // the user's object, and the running call
  ClientContext* const context_;
  const std::shared_ptr<CqCore> cq_;
  Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool hold_released_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<void*> reads_ ABSL_GUARDED_BY(mu_);   // reported in order
  std::deque<void*> writes_ ABSL_GUARDED_BY(mu_);  // writes and WritesDone, in order
  bool metadata_asked_ ABSL_GUARDED_BY(mu_) = false;
  bool metadata_known_ ABSL_GUARDED_BY(mu_) = false;
  bool metadata_ok_ ABSL_GUARDED_BY(mu_) = false;
  void* metadata_tag_ ABSL_GUARDED_BY(mu_) = nullptr;
  void* finish_tag_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;  // Finish's tag delivered
  Status* finish_status_ ABSL_GUARDED_BY(mu_) = nullptr;
  Status final_ ABSL_GUARDED_BY(mu_);
};

AsyncStreamHandle::AsyncStreamHandle(std::shared_ptr<Channel> channel, const char* method,
                                     ClientContext* context, CompletionQueue* cq, ReactorKind kind,
                                     std::string request, google::protobuf::MessageLite* response)
    : core_(new AsyncStreamCore(std::move(channel), method, context, cq, kind, std::move(request),
                                response)) {}

AsyncStreamHandle::~AsyncStreamHandle() { core_->Release(); }

void AsyncStreamHandle::StartCall(void* tag) { core_->Start(tag); }

void AsyncStreamHandle::ReadInitialMetadata(void* tag) { core_->ReadInitialMetadata(tag); }

void AsyncStreamHandle::Read(google::protobuf::MessageLite* out, void* tag) {
  core_->Read(out, tag);
}

void AsyncStreamHandle::Read(std::string* raw, void* tag) { core_->ReadRaw(raw, tag); }

void AsyncStreamHandle::Write(std::string bytes, WriteOptions options, void* tag) {
  core_->Write(std::move(bytes), options, tag);
}

void AsyncStreamHandle::WritesDone(void* tag) { core_->WritesDone(tag); }

void AsyncStreamHandle::Finish(Status* status, void* tag) { core_->Finish(status, tag); }

}  // namespace internal
}  // namespace ringrpc
