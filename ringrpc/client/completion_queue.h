// ringrpc/client/completion_queue.h — grpc++'s CompletionQueue and Alarm: the
// classic async API's delivery point. A call's I/O runs on ringrpc's CQ
// threads; a CompletionQueue is only where its completions (tags) are
// delivered to the threads that call Next.
//
//   ringrpc::CompletionQueue cq;
//   auto rpc = stub->PrepareAsyncSayHello(&ctx, request, &cq);
//   rpc->StartCall();
//   rpc->Finish(&reply, &status, (void*)1);
//   void* tag;
//   bool ok;
//   while (cq.Next(&tag, &ok)) { ... }   // false once shut down and drained
//
// Rules, as in grpc++: any number of threads may call Next/AsyncNext on one
// queue; every operation started with a tag delivers that tag exactly once;
// after Shutdown, Next returns the tags still owed and then false. Where
// grpc++ aborts, ringrpc defines the outcome:
// - An operation started after Shutdown is not performed: its tag is
//   delivered with ok == false while the queue has not yet reported its
//   end, and dropped after (Next has returned false: no one would see it).
// - A queue destroyed with tags owed (or undelivered) drops them: the
//   operations still run to their end, their tags go nowhere, nothing
//   leaks.
// Threading: every method of CompletionQueue may be called from any thread.
// An Alarm, like grpc++'s, is used by one thread at a time. On one of
// ringrpc's CQ threads (inside a callback, reaction or coroutine) only a
// polling AsyncNext (a deadline already past) is fit: Next, or a future
// deadline, sleeps that thread, and the tags it would deliver with it.
#ifndef RINGRPC_CLIENT_COMPLETION_QUEUE_H_
#define RINGRPC_CLIENT_COMPLETION_QUEUE_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <utility>

#include "ringrpc/base/mutex.h"

namespace ringrpc {

namespace internal {

using CqClock = std::chrono::steady_clock;

// Any std::chrono time point as a point on the steady clock (a
// system_clock deadline, as grpc++ takes, is converted once, now).
template <typename Clock, typename Dur>
CqClock::time_point ToCqTime(const std::chrono::time_point<Clock, Dur>& t) {
  if constexpr (std::is_same_v<Clock, CqClock>) {
    return std::chrono::time_point_cast<CqClock::duration>(t);
  } else {
    const auto now = Clock::now();
    if (t <= now) return CqClock::now();
    const auto left = t - now;
    // Far deadlines (time_point::max()) saturate instead of overflowing.
    if (left > std::chrono::hours(24 * 365 * 100)) return CqClock::time_point::max();
    return CqClock::now() + std::chrono::duration_cast<CqClock::duration>(left);
  }
}

// The queue's shared state: the queue object and every operation that owes
// it a tag hold it, so an operation ending after the queue is gone is safe.
class CqCore {
 public:
  enum class Next { kEvent, kShutdown, kTimeout };
  struct Timer {
    CqClock::time_point at;
    uint64_t id = 0;  // 0: not set
    friend bool operator<(const Timer& a, const Timer& b) {
      return a.at != b.at ? a.at < b.at : a.id < b.id;
    }
  };

  // Owes `tag`: true. False when the queue is shut down: the operation must
  // not run (the tag was queued with ok == false, or dropped, see above).
  bool Begin(void* tag);
  // Delivers a tag Begin accepted.
  void End(void* tag, bool ok);
  // A tag delivered with `ok_when_due` at `at` unless EndTimer comes first.
  // Its id is 0 when refused (as Begin).
  Timer BeginTimer(void* tag, CqClock::time_point at, bool ok_when_due);
  // Delivers a timer's tag now with `ok`; false if it was already delivered.
  bool EndTimer(const Timer& timer, bool ok);
  // The timer's tag is still owed (neither due nor ended, the queue alive).
  bool TimerPending(const Timer& timer);

  Next Wait(void** tag, bool* ok, CqClock::time_point deadline);
  void Shutdown();
  // The queue object is gone: drops what is queued and whatever comes.
  void Close();

 private:
  struct Event {
    void* tag;
    bool ok;
  };
  struct TimedTag {
    void* tag;
    bool ok;
  };
  bool RefusedLocked(void* tag) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PushLocked(void* tag, bool ok) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FireDueLocked(CqClock::time_point now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Mutex mu_;
  CondVar cv_;
  std::deque<Event> events_ ABSL_GUARDED_BY(mu_);
  std::map<Timer, TimedTag> timers_ ABSL_GUARDED_BY(mu_);
  uint64_t next_timer_id_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t pending_ ABSL_GUARDED_BY(mu_) = 0;     // tags owed, timers included
  uint64_t wake_epoch_ ABSL_GUARDED_BY(mu_) = 0;  // a new earliest timer, shutdown
  int waiters_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  bool reported_shutdown_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

struct CqAccess;

}  // namespace internal

class CompletionQueue {
 public:
  enum NextStatus { SHUTDOWN, GOT_EVENT, TIMEOUT };

  CompletionQueue();
  // Shuts the queue down; tags still owed or undelivered are dropped.
  ~CompletionQueue();
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  // Blocks (asleep) until a tag is delivered: true, with *tag and *ok. False
  // once the queue is shut down and every tag owed has been delivered.
  bool Next(void** tag, bool* ok) {
    return core_->Wait(tag, ok, internal::CqClock::time_point::max()) ==
           internal::CqCore::Next::kEvent;
  }
  // As Next, giving up at `deadline` (any std::chrono time point; a past
  // one polls): GOT_EVENT, SHUTDOWN or TIMEOUT.
  template <typename T>
  NextStatus AsyncNext(void** tag, bool* ok, const T& deadline) {
    switch (core_->Wait(tag, ok, internal::ToCqTime(deadline))) {
      case internal::CqCore::Next::kEvent:
        return GOT_EVENT;
      case internal::CqCore::Next::kShutdown:
        return SHUTDOWN;
      case internal::CqCore::Next::kTimeout:
        break;
    }
    return TIMEOUT;
  }
  // No new operations; Next returns false after the tags owed are delivered.
  void Shutdown() { core_->Shutdown(); }

 private:
  friend struct internal::CqAccess;
  std::shared_ptr<internal::CqCore> core_;
};

namespace internal {
struct CqAccess {
  static const std::shared_ptr<CqCore>& Core(CompletionQueue* cq) { return cq->core_; }
};
}  // namespace internal

// grpc++'s Alarm: a tag delivered on a CompletionQueue at a deadline (ok ==
// true), or earlier by Cancel (ok == false). Destroying a set alarm cancels
// it. Setting one that is already set cancels the earlier setting first.
class Alarm {
 public:
  Alarm() = default;
  ~Alarm() { Cancel(); }
  Alarm(const Alarm&) = delete;
  Alarm& operator=(const Alarm&) = delete;
  Alarm(Alarm&& other) noexcept
      : core_(std::move(other.core_)), timer_(std::exchange(other.timer_, {})) {}
  Alarm& operator=(Alarm&& other) noexcept {
    if (this != &other) {
      Cancel();
      core_ = std::move(other.core_);
      timer_ = std::exchange(other.timer_, {});
    }
    return *this;
  }

  template <typename T>
  void Set(CompletionQueue* cq, const T& deadline, void* tag) {
    Cancel();
    core_ = internal::CqAccess::Core(cq);
    timer_ = core_->BeginTimer(tag, internal::ToCqTime(deadline), /*ok_when_due=*/true);
  }
  // The tag now with ok == false, if the alarm is set and has not fired.
  void Cancel() {
    if (core_ != nullptr && timer_.id != 0) core_->EndTimer(timer_, false);
    timer_ = {};
    core_.reset();
  }

 private:
  std::shared_ptr<internal::CqCore> core_;
  internal::CqCore::Timer timer_;
};

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_COMPLETION_QUEUE_H_
