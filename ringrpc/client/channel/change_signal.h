// ringrpc/client/channel/change_signal.h — what tells a channel's waiters that
// something its connectivity state or a pick reads may have changed: the
// resolver's answer, an address's connection, dial or health answer. Rung
// from any thread. It has two kinds of waiter:
// - a blocking thread (Channel::WaitForStateChange): the epoch, waited on
//   with a condition variable (WaitOtherThan);
// - a call on a CQ thread whose pick found no address (before the first
//   resolution, while health checks have not answered, wait_for_ready with
//   none usable): a Watch, whose event is set on the call's own thread by
//   a post (one in flight per thread, whatever the number of rings).
// A ring costs one lock and, with no Watch on any thread, nothing more.
//
// Lifetime: shared by the channel and the subchannels' event listeners
// (which may outlive it); a post in flight holds it too.
//
// Threading: Ring, epoch, WaitOtherThan: any thread. A Watch: made, waited
// on and destroyed on its CQ thread.
//
//   ChangeSignal::Watch watch(*signal, thread, loop);  // before reading
//   if (nothing_to_pick()) co_await watch.changed().Wait();
#ifndef RINGRPC_CLIENT_CHANNEL_CHANGE_SIGNAL_H_
#define RINGRPC_CLIENT_CHANNEL_CHANGE_SIGNAL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "ringrpc/base/mutex.h"
#include "ringrpc/base/time.h"
#include "ringrpc/client/runtime/event_loop.h"
#include "ringrpc/client/runtime/loop_event.h"

namespace ringrpc::channel {

class ChangeSignal final : public std::enable_shared_from_this<ChangeSignal> {
 public:
  // `threads`: how many CQ threads may hold Watches (indices below it).
  static std::shared_ptr<ChangeSignal> Create(size_t threads);
  ChangeSignal(const ChangeSignal&) = delete;
  ChangeSignal& operator=(const ChangeSignal&) = delete;

  // Something may have changed (call it after the change is visible):
  // bumps the epoch, wakes blocked threads, and sets the event of every
  // Watch on every thread.
  void Ring();
  uint64_t epoch() const;
  // Blocks until the epoch is not `seen`, or `until`. Returns the epoch.
  // Not on a CQ thread.
  uint64_t WaitOtherThan(uint64_t seen, TimePoint until) const;

  // While it lives, every Ring (on any thread) sets changed(), on this
  // thread. Made before the caller reads what it waits on: a change after
  // that reading is never missed (the event stays set until waited on).
  class Watch {
   public:
    Watch(ChangeSignal& signal, size_t thread, runtime::EventLoop& loop);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;
    runtime::LoopEvent& changed() { return event_; }

   private:
    ChangeSignal& signal_;
    const size_t thread_;
    runtime::LoopEvent event_;
  };

 private:
  explicit ChangeSignal(size_t threads);
  // On CQ thread `thread`, by Ring's post: sets each of its Watches' events.
  void WakeWatches(size_t thread);

  mutable Mutex mu_;
  mutable CondVar cv_;
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  struct Slot {
    int watches = 0;
    bool posted = false;  // a WakeWatches is on its way
    runtime::EventLoop* loop = nullptr;
  };
  std::vector<Slot> slots_ ABSL_GUARDED_BY(mu_);  // per CQ thread
  // Each CQ thread's Watches' events: that thread's alone.
  std::vector<std::vector<runtime::LoopEvent*>> events_;
};

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_CHANGE_SIGNAL_H_
