// A channel's change signal (change_signal.h).
#include "ringrpc/client/channel/change_signal.h"

#include <algorithm>

#include "ringrpc/base/check.h"

namespace ringrpc::channel {

std::shared_ptr<ChangeSignal> ChangeSignal::Create(size_t threads) {
  return std::shared_ptr<ChangeSignal>(new ChangeSignal(threads));
}

ChangeSignal::ChangeSignal(size_t threads) : slots_(threads), events_(threads) {}

void ChangeSignal::Ring() {
  MutexLock lock(&mu_);
  ++epoch_;
  cv_.SignalAll();
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (slot.watches == 0 || slot.posted) continue;
    // Under the lock: a Watch registered after this sees the epoch (and
    // what changed before it), and its loop is alive while it is listed.
    slot.posted = true;
    slot.loop->Post([self = shared_from_this(), i] { self->WakeWatches(i); });
  }
}

uint64_t ChangeSignal::epoch() const {
  MutexLock lock(&mu_);
  return epoch_;
}

uint64_t ChangeSignal::WaitOtherThan(uint64_t seen, TimePoint until) const {
  MutexLock lock(&mu_);
  cv_.WaitUntil(&mu_, until, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return epoch_ != seen; });
  return epoch_;
}

void ChangeSignal::WakeWatches(size_t thread) {
  {
    MutexLock lock(&mu_);
    slots_[thread].posted = false;  // a ring from now on posts again
  }
  for (runtime::LoopEvent* e : events_[thread]) e->Set();  // each wakes on the next pass
}

ChangeSignal::Watch::Watch(ChangeSignal& signal, size_t thread, runtime::EventLoop& loop)
    : signal_(signal), thread_(thread), event_(loop) {
  RINGRPC_DCHECK(thread < signal.events_.size());
  signal_.events_[thread_].push_back(&event_);
  MutexLock lock(&signal_.mu_);
  Slot& slot = signal_.slots_[thread_];
  // The first Watch of a set: a post still marked in flight was lost with
  // an old loop (a fork's child gets new ones); another one is harmless.
  if (slot.watches++ == 0) slot.posted = false;
  slot.loop = &loop;
}

ChangeSignal::Watch::~Watch() {
  {
    MutexLock lock(&signal_.mu_);
    Slot& slot = signal_.slots_[thread_];
    if (--slot.watches == 0) slot.loop = nullptr;
  }
  std::vector<runtime::LoopEvent*>& mine = signal_.events_[thread_];
  mine.erase(std::find(mine.begin(), mine.end(), &event_));
}

}  // namespace ringrpc::channel
