// ringrpc/client/runtime/event_loop.h — one completion-queue thread's event loop:
// io_uring (liburing) or, where io_uring cannot be set up, epoll.
//
// A loop owns its sockets' I/O, its timers and the coroutines spawned on
// it. Socket operations are awaitables that own their buffers for as long
// as the kernel may touch them ("ownership I/O"): destroying the awaiting
// coroutine mid-operation cancels the operation, and the buffer lives until
// the kernel is done with it. One submit per loop turn covers every
// operation queued during the turn.
//
// The loop implements Runtime (cached loop time, timers), so pools
// used on a CQ thread wait, time out and reap on this loop.
//
// Threading: everything runs on the loop's thread, except Post() and
// Stop(), which any thread may call. Create the loop on the thread that
// will run it (io_uring's single-issuer mode requires it).
//
//   auto loop = EventLoop::Create(Backend::kIoUring);
//   (*loop)->Spawn(EchoOnce(**loop, fd));
//   (*loop)->Run();   // until Stop()
#ifndef RINGRPC_CLIENT_RUNTIME_EVENT_LOOP_H_
#define RINGRPC_CLIENT_RUNTIME_EVENT_LOOP_H_

#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ringrpc/base/runtime.h"
#include "ringrpc/base/task.h"
#include "ringrpc/client/runtime/inbox.h"

namespace ringrpc::runtime {

enum class Backend : uint8_t { kIoUring, kEpoll };
const char* BackendName(Backend b);

// The backend to use: RINGRPC_POLLER=io_uring|epoll forces one (an unknown
// value is INVALID_ARGUMENT); unset means io_uring where it can be set up.
absl::StatusOr<std::optional<Backend>> BackendFromEnv();

// One socket operation in flight. Heap-allocated; owned by its awaitable
// until the awaitable dies with the operation still in the kernel, then by
// the loop (its orphans), which frees it when its completion arrives.
struct IoOp {
  enum class Kind : uint8_t { kRecv, kSend, kSendMsg, kConnect, kPoll };
  Kind kind = Kind::kRecv;
  int fd = -1;
  std::vector<uint8_t> buf;  // recv: filled up to buf.size(); send: sent from offset
  size_t offset = 0;
  // kSendMsg: the pieces to send, in order; they point into `buf` and into
  // the strings `held` keeps alive until the kernel is done with them.
  std::vector<iovec> iov;
  std::vector<std::shared_ptr<const std::string>> held;
  msghdr msg{};
  sockaddr_storage addr{};
  socklen_t addrlen = 0;
  std::coroutine_handle<> waiter;
  int res = 0;  // >= 0: bytes (0 for connect; revents for poll); < 0: -errno
  bool done = false;
  bool interrupted = false;  // Interrupt() asked it to end early
  // Its completion wakes nothing that matters (a send whose reply is what
  // the loop waits for): the io_uring loop need not return for it alone.
  bool quiet = false;
  bool orphaned = false;
};

// What an operation yields: the result and the buffer back.
struct IoResult {
  int res = 0;  // >= 0: bytes transferred (0 on recv: EOF); < 0: -errno
  std::vector<uint8_t> buf;
  bool ok() const { return res >= 0; }
};

class EventLoop;

class IoAwaitable {
 public:
  IoAwaitable(EventLoop* loop, std::unique_ptr<IoOp> op) : loop_(loop), op_(op.release()) {}
  IoAwaitable(IoAwaitable&& o) noexcept : loop_(o.loop_), op_(std::exchange(o.op_, nullptr)) {}
  IoAwaitable(const IoAwaitable&) = delete;
  IoAwaitable& operator=(const IoAwaitable&) = delete;
  ~IoAwaitable();

  bool await_ready() noexcept { return false; }
  bool await_suspend(std::coroutine_handle<> h);
  IoResult await_resume();

  // The operation, for EventLoop::Interrupt() while it is awaited.
  IoOp* op() const { return op_; }

 private:
  EventLoop* loop_;
  IoOp* op_;
};

struct LoopStats {
  uint64_t turns = 0;
  uint64_t enters = 0;        // io_uring_enter / epoll_wait calls
  uint64_t wakeups_sent = 0;  // wake-ups other threads sent to this loop
  uint64_t msg_rings_sent = 0;
  uint64_t msg_ring_failures = 0;  // MSG_RINGs that failed (then eventfd only)
  uint64_t posts = 0;
  uint64_t ops_started = 0;
  uint64_t ops_cancelled = 0;
};

class EventLoop : public Runtime {
 public:
  // Work to run on the loop's next pass, queued with no allocation (an
  // intrusive list): how LoopEvent wakes its waiter. Loop thread only.
  class Deferred {
   public:
    virtual void OnDeferred() = 0;

   protected:
    ~Deferred() = default;

   private:
    friend class EventLoop;
    Deferred* prev_ = nullptr;
    Deferred* next_ = nullptr;
    bool queued_ = false;
  };
  // Queues `d` (once: queuing a queued one does nothing). It runs before the
  // loop next waits, after what is queued already.
  void Defer(Deferred* d);
  // Takes `d` off the queue if it is there.
  void Undefer(Deferred* d);

  // `backend` unset: io_uring, falling back to epoll when io_uring cannot
  // be set up (EPERM/ENOSYS, as under Docker's default seccomp profile).
  static absl::StatusOr<std::unique_ptr<EventLoop>> Create(
      std::optional<Backend> backend = std::nullopt);
  ~EventLoop() override;
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  Backend backend() const { return backend_; }
  // Position of this loop in its CqThreads set (0 for a loop on its own).
  size_t cq_index() const { return cq_index_; }
  void set_cq_index(size_t i) { cq_index_ = i; }
  // The loop running on the calling thread, or null.
  static EventLoop* Current();

  // Runtime: time cached per loop turn; timers.
  TimePoint Now() override { return now_; }
  uint64_t ScheduleTimer(TimePoint deadline, TimerCallback* cb) override;
  bool CancelTimer(uint64_t id) override;

  // Runs `fn` on this loop's thread, in order. Any thread. The loop is woken
  // only when its inbox goes from empty to non-empty; from another io_uring
  // loop's thread the wake-up is an IORING_OP_MSG_RING submitted at once,
  // otherwise an eventfd write.
  void Post(Inbox::Fn fn);
  // Runs `task` on this loop; it is destroyed (cancelled) if still running
  // when the loop is destroyed. Loop thread only.
  void Spawn(Task<void> task);
  // Post of a Spawn: `task` starts on this loop's thread. Any thread. One
  // allocation (the inbox's node); a task never started is destroyed with
  // the loop.
  void PostSpawn(Task<void> task) {
    Post([this, task = std::move(task)]() mutable { Spawn(std::move(task)); });
  }

  // Runs turns until Stop(). Makes this loop Current() and the thread's
  // pool runtime for the duration.
  void Run();
  // One turn, waiting at most `max_wait` for I/O. Loop thread only.
  void RunOnce(Duration max_wait);
  // Any thread.
  void Stop();
  bool stopping() const { return stop_.load(std::memory_order_acquire); }

  // Socket operations. Loop thread only. The socket must be non-blocking.
  IoAwaitable Recv(int fd, std::vector<uint8_t> buf);
  IoAwaitable Send(int fd, std::vector<uint8_t> buf, size_t offset = 0);
  // Sends the pieces `iov` (gathered, one sendmsg): they point into `buf`
  // and `held`, which the operation keeps until it ends (also if its
  // awaiter goes first). IoResult::buf gives `buf` back.
  IoAwaitable SendMsg(int fd, std::vector<uint8_t> buf, std::vector<iovec> iov,
                      std::vector<std::shared_ptr<const std::string>> held);
  IoAwaitable Connect(int fd, const sockaddr* addr, socklen_t len);
  // Waits until `fd` is readable (or hung up, or in error) without reading:
  // res is the poll revents. Cancelling it loses no bytes.
  IoAwaitable PollIn(int fd);
  // Ends an operation that a coroutine is awaiting early: the waiter
  // resumes on a later loop pass with -ECANCELED, or with the operation's
  // real result if it completed first (a receive that got bytes keeps
  // them). Unlike destroying the waiter, nothing is lost. Loop thread only.
  void Interrupt(IoOp* op);
  // Marks an awaited operation quiet or not (see IoOp::quiet). A quiet
  // operation must be made loud before anything comes to depend on it.
  void SetQuiet(IoOp* op, bool quiet);
  // Closes `fd`; its pending operations must have ended or been cancelled.
  void Close(int fd);
  // Stops watching `fd` without closing it (the socket moves to another
  // loop); its operations here must have ended or been cancelled.
  void Release(int fd) { ForgetFd(fd); }

  // Destroys every spawned task (cancelling its operations) and drops
  // posted work. Loop thread only; also the first thing a backend's
  // destructor does. A CQ thread calls it before destroying the pool
  // shards its tasks may hold leases on.
  void DestroyTasks();

  LoopStats stats() const {
    LoopStats s = stats_;
    s.wakeups_sent = wakeups_sent_.load(std::memory_order_relaxed);
    return s;
  }
  size_t spawned() const { return tasks_.size(); }
  size_t ops_in_flight() const { return in_flight_; }

 protected:
  explicit EventLoop(Backend backend);

  // Starts `op`. Returns false if it completed at once (res set, done).
  virtual bool StartOp(IoOp* op) = 0;
  // `op` was orphaned while in flight: make it end soon. The loop frees it
  // when it completes (io_uring) or at once (epoll: StartOp never leaves
  // the kernel holding a buffer).
  virtual void CancelOp(IoOp* op) = 0;
  // `op` is awaited and should end early (see Interrupt()): complete it on
  // a later pass with -ECANCELED unless it completes first.
  virtual void InterruptOp(IoOp* op) = 0;
  // Submits what is queued and waits up to `timeout` (negative: no limit)
  // for completions, dispatching each.
  virtual void Wait(Duration timeout) = 0;
  // Wakes the loop from another thread.
  virtual void WakeFromOtherThread() = 0;
  // Wakes `target` through this loop's ring; false if not possible.
  virtual bool SendMsgRing(EventLoop*) { return false; }
  virtual void ForgetFd(int) {}

  // Waits until no other thread is inside Post() or Stop() on this loop.
  // Backends call it before closing their wake-up descriptor. (Posting to a
  // loop that is being destroyed is a caller bug; this only closes the
  // window between Stop() waking the loop and the loop exiting.)
  void QuiesceWakers();
  // Called by backends when an operation ends.
  void Complete(IoOp* op, int res);
  void OpEnded() { --in_flight_; }
  // Operations are recycled through a free list (no allocation per op).
  void FreeOp(IoOp* op);
  // Quiet operations in flight: the io_uring loop waits for this many
  // completions more than one.
  size_t quiet_in_flight() const { return quiet_in_flight_; }
  LoopStats stats_;

 private:
  friend class IoAwaitable;
  IoAwaitable StartIo(std::unique_ptr<IoOp> op);
  std::unique_ptr<IoOp> NewOp(IoOp::Kind kind, int fd);
  void Orphan(IoOp* op);
  void RunDue();
  Duration TimeToNextTimer() const;

  class WakerGuard;

  const Backend backend_;
  size_t cq_index_ = 0;
  TimePoint now_;
  std::atomic<bool> stop_{false};
  std::atomic<int> wakers_{0};
  std::atomic<uint64_t> wakeups_sent_{0};  // written by other threads
  Inbox inbox_;
  size_t in_flight_ = 0;
  size_t quiet_in_flight_ = 0;
  std::vector<std::unique_ptr<IoOp>> free_ops_;
  // Orphaned operations still in the kernel, owned here: the kernel's ring
  // is the only other place that names them, and the ring is no memory a
  // leak checker reads. A process that exits while a CQ thread tears its
  // loop down (a set whose last owner let go on its own thread after the
  // exit-time join) would otherwise report each one as leaked. What is left
  // when the loop is destroyed the kernel may still write: never freed.
  std::unordered_set<IoOp*> orphans_;

  struct TimerKey {
    TimePoint deadline;
    uint64_t id;
    bool operator<(const TimerKey& o) const {
      return deadline != o.deadline ? deadline < o.deadline : id < o.id;
    }
  };
  std::map<TimerKey, TimerCallback*> timers_;
  Deferred* deferred_head_ = nullptr;
  Deferred* deferred_tail_ = nullptr;
  std::unordered_map<uint64_t, TimePoint> timer_deadlines_;
  uint64_t next_timer_id_ = 0;

  // Spawned tasks; finished_tasks_ counts those that finished since the
  // last ReapFinishedTasks (each task's promise points at it).
  std::vector<Task<void>> tasks_;
  std::vector<Task<void>> reaped_;  // ReapFinishedTasks' scratch (empty between reaps)
  size_t finished_tasks_ = 0;
  void ReapFinishedTasks();
};

}  // namespace ringrpc::runtime

#endif  // RINGRPC_CLIENT_RUNTIME_EVENT_LOOP_H_
