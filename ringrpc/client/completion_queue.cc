#include "ringrpc/client/completion_queue.h"

#include <algorithm>

namespace ringrpc {
namespace internal {

// The queue refuses work once shut down (the caller must not run it). The
// tag still reaches a Next that has not yet reported the end.
bool CqCore::RefusedLocked(void* tag) {
  if (!shutdown_) return false;
  if (!reported_shutdown_ && !closed_) PushLocked(tag, false);
  return true;
}

void CqCore::PushLocked(void* tag, bool ok) {
  if (closed_) return;
  events_.push_back(Event{tag, ok});
  if (waiters_ > 0) cv_.Signal();
}

bool CqCore::Begin(void* tag) {
  MutexLock lock(&mu_);
  if (RefusedLocked(tag)) return false;
  ++pending_;
  return true;
}

void CqCore::End(void* tag, bool ok) {
  bool wake_one = false, wake_all = false;
  {
    MutexLock lock(&mu_);
    --pending_;
    if (!closed_) events_.push_back(Event{tag, ok});
    wake_one = waiters_ > 0;
    // The last tag owed after Shutdown: every waiter may now return false.
    wake_all = wake_one && shutdown_ && pending_ == 0;
  }
  // Woken after the unlock: the waiter does not wake into a held lock.
  if (wake_all) {
    cv_.SignalAll();
  } else if (wake_one) {
    cv_.Signal();
  }
}

CqCore::Timer CqCore::BeginTimer(void* tag, CqClock::time_point at, bool ok_when_due) {
  MutexLock lock(&mu_);
  if (RefusedLocked(tag)) return Timer{};
  ++pending_;
  Timer t{at, next_timer_id_++};
  const bool earliest = timers_.empty() || t < timers_.begin()->first;
  timers_.emplace(t, TimedTag{tag, ok_when_due});
  // Waiters sleep until the earliest timer: a new earliest one wakes them
  // to sleep shorter.
  if (earliest && waiters_ > 0) {
    ++wake_epoch_;
    cv_.SignalAll();
  }
  return t;
}

bool CqCore::EndTimer(const Timer& timer, bool ok) {
  MutexLock lock(&mu_);
  auto it = timers_.find(timer);
  if (it == timers_.end()) return false;
  void* tag = it->second.tag;
  timers_.erase(it);
  --pending_;
  PushLocked(tag, ok);
  if (shutdown_ && pending_ == 0 && waiters_ > 0) cv_.SignalAll();
  return true;
}

bool CqCore::TimerPending(const Timer& timer) {
  MutexLock lock(&mu_);
  FireDueLocked(CqClock::now());
  return timers_.count(timer) != 0;
}

void CqCore::FireDueLocked(CqClock::time_point now) {
  while (!timers_.empty() && timers_.begin()->first.at <= now) {
    auto it = timers_.begin();
    const TimedTag due = it->second;
    timers_.erase(it);
    --pending_;
    PushLocked(due.tag, due.ok);
  }
}

CqCore::Next CqCore::Wait(void** tag, bool* ok, CqClock::time_point deadline) {
  MutexLock lock(&mu_);
  for (;;) {
    const CqClock::time_point now = CqClock::now();
    FireDueLocked(now);
    if (!events_.empty()) {
      *tag = events_.front().tag;
      *ok = events_.front().ok;
      events_.pop_front();
      return Next::kEvent;
    }
    if (closed_ || (shutdown_ && pending_ == 0)) {
      reported_shutdown_ = true;
      return Next::kShutdown;
    }
    if (now >= deadline) return Next::kTimeout;
    const CqClock::time_point wake =
        timers_.empty() ? deadline : std::min(deadline, timers_.begin()->first.at);
    const uint64_t epoch = wake_epoch_;
    ++waiters_;
    auto woken = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !events_.empty() || closed_ || (shutdown_ && pending_ == 0) || wake_epoch_ != epoch;
    };
    if (wake == CqClock::time_point::max()) {
      cv_.Wait(&mu_, woken);
    } else {
      cv_.WaitUntil(&mu_, wake, woken);
    }
    --waiters_;
  }
}

void CqCore::Shutdown() {
  MutexLock lock(&mu_);
  if (shutdown_) return;
  shutdown_ = true;
  ++wake_epoch_;
  cv_.SignalAll();
}

void CqCore::Close() {
  MutexLock lock(&mu_);
  shutdown_ = true;
  closed_ = true;
  events_.clear();
  // Alarms still set keep their ids: cancelling one later finds nothing.
  pending_ -= timers_.size();
  timers_.clear();
  ++wake_epoch_;
  cv_.SignalAll();
}

}  // namespace internal

CompletionQueue::CompletionQueue() : core_(std::make_shared<internal::CqCore>()) {}

CompletionQueue::~CompletionQueue() { core_->Close(); }

}  // namespace ringrpc
