// ringrpc/client/internal/cancel_wake.h — a wait that TryCancel ends at once: while
// a CancelWake lives, ClientContext::TryCancel from any thread runs its
// `interrupt` on the call's loop (the pick's wait in its thread's pool, a
// backoff, a hedged call between copies, blocking call credentials: no
// wait is cut into slices to look again). Internal to the call path.
//
// Threading: made and destroyed on the call's CQ thread; TryCancel from any.
//
//   CancelWake wake(cancel_state, loop, [&wait] { wait.Interrupt(); });
//   auto got = co_await wait;
//
//   co_await SleepUnlessCancelled(cancel_state, loop, until);  // a backoff
//   co_await SleepUnlessCancelled(cancel_state, loop, until, &event);  // or a change
#ifndef RINGRPC_CLIENT_INTERNAL_CANCEL_WAKE_H_
#define RINGRPC_CLIENT_INTERNAL_CANCEL_WAKE_H_

#include <functional>
#include <memory>

#include "ringrpc/base/mutex.h"
#include "ringrpc/base/task.h"
#include "ringrpc/base/time.h"
#include "ringrpc/client/client_context.h"
#include "ringrpc/client/runtime/event_loop.h"
#include "ringrpc/client/runtime/loop_event.h"

namespace ringrpc::internal {

// While it lives, TryCancel from any thread runs `interrupt` on the call's
// loop (the wait ends at once). The context reaches one wait or one
// started call at a time (a hedged call holds it and gives each copy a
// CancelState of its own): a registration made later replaces this one,
// and this one is taken back only if it is still there.
class CancelWake {
 public:
  CancelWake(std::shared_ptr<CancelState> cancel, runtime::EventLoop& loop,
             std::function<void()> interrupt)
      : cancel_(std::move(cancel)),
        target_(std::make_shared<Target>(Target{&loop, std::move(interrupt)})) {
    bool now;
    {
      MutexLock lock(&cancel_->mu);
      now = cancel_->cancelled;
      if (!now) {
        cancel_->running = target_;
        cancel_->cancel_running = [](const std::shared_ptr<void>& t) {
          std::weak_ptr<Target> weak = std::static_pointer_cast<Target>(t);
          std::static_pointer_cast<Target>(t)->loop->Post([weak] {
            // The TryCancel thread may still hold the target after the
            // wait ended: `armed`, read on the loop, says the wait (and the
            // frame `interrupt` points into) is still there.
            std::shared_ptr<Target> target = weak.lock();
            if (target != nullptr && target->armed) target->interrupt();
          });
        };
      }
    }
    if (now) target_->interrupt();  // cancelled since the last check
  }
  CancelWake(const CancelWake&) = delete;
  CancelWake& operator=(const CancelWake&) = delete;
  ~CancelWake() {
    target_->armed = false;  // on the loop: a TryCancel posted now finds nothing to end
    MutexLock lock(&cancel_->mu);
    std::shared_ptr<void> mine = target_;
    const std::weak_ptr<void>& r = cancel_->running;
    if (!r.owner_before(mine) && !mine.owner_before(r)) {
      cancel_->running.reset();
      cancel_->cancel_running = nullptr;
    }
  }

 private:
  struct Target {
    runtime::EventLoop* loop;
    std::function<void()> interrupt;
    bool armed = true;  // loop thread only: false once the CancelWake is gone
  };
  const std::shared_ptr<CancelState> cancel_;
  const std::shared_ptr<Target> target_;
};

// Sleeps until `until`, or until TryCancel, which ends it at once (the
// caller looks at the context to tell which), or until `wake` (if given) is
// set. One timer, no wake-ups between: a wait_for_ready call backing off
// for minutes costs nothing while it waits.
inline Task<void> SleepUnlessCancelled(std::shared_ptr<CancelState> cancel,
                                       runtime::EventLoop& loop, TimePoint until,
                                       runtime::LoopEvent* wake = nullptr) {
  if (loop.Now() >= until) co_return;
  auto wait_for = [](runtime::EventLoop& l, runtime::LoopEvent* e) -> Task<int> {
    runtime::LoopEvent never(l);
    co_await (e != nullptr ? *e : never).Wait();
    co_return 0;
  };
  runtime::WithTimeout<int> wait(loop, wait_for(loop, wake), until - loop.Now());
  CancelWake wake_on_cancel(std::move(cancel), loop, [&wait] { wait.Interrupt(); });
  (void)co_await wait;
}

}  // namespace ringrpc::internal

#endif  // RINGRPC_CLIENT_INTERNAL_CANCEL_WAKE_H_
