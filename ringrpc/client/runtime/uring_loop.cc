// The io_uring backend: every operation is an SQE whose user_data is its
// IoOp; one io_uring_enter per loop turn submits them all and waits.
#include <liburing.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "ringrpc/base/mutex.h"
#include "ringrpc/client/runtime/internal/backends.h"

namespace ringrpc::runtime::internal {
namespace {

// user_data values that are not IoOps (IoOps are heap pointers, never this
// small).
constexpr uint64_t kWakeRead = 1;     // our read on the eventfd completed
constexpr uint64_t kMsgRingIn = 2;    // another ring woke us
constexpr uint64_t kMsgRingSent = 3;  // our MSG_RING to another ring went
constexpr uint64_t kCancelSent = 4;   // an async cancel we asked for ended
constexpr uint64_t kMaxTag = 16;

// The kernel unmaps a ring before a later mapping can reuse its address,
// but liburing maps with raw system calls that ThreadSanitizer does not
// see: to it, a new loop's ring at an old one's address, on another thread,
// looks like a race with the old thread's accesses. Every ring is mapped
// and unmapped with this lock held, which makes that order visible: a
// mapping that reuses an address comes after the unmapping that freed it,
// so after its critical section (one lock per loop's start and end). A
// counter bumped after the unmapping was not enough: a mapping could reuse
// the address before the bump (a TSAN report in health_check_test, CI of
// session 29). event_loop_test LoopsOnSuccessiveThreads... shows it.
Mutex ring_mappings;

class UringLoop final : public EventLoop {
 public:
  UringLoop() : EventLoop(Backend::kIoUring) {}

  absl::Status Init() {
    io_uring_params p{};
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_COOP_TASKRUN;
    int rc;
    {
      MutexLock lock(&ring_mappings);
      rc = io_uring_queue_init_params(256, &ring_, &p);
      if (rc == -EINVAL) {  // an older kernel: no single-issuer mode
        p = io_uring_params{};
        defer_taskrun_ = false;
        rc = io_uring_queue_init_params(256, &ring_, &p);
      }
    }
    if (rc < 0) {
      return absl::UnavailableError(absl::StrCat("io_uring_queue_init: ", std::strerror(-rc)));
    }
    ring_ok_ = true;
    // What this kernel's io_uring can do: the operations every loop needs
    // (Linux 5.6+; without them the loop is refused and EventLoop::Create
    // falls back to epoll), and MSG_RING (5.18+; without it, or with
    // RINGRPC_MSG_RING=0, cross-thread wake-ups write the eventfd).
    io_uring_probe* probe = io_uring_get_probe_ring(&ring_);
    if (probe == nullptr) {
      return absl::UnavailableError(
          "io_uring: the kernel cannot say which operations it has "
          "(Linux 5.6 or later is needed)");
    }
    struct Needed {
      int op;
      const char* name;
    };
    for (Needed n : {Needed{IORING_OP_RECV, "RECV"}, Needed{IORING_OP_SEND, "SEND"},
                     Needed{IORING_OP_CONNECT, "CONNECT"}, Needed{IORING_OP_POLL_ADD, "POLL_ADD"},
                     Needed{IORING_OP_ASYNC_CANCEL, "ASYNC_CANCEL"}, Needed{IORING_OP_READ, "READ"},
                     Needed{IORING_OP_SENDMSG, "SENDMSG"}}) {
      if (!io_uring_opcode_supported(probe, n.op)) {
        io_uring_free_probe(probe);
        return absl::UnavailableError(absl::StrCat("io_uring: this kernel lacks IORING_OP_", n.name,
                                                   " (Linux 5.6 or later is needed)"));
      }
    }
    const char* env = std::getenv("RINGRPC_MSG_RING");
    msg_ring_ok_.store(io_uring_opcode_supported(probe, IORING_OP_MSG_RING) &&
                           !(env != nullptr && std::strcmp(env, "0") == 0),
                       std::memory_order_relaxed);
    io_uring_free_probe(probe);
    io_uring_register_ring_fd(&ring_);  // best effort
    efd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (efd_ < 0) {
      return absl::InternalError(absl::StrCat("eventfd: ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }

  ~UringLoop() override {
    DestroyTasks();
    QuiesceWakers();
    // Cancels were queued for every orphaned operation; wait for them.
    for (int i = 0; i < 1000 && ops_in_flight() > 0; ++i) {
      Wait(std::chrono::milliseconds(10));
    }
    if (ring_ok_) {
      MutexLock lock(&ring_mappings);
      io_uring_queue_exit(&ring_);
    }
    if (efd_ >= 0) ::close(efd_);
  }

  int ring_fd() const { return ring_.ring_fd; }

 private:
  io_uring_sqe* GetSqe() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    while (sqe == nullptr) {  // submission queue full: flush it
      io_uring_submit(&ring_);
      ++stats_.enters;
      sqe = io_uring_get_sqe(&ring_);
    }
    return sqe;
  }

  bool StartOp(IoOp* op) override {
    io_uring_sqe* sqe = GetSqe();
    switch (op->kind) {
      case IoOp::Kind::kRecv:
        io_uring_prep_recv(sqe, op->fd, op->buf.data(), op->buf.size(), 0);
        break;
      case IoOp::Kind::kSend:
        // MSG_WAITALL: the kernel retries a short send itself, so a send's
        // completion means all of it went (what a quiet send relies on).
        io_uring_prep_send(sqe, op->fd, op->buf.data() + op->offset, op->buf.size() - op->offset,
                           MSG_NOSIGNAL | MSG_WAITALL);
        break;
      case IoOp::Kind::kSendMsg:
        io_uring_prep_sendmsg(sqe, op->fd, &op->msg, MSG_NOSIGNAL | MSG_WAITALL);
        break;
      case IoOp::Kind::kConnect:
        io_uring_prep_connect(sqe, op->fd, reinterpret_cast<sockaddr*>(&op->addr), op->addrlen);
        break;
      case IoOp::Kind::kPoll:
        io_uring_prep_poll_add(sqe, op->fd, POLLIN);
        break;
    }
    io_uring_sqe_set_data(sqe, op);
    return true;
  }

  // An async cancel: the operation's own completion still arrives, with
  // -ECANCELED or, if it won the race, its real result.
  void CancelOp(IoOp* op) override {
    io_uring_sqe* sqe = GetSqe();
    io_uring_prep_cancel(sqe, op, 0);
    io_uring_sqe_set_data64(sqe, kCancelSent);
  }
  void InterruptOp(IoOp* op) override { CancelOp(op); }

  // An SQE names its socket by number, and the kernel looks the number up
  // when the SQE is submitted, not when it is queued. So what is queued is
  // submitted before a number is closed or handed to another loop: the
  // number is free the moment it is closed, another thread's new socket
  // can take it before this loop's next turn, and a queued send would then
  // go out on that socket (a grpc++ server saw one connection's frames in
  // the middle of another's and failed it: "Failed parsing HTTP/2").
  void ForgetFd(int) override {
    if (io_uring_sq_ready(&ring_) == 0) return;
    io_uring_submit(&ring_);
    ++stats_.enters;
  }

  void WakeFromOtherThread() override {
    uint64_t one = 1;
    // EAGAIN only if the counter is saturated: a wake-up is pending anyway.
    (void)!::write(efd_, &one, sizeof one);
  }

  bool SendMsgRing(EventLoop* target) override {
    if (!msg_ring_ok_.load(std::memory_order_relaxed) || target->backend() != Backend::kIoUring ||
        !static_cast<UringLoop*>(target)->msg_ring_ok_.load(std::memory_order_relaxed)) {
      return false;  // the caller writes the target's eventfd
    }
    io_uring_sqe* sqe = GetSqe();
    io_uring_prep_msg_ring(sqe, static_cast<UringLoop*>(target)->ring_fd(), 0, kMsgRingIn, 0);
    io_uring_sqe_set_data64(sqe, kMsgRingSent);
    ++stats_.msg_rings_sent;
    // Submitted now, not with this loop's next submit: the code that
    // posted may go on to block this thread (a blocking call to another
    // channel's CQ thread from a callback), and a wake-up that waits for
    // our next turn would then never be sent (issue 11: a lost wake-up).
    // Posts from one loop to another are off the per-call path.
    io_uring_submit(&ring_);
    return true;
  }

  void ArmWakeRead() {
    if (wake_armed_) return;
    io_uring_sqe* sqe = GetSqe();
    io_uring_prep_read(sqe, efd_, &wake_value_, sizeof wake_value_, 0);
    io_uring_sqe_set_data64(sqe, kWakeRead);
    wake_armed_ = true;
  }

  // Waits for one completion that matters: quiet sends (which complete
  // during the submit on loopback) are counted in, so a turn that sends a
  // request and waits for its reply costs one io_uring_enter, not two.
  void Wait(Duration timeout) override {
    ArmWakeRead();
    ++stats_.enters;
    unsigned want = 1 + static_cast<unsigned>(quiet_in_flight());
    if (timeout == Duration::zero()) {
      io_uring_submit_and_get_events(&ring_);
    } else if (timeout < Duration::zero()) {
      io_uring_submit_and_wait(&ring_, want);
    } else {
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(timeout).count();
      __kernel_timespec ts{ns / 1000000000, ns % 1000000000};
      io_uring_cqe* cqe = nullptr;
      io_uring_submit_and_wait_timeout(&ring_, &cqe, want, &ts, nullptr);
    }
    Reap();
  }

  // Takes every completion off the ring first, then dispatches them: a
  // resumed coroutine may queue new SQEs or orphan other operations.
  void Reap() {
    for (;;) {
      io_uring_cqe* cqes[128];
      unsigned n = io_uring_peek_batch_cqe(&ring_, cqes, 128);
      if (n == 0) return;
      std::pair<uint64_t, int> done[128];
      for (unsigned i = 0; i < n; ++i) done[i] = {cqes[i]->user_data, cqes[i]->res};
      io_uring_cq_advance(&ring_, n);
      for (unsigned i = 0; i < n; ++i) Dispatch(done[i].first, done[i].second);
    }
  }

  void Dispatch(uint64_t tag, int res) {
    if (tag >= kMaxTag) {
      Complete(reinterpret_cast<IoOp*>(tag), res);
      return;
    }
    if (tag == kWakeRead) wake_armed_ = false;  // re-armed next turn
    if (tag == kMsgRingSent && res < 0) {
      // The target was not woken. It is gone (EBADFD, EOWNERDEAD: nothing
      // to wake) or its completion queue overflowed (EOVERFLOW: it has
      // completions to reap, so it is awake, and it drains its inbox every
      // turn). Either way this loop wakes others by eventfd from now on,
      // which cannot fail that way.
      ++stats_.msg_ring_failures;
      msg_ring_ok_.store(false, std::memory_order_relaxed);
    }
    // kMsgRingIn: being awake is the point. kCancelSent: nothing to do.
  }

  io_uring ring_{};
  bool ring_ok_ = false;
  bool defer_taskrun_ = true;
  // MSG_RING wakes other loops, and other loops may wake this one with it:
  // probed at Init, off after one failed (this loop's thread writes it;
  // senders read a target's from theirs).
  std::atomic<bool> msg_ring_ok_{false};
  int efd_ = -1;
  bool wake_armed_ = false;
  uint64_t wake_value_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<EventLoop>> NewUringLoop() {
  auto loop = std::make_unique<UringLoop>();
  if (absl::Status s = loop->Init(); !s.ok()) return s;
  return std::unique_ptr<EventLoop>(std::move(loop));
}

}  // namespace ringrpc::runtime::internal
