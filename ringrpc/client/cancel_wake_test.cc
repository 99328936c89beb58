// CancelWake (ringrpc/client/internal/cancel_wake.h) without a server: TryCancel
// ends a registered wait on the call's loop, and a TryCancel posted while
// the wait was still registered never reaches it once it has ended; the
// sleep built on it ends at its time or at TryCancel.
#include "ringrpc/client/internal/cancel_wake.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "ringrpc/client/client_context.h"
#include "ringrpc/client/runtime/event_loop.h"
#include "ringrpc/client/runtime/testing/run_to_completion.h"

namespace ringrpc::internal {
namespace {

using std::chrono::milliseconds;

// What ClientContext::TryCancel does, in two halves: `Take` registers the
// cancel and takes the running wait (as TryCancel's thread holds it while
// it posts); the post happens inside.
std::shared_ptr<void> TakeAndPostCancel(CancelState& cancel) {
  std::shared_ptr<void> running;
  void (*fn)(const std::shared_ptr<void>&) = nullptr;
  {
    MutexLock lock(&cancel.mu);
    cancel.cancelled = true;
    running = cancel.running.lock();
    fn = cancel.cancel_running;
  }
  if (running && fn) fn(running);
  return running;
}

TEST(CancelWake, TryCancelRunsTheInterruptOnTheLoop) {
  auto loop = runtime::testing::MakeLoop();
  auto cancel = std::make_shared<CancelState>();
  int interrupts = 0;
  CancelWake wake(cancel, *loop, [&] { ++interrupts; });
  std::shared_ptr<void> held = TakeAndPostCancel(*cancel);
  EXPECT_NE(held, nullptr);
  EXPECT_EQ(interrupts, 0);  // posted, not run on the caller's thread
  for (int i = 0; i < 20 && interrupts == 0; ++i) loop->RunOnce(milliseconds(5));
  EXPECT_EQ(interrupts, 1);
}

TEST(CancelWake, ACancelPostedBeforeTheWaitEndedDoesNotReachItAfter) {
  auto loop = runtime::testing::MakeLoop();
  auto cancel = std::make_shared<CancelState>();
  int interrupts = 0;
  std::shared_ptr<void> held;
  {
    CancelWake wake(cancel, *loop, [&] { ++interrupts; });
    held = TakeAndPostCancel(*cancel);  // TryCancel's thread still holds it...
  }                                     // ...when the wait ends another way (its deadline) and goes
  for (int i = 0; i < 20; ++i) loop->RunOnce(milliseconds(1));
  EXPECT_EQ(interrupts, 0) << "the interrupt ran after its wait was gone";
  EXPECT_NE(held, nullptr);
}

TEST(CancelWake, CancelledBeforeTheWaitInterruptsAtOnce) {
  auto loop = runtime::testing::MakeLoop();
  auto cancel = std::make_shared<CancelState>();
  TakeAndPostCancel(*cancel);  // nothing registered yet
  int interrupts = 0;
  CancelWake wake(cancel, *loop, [&] { ++interrupts; });
  EXPECT_EQ(interrupts, 1);
}

Task<void> Sleep(std::shared_ptr<CancelState> cancel, runtime::EventLoop& loop, TimePoint until,
                 bool* done) {
  co_await SleepUnlessCancelled(std::move(cancel), loop, until);
  *done = true;
}

// Turns `loop` until `done` (at most about five seconds of turns).
bool RunUntilDone(runtime::EventLoop& loop, const bool& done) {
  for (int i = 0; i < 1000 && !done; ++i) loop.RunOnce(milliseconds(5));
  return done;
}

TEST(SleepUnlessCancelled, EndsAtItsTimeWhenNotCancelled) {
  auto loop = runtime::testing::MakeLoop();
  auto cancel = std::make_shared<CancelState>();
  const TimePoint until = loop->Now() + milliseconds(30);
  bool done = false;
  loop->Spawn(Sleep(cancel, *loop, until, &done));
  ASSERT_TRUE(RunUntilDone(*loop, done));
  EXPECT_GE(loop->Now(), until);
}

TEST(SleepUnlessCancelled, TryCancelFromAnotherThreadEndsItAtOnce) {
  auto loop = runtime::testing::MakeLoop();
  auto cancel = std::make_shared<CancelState>();
  const TimePoint until = loop->Now() + std::chrono::hours(1);
  bool done = false;
  loop->Spawn(Sleep(cancel, *loop, until, &done));
  loop->RunOnce(milliseconds(1));
  ASSERT_FALSE(done);
  std::thread canceller([&] { TakeAndPostCancel(*cancel); });
  canceller.join();
  ASSERT_TRUE(RunUntilDone(*loop, done)) << "TryCancel did not end an hour's sleep";
  EXPECT_LT(loop->Now(), until);
}

TEST(SleepUnlessCancelled, CancelledBeforeItStartsDoesNotSleep) {
  auto loop = runtime::testing::MakeLoop();
  auto cancel = std::make_shared<CancelState>();
  TakeAndPostCancel(*cancel);
  bool done = false;
  loop->Spawn(Sleep(cancel, *loop, loop->Now() + std::chrono::hours(1), &done));
  EXPECT_TRUE(done);  // ran to its end inside Spawn: no turn of the loop needed
}

}  // namespace
}  // namespace ringrpc::internal
