// ringrpc/pool/testing/fake_runtime.h — a deterministic Runtime with a fake clock,
// and a harness for running coroutines on it. Test-only.
//
// Nothing happens until the test says so: RunReady() fires every timer that
// is due (in deadline order, FIFO among equals), AdvanceBy() moves the clock
// and fires what came due. Several FakeThreads on one OS thread simulate
// several CQ threads, each with its own ThreadContext (and so its own pool
// shards).
//
//   FakeThread t;
//   Started<int> op = t.Start(SomeTask());   // runs until its first await
//   t.AdvanceBy(std::chrono::seconds(1));
//   EXPECT_TRUE(op.done());
#ifndef RINGRPC_POOL_TESTING_FAKE_RUNTIME_H_
#define RINGRPC_POOL_TESTING_FAKE_RUNTIME_H_

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "ringrpc/base/task.h"
#include "ringrpc/base/time.h"
#include "ringrpc/pool/thread_context.h"

namespace ringrpc::pool::testing {

class FakeRuntime final : public Runtime {
 public:
  explicit FakeRuntime(TimePoint start = TimePoint{} + std::chrono::hours(1)) : now_(start) {}

  TimePoint Now() override { return now_; }
  uint64_t ScheduleTimer(TimePoint deadline, TimerCallback* cb) override {
    uint64_t id = ++next_id_;
    timers_.emplace(Key{deadline, id}, cb);
    return id;
  }
  bool CancelTimer(uint64_t id) override {
    for (auto it = timers_.begin(); it != timers_.end(); ++it) {
      if (it->first.id == id) {
        timers_.erase(it);
        return true;
      }
    }
    return false;
  }

  // Fires every timer due at Now(), including ones scheduled while firing.
  // Returns how many fired.
  size_t RunReady() {
    size_t n = 0;
    while (!timers_.empty() && timers_.begin()->first.deadline <= now_) {
      auto it = timers_.begin();
      TimerCallback* cb = it->second;
      timers_.erase(it);
      cb->OnTimer();
      ++n;
    }
    return n;
  }

  // Moves the clock forward by `d`, firing timers in deadline order at their
  // own deadlines.
  void AdvanceBy(Duration d) {
    TimePoint end = now_ + d;
    RunReady();
    while (!timers_.empty() && timers_.begin()->first.deadline <= end) {
      now_ = std::max(now_, timers_.begin()->first.deadline);
      RunReady();
    }
    now_ = end;
    RunReady();
  }

  size_t pending_timers() const { return timers_.size(); }
  std::optional<TimePoint> next_deadline() const {
    if (timers_.empty()) return std::nullopt;
    return timers_.begin()->first.deadline;
  }

 private:
  struct Key {
    TimePoint deadline;
    uint64_t id;
    bool operator<(const Key& o) const {
      return deadline != o.deadline ? deadline < o.deadline : id < o.id;
    }
  };
  TimePoint now_;
  uint64_t next_id_ = 0;
  std::map<Key, TimerCallback*> timers_;
};

// A coroutine started by a test. Destroying it (or Cancel()) destroys the
// frame wherever it is suspended: that is how tests cancel.
template <typename T>
class Started {
 public:
  Started() = default;
  explicit Started(Task<T> task) : task_(std::move(task)) {}
  bool done() const { return task_.done(); }
  T& result() { return task_.result(); }
  void Cancel() { task_.Reset(); }
  bool running() const { return task_.valid() && !task_.done(); }

 private:
  Task<T> task_;
};

// One simulated thread: a ThreadContext with a FakeRuntime. Every method
// enters the context first.
class FakeThread {
 public:
  explicit FakeThread(TimePoint start = TimePoint{} + std::chrono::hours(1))
      : runtime_(start), context_(&runtime_) {}

  ThreadContext& context() { return context_; }
  FakeRuntime& runtime() { return runtime_; }

  // Starts `task` on this thread; it runs until its first suspension.
  template <typename T>
  Started<T> Start(Task<T> task) {
    ThreadContext::Scope scope(&context_);
    task.handle().resume();
    return Started<T>(std::move(task));
  }
  // Runs `fn` inside this thread's context.
  template <typename F>
  decltype(auto) Run(F&& fn) {
    ThreadContext::Scope scope(&context_);
    return fn();
  }
  size_t RunReady() {
    ThreadContext::Scope scope(&context_);
    return runtime_.RunReady();
  }
  void AdvanceBy(Duration d) {
    ThreadContext::Scope scope(&context_);
    runtime_.AdvanceBy(d);
  }
  // Ends the thread: its shards are destroyed in its context.
  void DestroyShards() {
    ThreadContext::Scope scope(&context_);
    context_.~ThreadContext();
    new (&context_) ThreadContext(&runtime_);
  }
  ~FakeThread() { DestroyShards(); }

 private:
  FakeRuntime runtime_;
  ThreadContext context_;
};

}  // namespace ringrpc::pool::testing

#endif  // RINGRPC_POOL_TESTING_FAKE_RUNTIME_H_
