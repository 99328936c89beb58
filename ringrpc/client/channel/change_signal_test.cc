// ChangeSignal (change_signal.h) without a server, on real event loops: a
// ring from another thread wakes each Watch on its own loop, a ring between
// a Watch's making and its wait is not lost, a ring with no Watch sets
// nothing, a Watch gone with a wake-up in flight is safe, and blocking
// waiters see the epoch move.
#include "ringrpc/client/channel/change_signal.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "ringrpc/base/task.h"
#include "ringrpc/client/runtime/event_loop.h"
#include "ringrpc/client/runtime/testing/run_to_completion.h"

namespace ringrpc::channel {
namespace {

using std::chrono::milliseconds;

// Waits for a change on `thread` of `signal`, then sets `*woken`.
Task<void> AwaitChange(ChangeSignal& signal, size_t thread, runtime::EventLoop& loop, bool* woken) {
  ChangeSignal::Watch watch(signal, thread, loop);
  co_await watch.changed().Wait();
  *woken = true;
}

// Turns `loop` until `done` or `turns` turns of up to 5 ms have passed.
bool RunUntil(runtime::EventLoop& loop, const bool& done, int turns = 1000) {
  for (int i = 0; i < turns && !done; ++i) loop.RunOnce(milliseconds(5));
  return done;
}

void RingFromAnotherThread(ChangeSignal& signal, int times = 1) {
  std::thread ringer([&] {
    for (int i = 0; i < times; ++i) signal.Ring();
  });
  ringer.join();
}

TEST(ChangeSignal, ARingFromAnotherThreadWakesAWatchOnItsOwnLoop) {
  auto loop = runtime::testing::MakeLoop();
  auto signal = ChangeSignal::Create(1);
  bool woken = false;
  loop->Spawn(AwaitChange(*signal, 0, *loop, &woken));
  EXPECT_FALSE(RunUntil(*loop, woken, 10)) << "woken with no ring";
  RingFromAnotherThread(*signal);
  EXPECT_FALSE(woken);  // by a post to the loop, never on the ringing thread
  EXPECT_TRUE(RunUntil(*loop, woken));
}

TEST(ChangeSignal, ARingBetweenTheWatchAndItsWaitIsNotLost) {
  auto loop = runtime::testing::MakeLoop();
  auto signal = ChangeSignal::Create(1);
  auto watch = std::make_unique<ChangeSignal::Watch>(*signal, 0, *loop);
  RingFromAnotherThread(*signal);
  for (int i = 0; i < 5; ++i) loop->RunOnce(milliseconds(1));  // the post arrives
  bool woken = false;
  auto wait = [](ChangeSignal::Watch& w, bool* woken) -> Task<void> {
    co_await w.changed().Wait();
    *woken = true;
  };
  loop->Spawn(wait(*watch, &woken));
  EXPECT_TRUE(woken) << "the ring before the wait was lost";
}

TEST(ChangeSignal, ARingWithNoWatchSetsNothingForALaterWatch) {
  auto loop = runtime::testing::MakeLoop();
  auto signal = ChangeSignal::Create(1);
  RingFromAnotherThread(*signal, 3);
  EXPECT_EQ(signal->epoch(), 3u);
  bool woken = false;
  loop->Spawn(AwaitChange(*signal, 0, *loop, &woken));
  EXPECT_FALSE(RunUntil(*loop, woken, 10)) << "a ring from before the watch woke it";
  RingFromAnotherThread(*signal);
  EXPECT_TRUE(RunUntil(*loop, woken));
}

TEST(ChangeSignal, ManyRingsWakeEveryWatchOfEveryThread) {
  constexpr int kThreads = 3, kWatchesEach = 4;
  auto signal = ChangeSignal::Create(kThreads);
  std::atomic<int> woken{0};
  std::atomic<int> watching{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto loop = runtime::testing::MakeLoop();
      bool done[kWatchesEach] = {};
      for (bool& d : done) loop->Spawn(AwaitChange(*signal, t, *loop, &d));
      watching += kWatchesEach;
      int counted = 0;
      while (!stop && counted < kWatchesEach) {
        loop->RunOnce(milliseconds(5));
        counted = 0;
        for (bool d : done) counted += d;
      }
      woken += counted;
    });
  }
  while (watching < kThreads * kWatchesEach) std::this_thread::sleep_for(milliseconds(1));
  RingFromAnotherThread(*signal, 100);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (woken < kThreads * kWatchesEach && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(woken.load(), kThreads * kWatchesEach);
  EXPECT_EQ(signal->epoch(), 100u);
}

TEST(ChangeSignal, AWatchGoneWithAWakeUpInFlightIsSafeAndTheNextOneIsWoken) {
  auto loop = runtime::testing::MakeLoop();
  auto signal = ChangeSignal::Create(1);
  {
    ChangeSignal::Watch watch(*signal, 0, *loop);
    RingFromAnotherThread(*signal);  // posts a wake-up to the loop...
  }                                  // ...which arrives after the watch is gone
  for (int i = 0; i < 5; ++i) loop->RunOnce(milliseconds(1));
  bool woken = false;
  loop->Spawn(AwaitChange(*signal, 0, *loop, &woken));
  EXPECT_FALSE(RunUntil(*loop, woken, 10));
  RingFromAnotherThread(*signal);
  EXPECT_TRUE(RunUntil(*loop, woken)) << "a wake-up lost with the old watch blocked the next";
}

TEST(ChangeSignal, WaitOtherThanReturnsAtARingOrAtItsTime) {
  auto signal = ChangeSignal::Create(0);
  const uint64_t seen = signal->epoch();
  // Its time: nothing rang.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(signal->WaitOtherThan(seen, start + milliseconds(30)), seen);
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(30));
  // A ring from another thread ends a wait of an hour.
  std::thread ringer([&] {
    std::this_thread::sleep_for(milliseconds(20));
    signal->Ring();
  });
  EXPECT_EQ(signal->WaitOtherThan(seen, std::chrono::steady_clock::now() + std::chrono::hours(1)),
            seen + 1);
  ringer.join();
}

}  // namespace
}  // namespace ringrpc::channel
