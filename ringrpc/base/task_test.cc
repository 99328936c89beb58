#include "ringrpc/base/task.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace ringrpc {
namespace {

// Runs `t` to its end on this thread (it must not suspend on anything but
// other tasks).
template <typename T>
void Drive(Task<T>& t) {
  t.handle().resume();
  ASSERT_TRUE(t.done());
}

Task<int> Answer() { co_return 42; }
Task<int> Twice() {
  int a = co_await Answer();
  co_return 2 * a;
}

TEST(Task, IsLazyAndReturnsItsValueThroughNestedAwaits) {
  Task<int> t = Twice();
  EXPECT_TRUE(t.valid());
  EXPECT_FALSE(t.done());
  Drive(t);
  EXPECT_EQ(t.result(), 84);
}

TEST(Task, VoidTaskRunsItsBodyOnceAwaited) {
  int runs = 0;
  auto inner = [&]() -> Task<void> {
    ++runs;
    co_return;
  };
  auto outer = [&]() -> Task<void> {
    co_await inner();
    co_await inner();
  };
  Task<void> t = outer();
  EXPECT_EQ(runs, 0);
  Drive(t);
  EXPECT_EQ(runs, 2);
}

TEST(Task, MoveOnlyResultIsMovedOutToTheAwaiter) {
  auto make = []() -> Task<std::unique_ptr<std::string>> {
    co_return std::make_unique<std::string>("moved");
  };
  std::string got;
  auto outer = [&]() -> Task<void> {
    std::unique_ptr<std::string> p = co_await make();
    got = *p;
  };
  Task<void> t = outer();
  Drive(t);
  EXPECT_EQ(got, "moved");
}

// A suspension point that never resumes by itself, like a socket read.
struct Forever {
  bool await_ready() noexcept { return false; }
  void await_suspend(std::coroutine_handle<>) noexcept {}
  void await_resume() noexcept {}
};

TEST(Task, DestroyingASuspendedTaskDestroysItsWholeChainOfFrames) {
  int destroyed = 0;
  struct Counter {
    int* n;
    ~Counter() { ++*n; }
  };
  auto inner = [&]() -> Task<void> {
    Counter c{&destroyed};
    co_await Forever{};
  };
  auto outer = [&]() -> Task<void> {
    Counter c{&destroyed};
    co_await inner();
  };
  Task<void> t = outer();
  t.handle().resume();
  EXPECT_FALSE(t.done());
  EXPECT_EQ(destroyed, 0);
  t.Reset();
  EXPECT_EQ(destroyed, 2);
  EXPECT_FALSE(t.valid());
}

TEST(Task, FinishedCountIsBumpedOnceWhenTheTaskEnds) {
  size_t finished = 0;
  Task<int> t = Answer();
  t.handle().promise().finished_count = &finished;
  Drive(t);
  EXPECT_EQ(finished, 1u);
  Task<int> moved = std::move(t);
  EXPECT_FALSE(t.valid());
  EXPECT_EQ(moved.result(), 42);
}

}  // namespace
}  // namespace ringrpc
