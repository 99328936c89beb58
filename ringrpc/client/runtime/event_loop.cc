#include "ringrpc/client/runtime/event_loop.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "ringrpc/base/fork.h"
#include "ringrpc/client/runtime/internal/backends.h"
#include "ringrpc/pool/thread_context.h"

namespace ringrpc::runtime {
namespace {
thread_local EventLoop* current_loop = nullptr;

// Makes `loop` Current() (and the thread's pool runtime) for a scope.
class CurrentLoopScope {
 public:
  explicit CurrentLoopScope(EventLoop* loop) : previous_(current_loop) {
    current_loop = loop;
    pool::ThreadContext& ctx = pool::ThreadContext::Current();
    if (ctx.runtime() == nullptr) {
      ctx.set_runtime(loop);
      set_runtime_ = true;
    }
  }
  ~CurrentLoopScope() {
    if (set_runtime_) pool::ThreadContext::Current().set_runtime(nullptr);
    current_loop = previous_;
  }

 private:
  EventLoop* previous_;
  bool set_runtime_ = false;
};
}  // namespace

const char* BackendName(Backend b) { return b == Backend::kIoUring ? "io_uring" : "epoll"; }

absl::StatusOr<std::optional<Backend>> BackendFromEnv() {
  const char* v = std::getenv("RINGRPC_POLLER");
  if (v == nullptr || *v == '\0') return std::optional<Backend>();
  if (std::strcmp(v, "io_uring") == 0) return std::optional<Backend>(Backend::kIoUring);
  if (std::strcmp(v, "epoll") == 0) return std::optional<Backend>(Backend::kEpoll);
  return absl::InvalidArgumentError(
      absl::StrCat("RINGRPC_POLLER must be \"io_uring\" or \"epoll\", got \"", v, "\""));
}

absl::StatusOr<std::unique_ptr<EventLoop>> EventLoop::Create(std::optional<Backend> backend) {
  if (backend == Backend::kEpoll) return internal::NewEpollLoop();
  absl::StatusOr<std::unique_ptr<EventLoop>> uring = internal::NewUringLoop();
  if (uring.ok() || backend == Backend::kIoUring) return uring;
  // io_uring unavailable here: the same loop on epoll.
  return internal::NewEpollLoop();
}

EventLoop::EventLoop(Backend backend) : backend_(backend), now_(Clock::now()) {}

EventLoop::~EventLoop() {
  // Only operations whose cancellation the backend waited out in vain.
  for (IoOp* op : orphans_) AbandonForever(std::unique_ptr<IoOp>(op));
}

EventLoop* EventLoop::Current() { return current_loop; }

uint64_t EventLoop::ScheduleTimer(TimePoint deadline, TimerCallback* cb) {
  uint64_t id = ++next_timer_id_;
  timers_.emplace(TimerKey{deadline, id}, cb);
  timer_deadlines_.emplace(id, deadline);
  return id;
}

void EventLoop::Defer(Deferred* d) {
  if (d->queued_) return;
  d->queued_ = true;
  d->prev_ = deferred_tail_;
  d->next_ = nullptr;
  (deferred_tail_ ? deferred_tail_->next_ : deferred_head_) = d;
  deferred_tail_ = d;
}

void EventLoop::Undefer(Deferred* d) {
  if (!d->queued_) return;
  (d->prev_ ? d->prev_->next_ : deferred_head_) = d->next_;
  (d->next_ ? d->next_->prev_ : deferred_tail_) = d->prev_;
  d->prev_ = d->next_ = nullptr;
  d->queued_ = false;
}

bool EventLoop::CancelTimer(uint64_t id) {
  auto it = timer_deadlines_.find(id);
  if (it == timer_deadlines_.end()) return false;
  timers_.erase(TimerKey{it->second, id});
  timer_deadlines_.erase(it);
  return true;
}

// Counts the other threads inside Post/Stop, so the loop never closes its
// wake-up descriptor under a writer (see QuiesceWakers).
class EventLoop::WakerGuard {
 public:
  explicit WakerGuard(EventLoop* loop) : loop_(loop) {
    loop_->wakers_.fetch_add(1, std::memory_order_acq_rel);
  }
  ~WakerGuard() { loop_->wakers_.fetch_sub(1, std::memory_order_acq_rel); }

 private:
  EventLoop* loop_;
};

void EventLoop::Post(Inbox::Fn fn) {
  EventLoop* sender = current_loop;
  if (sender == this) {  // the loop drains its inbox before it waits
    inbox_.Push(std::move(fn));
    return;
  }
  WakerGuard guard(this);
  if (!inbox_.Push(std::move(fn))) return;  // already non-empty: awake
  wakeups_sent_.fetch_add(1, std::memory_order_relaxed);
  if (sender != nullptr && sender->SendMsgRing(this)) return;
  WakeFromOtherThread();
}

void EventLoop::QuiesceWakers() {
  while (wakers_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

void EventLoop::Spawn(Task<void> task) {
  if (!task.valid()) return;
  task.handle().promise().finished_count = &finished_tasks_;
  tasks_.push_back(std::move(task));
  tasks_.back().handle().resume();  // runs to its first suspension
  // (A task that finished at once goes with the others at the end of the
  // turn; Spawn may be running inside ReapFinishedTasks' destructors.)
}

void EventLoop::ReapFinishedTasks() {
  // Frames are destroyed outside tasks_: a destructor may Spawn.
  while (finished_tasks_ != 0) {
    finished_tasks_ = 0;
    auto mid =
        std::partition(tasks_.begin(), tasks_.end(), [](const Task<void>& t) { return !t.done(); });
    // The scratch vector is reused (no allocation per reap); taken out of
    // the member while in use, so a reap inside a destructor would only
    // allocate its own.
    std::vector<Task<void>> done = std::move(reaped_);
    done.assign(std::make_move_iterator(mid), std::make_move_iterator(tasks_.end()));
    tasks_.erase(mid, tasks_.end());
    done.clear();
    reaped_ = std::move(done);
  }
}

void EventLoop::Run() {
  CurrentLoopScope scope(this);
  while (!stopping()) RunOnce(Duration(-1));
}

void EventLoop::Stop() {
  if (current_loop == this) {
    stop_.store(true, std::memory_order_release);
    return;
  }
  WakerGuard guard(this);
  stop_.store(true, std::memory_order_release);
  WakeFromOtherThread();
}

void EventLoop::RunDue() {
  if (!inbox_.empty()) {
    for (Inbox::Fn& fn : inbox_.TakeAll()) {
      ++stats_.posts;
      fn();
    }
  }
  // Until empty: what a deferred callback defers runs in this pass too.
  while (Deferred* d = deferred_head_) {
    Undefer(d);
    d->OnDeferred();
  }
  while (!timers_.empty() && timers_.begin()->first.deadline <= now_) {
    auto it = timers_.begin();
    TimerCallback* cb = it->second;
    timer_deadlines_.erase(it->first.id);
    timers_.erase(it);
    cb->OnTimer();
  }
}

Duration EventLoop::TimeToNextTimer() const {
  if (deferred_head_ != nullptr) return Duration::zero();
  if (timers_.empty()) return Duration(-1);
  Duration d = timers_.begin()->first.deadline - now_;
  return d < Duration::zero() ? Duration::zero() : d;
}

void EventLoop::RunOnce(Duration max_wait) {
  CurrentLoopScope scope(this);
  ++stats_.turns;
  now_ = Clock::now();
  RunDue();
  // Before waiting, too: a task that finished in RunDue (a posted start, a
  // timer) must not wait for the next wake-up to be freed, which may never
  // come on an idle loop. What its destructors post or defer shortens the
  // wait below.
  ReapFinishedTasks();
  Duration timeout = TimeToNextTimer();
  if (max_wait >= Duration::zero() && (timeout < Duration::zero() || max_wait < timeout)) {
    timeout = max_wait;
  }
  if (!inbox_.empty() || stopping()) timeout = Duration::zero();
  Wait(timeout);
  now_ = Clock::now();
  RunDue();
  // Finished frames go in the turn they finish: an idle loop may not turn
  // again for a long time, and a frame can hold a channel (and its CQ
  // threads, sockets and rings) alive.
  ReapFinishedTasks();
}

void EventLoop::DestroyTasks() {
  CurrentLoopScope scope(this);
  // Destroying a task cancels whatever it was suspended in.
  while (!tasks_.empty()) {
    std::vector<Task<void>> tasks = std::move(tasks_);
    tasks_.clear();
    tasks.clear();
  }
  for (Inbox::Fn& fn : inbox_.TakeAll()) fn = nullptr;
}

IoAwaitable EventLoop::StartIo(std::unique_ptr<IoOp> op) {
  return IoAwaitable(this, std::move(op));
}

std::unique_ptr<IoOp> EventLoop::NewOp(IoOp::Kind kind, int fd) {
  std::unique_ptr<IoOp> op;
  if (free_ops_.empty()) {
    op = std::make_unique<IoOp>();
  } else {
    op = std::move(free_ops_.back());
    free_ops_.pop_back();
  }
  op->kind = kind;
  op->fd = fd;
  return op;
}

void EventLoop::FreeOp(IoOp* op) {
  if (op->orphaned) orphans_.erase(op);
  std::unique_ptr<IoOp> owned(op);
  if (free_ops_.size() >= 64) return;  // deleted
  IoOp& o = *owned;
  o.buf = {};
  o.offset = 0;
  o.iov.clear();
  o.held.clear();
  o.addrlen = 0;
  o.waiter = {};
  o.res = 0;
  o.done = o.orphaned = o.interrupted = o.quiet = false;
  free_ops_.push_back(std::move(owned));
}

IoAwaitable EventLoop::Recv(int fd, std::vector<uint8_t> buf) {
  auto op = NewOp(IoOp::Kind::kRecv, fd);
  op->buf = std::move(buf);
  return StartIo(std::move(op));
}

IoAwaitable EventLoop::Send(int fd, std::vector<uint8_t> buf, size_t offset) {
  auto op = NewOp(IoOp::Kind::kSend, fd);
  op->buf = std::move(buf);
  op->offset = offset;
  return StartIo(std::move(op));
}

IoAwaitable EventLoop::SendMsg(int fd, std::vector<uint8_t> buf, std::vector<iovec> iov,
                               std::vector<std::shared_ptr<const std::string>> held) {
  auto op = NewOp(IoOp::Kind::kSendMsg, fd);
  op->buf = std::move(buf);
  op->iov = std::move(iov);
  op->held = std::move(held);
  op->msg = msghdr{};
  op->msg.msg_iov = op->iov.data();
  op->msg.msg_iovlen = op->iov.size();
  return StartIo(std::move(op));
}

IoAwaitable EventLoop::Connect(int fd, const sockaddr* addr, socklen_t len) {
  auto op = NewOp(IoOp::Kind::kConnect, fd);
  std::memcpy(&op->addr, addr, std::min<size_t>(len, sizeof op->addr));
  op->addrlen = len;
  return StartIo(std::move(op));
}

IoAwaitable EventLoop::PollIn(int fd) { return StartIo(NewOp(IoOp::Kind::kPoll, fd)); }

void EventLoop::Interrupt(IoOp* op) {
  if (op == nullptr || op->done || !op->waiter || op->interrupted) return;
  op->interrupted = true;
  InterruptOp(op);
}

void EventLoop::Close(int fd) {
  ForgetFd(fd);
  ::close(fd);
}

void EventLoop::SetQuiet(IoOp* op, bool quiet) {
  if (op == nullptr || op->done || op->quiet == quiet) return;
  op->quiet = quiet;
  if (quiet) {
    ++quiet_in_flight_;
  } else {
    --quiet_in_flight_;
  }
}

void EventLoop::Complete(IoOp* op, int res) {
  op->res = res;
  op->done = true;
  --in_flight_;
  if (op->quiet) {
    op->quiet = false;
    --quiet_in_flight_;
  }
  if (op->orphaned) {
    FreeOp(op);
    return;
  }
  op->waiter.resume();
}

void EventLoop::Orphan(IoOp* op) {
  SetQuiet(op, false);
  op->orphaned = true;
  orphans_.insert(op);
  ++stats_.ops_cancelled;
  CancelOp(op);
}

IoAwaitable::~IoAwaitable() {
  if (op_ == nullptr) return;
  if (op_->waiter && !op_->done) {
    loop_->Orphan(op_);  // the loop frees it when the kernel is done
  } else {
    loop_->FreeOp(op_);
  }
}

bool IoAwaitable::await_suspend(std::coroutine_handle<> h) {
  op_->waiter = h;
  ++loop_->in_flight_;
  ++loop_->stats_.ops_started;
  if (loop_->StartOp(op_)) return true;
  --loop_->in_flight_;
  loop_->SetQuiet(op_, false);
  op_->done = true;
  return false;  // completed at once: resume without suspending
}

IoResult IoAwaitable::await_resume() { return IoResult{op_->res, std::move(op_->buf)}; }

}  // namespace ringrpc::runtime
