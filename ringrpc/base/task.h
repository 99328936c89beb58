// ringrpc/base/task.h — the coroutine task type every layer of ringrpc awaits on.
//
// Task<T> is a lazy coroutine: it does nothing until awaited, then runs on the
// awaiting thread and resumes its awaiter by symmetric transfer when it ends.
// Destroying a Task destroys its frame, and with it every frame it is
// suspended in (sub-tasks and awaitables are members of the frame): that is
// how an operation is cancelled, and why every await point must leave state
// correct when its frame is destroyed (see decision 0004).
//
// Threading: a Task belongs to the thread that runs it; it never migrates.
//
//   Task<int> Answer() { co_return 42; }
//   Task<int> Twice() { int a = co_await Answer(); co_return 2 * a; }
#ifndef RINGRPC_BASE_TASK_H_
#define RINGRPC_BASE_TASK_H_

#include <coroutine>
#include <cstddef>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace ringrpc {

template <typename T>
class Task;

namespace task_internal {

struct PromiseBase {
  std::coroutine_handle<> continuation = std::noop_coroutine();
  // Counted up when the coroutine finishes (set by whoever runs it detached,
  // e.g. an event loop, to learn that a frame can go).
  size_t* finished_count = nullptr;

  std::suspend_always initial_suspend() noexcept { return {}; }

  struct FinalAwaiter {
    bool await_ready() noexcept { return false; }
    template <typename P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
      if (h.promise().finished_count != nullptr) ++*h.promise().finished_count;
      return h.promise().continuation;
    }
    void await_resume() noexcept {}
  };
  FinalAwaiter final_suspend() noexcept { return {}; }

  // ringrpc does not use exceptions on the I/O path; one escaping a task is a
  // bug.
  void unhandled_exception() noexcept { std::terminate(); }
};

// The value-holding part, the only one that differs between Task<T> and
// Task<void>.
template <typename T>
struct Promise : PromiseBase {
  std::optional<T> value;
  Task<T> get_return_object() noexcept;
  template <typename U>
  void return_value(U&& v) {
    value.emplace(std::forward<U>(v));
  }
  T Take() { return std::move(*value); }
};

template <>
struct Promise<void> : PromiseBase {
  Task<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void Take() noexcept {}
};

}  // namespace task_internal

template <typename T>
class [[nodiscard]] Task {
 public:
  using promise_type = task_internal::Promise<T>;
  using Handle = std::coroutine_handle<promise_type>;

  Task() = default;
  explicit Task(Handle h) : h_(h) {}
  Task(Task&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Task& operator=(Task&& o) noexcept {
    if (this != &o) {
      Reset();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { Reset(); }

  // Destroys the frame (cancelling whatever it was suspended in).
  void Reset() {
    if (h_) std::exchange(h_, nullptr).destroy();
  }
  bool valid() const { return static_cast<bool>(h_); }
  bool done() const { return h_ && h_.done(); }
  Handle handle() const { return h_; }

  // Result of a finished task. Only valid once done().
  auto& result() requires(!std::is_void_v<T>) { return *h_.promise().value; }

  auto operator co_await() && noexcept {
    struct Awaiter {
      Handle h;
      bool await_ready() noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
        h.promise().continuation = awaiting;
        return h;
      }
      T await_resume() { return h.promise().Take(); }
    };
    return Awaiter{h_};
  }

 private:
  Handle h_ = nullptr;
};

// A result that is usually there already: a value (awaiting it neither
// suspends nor allocates a frame) or a Task that makes it. For operations
// whose slow path must wait, on a warm path that must not pay for a frame.
//
//   ReadyOr<Status> Check() { if (fast) return Status(); return SlowCheck(); }
//   Status s = co_await Check();
template <typename T>
class [[nodiscard]] ReadyOr {
 public:
  ReadyOr(T value) : value_(std::move(value)) {}     // NOLINT: implicit, as a value
  ReadyOr(Task<T> task) : task_(std::move(task)) {}  // NOLINT
  bool ready() const { return value_.has_value(); }

  bool await_ready() const noexcept { return value_.has_value(); }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> awaiting) noexcept {
    task_.handle().promise().continuation = awaiting;
    return task_.handle();
  }
  T await_resume() {
    if (value_) return std::move(*value_);
    return task_.handle().promise().Take();
  }

 private:
  std::optional<T> value_;
  Task<T> task_;
};

namespace task_internal {

template <typename T>
Task<T> Promise<T>::get_return_object() noexcept {
  return Task<T>(std::coroutine_handle<Promise>::from_promise(*this));
}

inline Task<void> Promise<void>::get_return_object() noexcept {
  return Task<void>(std::coroutine_handle<Promise>::from_promise(*this));
}

}  // namespace task_internal

}  // namespace ringrpc

#endif  // RINGRPC_BASE_TASK_H_
