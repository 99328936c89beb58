// ringrpc/client/runtime/loop_event.h — a one-waiter, auto-reset event whose
// wake-up runs on the next pass of the loop (EventLoop::Defer: an intrusive
// queue, no allocation), never inline.
// Used to wake a coroutine from inside a callback (e.g. nghttp2's) without
// re-entering the code that called back. LoopCondition: the same for any
// number of waiters, each woken by NotifyAll.
//
// Threading: its loop's thread only.
//
//   while (!ready) co_await event.Wait();   // in a coroutine
//   ready = true; event.Set();               // elsewhere on the loop
//
//   while (busy) co_await condition.Wait();  // in several coroutines
//   busy = false; condition.NotifyAll();     // elsewhere on the loop
#ifndef RINGRPC_CLIENT_RUNTIME_LOOP_EVENT_H_
#define RINGRPC_CLIENT_RUNTIME_LOOP_EVENT_H_

#include <coroutine>
#include <optional>
#include <utility>

#include "ringrpc/base/runtime.h"
#include "ringrpc/base/task.h"
#include "ringrpc/client/runtime/event_loop.h"

namespace ringrpc::runtime {

class LoopEvent final : private EventLoop::Deferred {
 public:
  explicit LoopEvent(EventLoop& loop) : loop_(loop) {}
  LoopEvent(const LoopEvent&) = delete;
  LoopEvent& operator=(const LoopEvent&) = delete;
  ~LoopEvent() { loop_.Undefer(this); }

  // Signals; a waiter (now or the next one) wakes on the next loop pass.
  void Set() {
    set_ = true;
    if (waiter_) loop_.Defer(this);
  }

  class Awaiter {
   public:
    explicit Awaiter(LoopEvent* e) : e_(e) {}
    Awaiter(const Awaiter&) = delete;
    Awaiter& operator=(const Awaiter&) = delete;
    ~Awaiter() {
      // The awaiting frame died while suspended: forget it.
      if (suspended_ && e_->waiter_ == handle_) {
        e_->waiter_ = {};
        e_->loop_.Undefer(e_);
      }
    }
    bool await_ready() {
      if (!e_->set_) return false;
      e_->set_ = false;
      return true;
    }
    void await_suspend(std::coroutine_handle<> h) {
      handle_ = h;
      suspended_ = true;
      e_->waiter_ = h;
      if (e_->set_) e_->loop_.Defer(e_);
    }
    void await_resume() { suspended_ = false; }

   private:
    LoopEvent* e_;
    std::coroutine_handle<> handle_;
    bool suspended_ = false;
  };
  Awaiter Wait() { return Awaiter(this); }

 private:
  void OnDeferred() override {
    set_ = false;
    if (auto h = std::exchange(waiter_, {})) h.resume();  // last use of this
  }

  EventLoop& loop_;
  std::coroutine_handle<> waiter_;
  bool set_ = false;
};

// Where any number of coroutines on one loop wait until NotifyAll wakes
// them all, each on the next loop pass (EventLoop::Defer), never inline.
// It holds no state: a NotifyAll with no one waiting wakes nobody later,
// so a waiter looks at its condition before each wait (on one thread
// nothing comes between the look and the wait). No allocation: each
// waiter's awaiter, in its frame, is the list node.
class LoopCondition {
 public:
  explicit LoopCondition(EventLoop& loop) : loop_(loop) {}
  LoopCondition(const LoopCondition&) = delete;
  LoopCondition& operator=(const LoopCondition&) = delete;
  // Waiters still here are forgotten (they never resume): a condition
  // outlives its waiters, or their frames are destroyed with it.
  ~LoopCondition() {
    while (head_ != nullptr) head_->Unlink();
  }

  class Awaiter final : private EventLoop::Deferred {
   public:
    explicit Awaiter(LoopCondition* c) : c_(c) {}
    Awaiter(const Awaiter&) = delete;
    Awaiter& operator=(const Awaiter&) = delete;
    ~Awaiter() {
      // The awaiting frame died while suspended: forget it.
      Unlink();
      if (loop_ != nullptr) loop_->Undefer(this);
    }
    bool await_ready() { return false; }
    void await_suspend(std::coroutine_handle<> h) {
      handle_ = h;
      loop_ = &c_->loop_;
      next_ = c_->head_;
      if (next_ != nullptr) next_->prev_ = this;
      c_->head_ = this;
      linked_ = true;
    }
    void await_resume() {}

   private:
    friend class LoopCondition;
    void Unlink() {
      if (!linked_) return;
      (prev_ != nullptr ? prev_->next_ : c_->head_) = next_;
      if (next_ != nullptr) next_->prev_ = prev_;
      prev_ = next_ = nullptr;
      linked_ = false;
    }
    void OnDeferred() override { std::exchange(handle_, {}).resume(); }

    LoopCondition* c_;
    EventLoop* loop_ = nullptr;  // set once suspended
    std::coroutine_handle<> handle_;
    Awaiter* prev_ = nullptr;
    Awaiter* next_ = nullptr;
    bool linked_ = false;
  };
  Awaiter Wait() { return Awaiter(this); }

  // Wakes every coroutine waiting now (on the next loop pass).
  void NotifyAll() {
    while (head_ != nullptr) {
      Awaiter* w = head_;
      w->Unlink();
      loop_.Defer(w);
    }
  }
  bool has_waiters() const { return head_ != nullptr; }

 private:
  EventLoop& loop_;
  Awaiter* head_ = nullptr;
};

// `e` rung, as a task (what WithTimeout bounds): true.
inline Task<bool> Rung(LoopEvent* e) {
  co_await e->Wait();
  co_return true;
}

// Runs `task` with a time limit: nullopt if `timeout` passed first, or
// Interrupt() came first (the task was destroyed, which cancels it).
template <typename T>
class WithTimeout final : private TimerCallback {
 public:
  WithTimeout(Runtime& loop, Task<T> task, Duration timeout)
      : loop_(loop), task_(std::move(task)), timeout_(timeout) {}
  WithTimeout(const WithTimeout&) = delete;
  WithTimeout& operator=(const WithTimeout&) = delete;
  ~WithTimeout() {
    if (timer_ != 0) loop_.CancelTimer(timer_);
  }

  // Ends the wait now, as if its time were up: the task is destroyed and
  // the awaiting coroutine resumes with nullopt (inline, when it is
  // suspended here). Before the co_await, the wait ends at once; after it
  // ended, a no-op. On the loop's thread, never from inside the task.
  void Interrupt() {
    if (timed_out_ || done_) return;
    if (awaiting_) {
      loop_.CancelTimer(timer_);
      OnTimer();
    } else {
      timed_out_ = true;  // await_ready says so
    }
  }

  bool await_ready() { return timed_out_; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> h) {
    awaiting_ = h;
    task_.handle().promise().continuation = h;
    timer_ = loop_.ScheduleTimer(loop_.Now() + timeout_, this);
    return task_.handle();
  }
  std::optional<T> await_resume() {
    done_ = true;
    if (timer_ != 0) {
      loop_.CancelTimer(timer_);
      timer_ = 0;
    }
    if (timed_out_) return std::nullopt;
    return std::move(task_.result());
  }

 private:
  void OnTimer() override {
    timer_ = 0;
    timed_out_ = true;
    task_.Reset();
    awaiting_.resume();
  }
  Runtime& loop_;
  Task<T> task_;
  Duration timeout_;
  std::coroutine_handle<> awaiting_;
  uint64_t timer_ = 0;
  bool timed_out_ = false;
  bool done_ = false;  // resumed: Interrupt() is a no-op
};

}  // namespace ringrpc::runtime

#endif  // RINGRPC_CLIENT_RUNTIME_LOOP_EVENT_H_
