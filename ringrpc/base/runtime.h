// ringrpc/base/runtime.h — time and timers on the current thread: the interface the
// pool and the transport are written against.
//
// The pool needs two things from whatever runs it: the time, and cancellable
// timers on the current thread. A timer due now is how the pool spawns work
// and wakes a waiter later on the same thread (never inline, and cancellable
// if the waiter's frame is destroyed first). The io_uring completion-queue
// threads implement this (ringrpc/client/runtime's EventLoop); pool tests implement
// it with a fake clock and a deterministic executor
// (ringrpc/pool/testing/fake_runtime.h), so expiry, reaper ticks and timeouts are
// tested without sleeping.
//
// Threading: a Runtime belongs to one thread and is only called from it.
//
//   co_await SleepFor(loop, std::chrono::milliseconds(10));
#ifndef RINGRPC_BASE_RUNTIME_H_
#define RINGRPC_BASE_RUNTIME_H_

#include <coroutine>
#include <cstdint>

#include "ringrpc/base/time.h"

namespace ringrpc {

// Something a Runtime calls back when a timer fires. Intrusive: the runtime
// keeps the pointer, so the callback must cancel the timer before it dies.
class TimerCallback {
 public:
  virtual void OnTimer() = 0;

 protected:
  ~TimerCallback() = default;
};

class Runtime {
 public:
  virtual ~Runtime() = default;

  // The loop's notion of now. May be cached per loop turn; never goes back.
  virtual TimePoint Now() = 0;

  // Calls cb->OnTimer() on this runtime's thread at or after `deadline`,
  // unless CancelTimer(id) comes first. Returns a non-zero id.
  virtual uint64_t ScheduleTimer(TimePoint deadline, TimerCallback* cb) = 0;

  // Cancels a pending timer. Returns false if it already fired or is unknown.
  virtual bool CancelTimer(uint64_t id) = 0;
};

// Awaitable: resumes at `deadline` on `rt`'s thread. Destroying the awaiting
// frame while suspended cancels the timer (cancellation-safe).
class SleepUntil final : private TimerCallback {
 public:
  SleepUntil(Runtime& rt, TimePoint deadline) : rt_(rt), deadline_(deadline) {}
  SleepUntil(const SleepUntil&) = delete;
  SleepUntil& operator=(const SleepUntil&) = delete;
  ~SleepUntil() {
    if (timer_id_ != 0) rt_.CancelTimer(timer_id_);
  }

  bool await_ready() { return deadline_ <= rt_.Now(); }
  void await_suspend(std::coroutine_handle<> h) {
    waiting_ = h;
    timer_id_ = rt_.ScheduleTimer(deadline_, this);
  }
  void await_resume() noexcept {}

 private:
  void OnTimer() override {
    timer_id_ = 0;
    waiting_.resume();
  }

  Runtime& rt_;
  TimePoint deadline_;
  uint64_t timer_id_ = 0;
  std::coroutine_handle<> waiting_;
};

inline SleepUntil SleepFor(Runtime& rt, Duration d) { return SleepUntil(rt, rt.Now() + d); }

}  // namespace ringrpc

#endif  // RINGRPC_BASE_RUNTIME_H_
