// The epoll backend, for where io_uring cannot be set up: the same loop,
// readiness-based. An operation is tried at once; if it would block, its fd
// is watched and the operation retried when ready. No operation ever leaves
// a buffer with the kernel, so a cancelled one is freed at once.
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/runtime/internal/backends.h"

namespace ringrpc::runtime::internal {
namespace {

class EpollLoop final : public EventLoop {
 public:
  EpollLoop() : EventLoop(Backend::kEpoll) {}

  absl::Status Init() {
    epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
    efd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (epfd_ < 0 || efd_ < 0) {
      return absl::InternalError(absl::StrCat("epoll/eventfd: ", std::strerror(errno)));
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = efd_;
    ::epoll_ctl(epfd_, EPOLL_CTL_ADD, efd_, &ev);
    return absl::OkStatus();
  }

  ~EpollLoop() override {
    DestroyTasks();
    QuiesceWakers();
    if (epfd_ >= 0) ::close(epfd_);
    if (efd_ >= 0) ::close(efd_);
  }

 private:
  struct Watch {
    IoOp* reader = nullptr;
    IoOp* writer = nullptr;
    uint32_t events = 0;  // registered with epoll
  };

  // Tries `op` without blocking. True when it ended (op->res set).
  static bool TryIo(IoOp* op, bool ready) {
    ssize_t n = 0;
    switch (op->kind) {
      case IoOp::Kind::kRecv:
        n = ::recv(op->fd, op->buf.data(), op->buf.size(), MSG_DONTWAIT);
        break;
      case IoOp::Kind::kSend:
        n = ::send(op->fd, op->buf.data() + op->offset, op->buf.size() - op->offset,
                   MSG_DONTWAIT | MSG_NOSIGNAL);
        break;
      case IoOp::Kind::kSendMsg:
        n = ::sendmsg(op->fd, &op->msg, MSG_DONTWAIT | MSG_NOSIGNAL);
        break;
      case IoOp::Kind::kPoll: {
        pollfd p{op->fd, POLLIN, 0};
        if (::poll(&p, 1, 0) <= 0 || p.revents == 0) return false;
        op->res = p.revents;
        return true;
      }
      case IoOp::Kind::kConnect: {
        if (ready) {  // writable after EINPROGRESS: the outcome is in SO_ERROR
          int err = 0;
          socklen_t len = sizeof err;
          ::getsockopt(op->fd, SOL_SOCKET, SO_ERROR, &err, &len);
          op->res = -err;
          return true;
        }
        n = ::connect(op->fd, reinterpret_cast<sockaddr*>(&op->addr), op->addrlen);
        if (n < 0 && (errno == EINPROGRESS || errno == EALREADY)) return false;
        break;
      }
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    op->res = n < 0 ? -errno : static_cast<int>(n);
    return true;
  }

  bool StartOp(IoOp* op) override {
    if (TryIo(op, false)) return false;
    Watch& w = watches_[op->fd];
    (IsReader(op) ? w.reader : w.writer) = op;
    Update(op->fd, w);
    return true;
  }

  static bool IsReader(const IoOp* op) {
    return op->kind == IoOp::Kind::kRecv || op->kind == IoOp::Kind::kPoll;
  }

  void Unwatch(IoOp* op) {
    auto it = watches_.find(op->fd);
    if (it == watches_.end()) return;
    if (it->second.reader == op) it->second.reader = nullptr;
    if (it->second.writer == op) it->second.writer = nullptr;
    Update(op->fd, it->second);
  }

  void CancelOp(IoOp* op) override {
    Unwatch(op);
    std::erase(interrupted_, op);
    OpEnded();
    FreeOp(op);
  }

  // Completed with -ECANCELED at the start of the next Wait, never inline.
  void InterruptOp(IoOp* op) override {
    Unwatch(op);
    interrupted_.push_back(op);
  }

  void ForgetFd(int fd) override {
    auto it = watches_.find(fd);
    if (it == watches_.end()) return;
    if (it->second.events != 0) ::epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
    watches_.erase(it);
  }

  void Update(int fd, Watch& w) {
    uint32_t want = (w.reader ? EPOLLIN : 0) | (w.writer ? EPOLLOUT : 0);
    if (want == w.events) return;
    epoll_event ev{};
    ev.events = want;
    ev.data.fd = fd;
    int op = w.events == 0 ? EPOLL_CTL_ADD : (want == 0 ? EPOLL_CTL_DEL : EPOLL_CTL_MOD);
    ::epoll_ctl(epfd_, op, fd, &ev);
    w.events = want;
  }

  void WakeFromOtherThread() override {
    uint64_t one = 1;
    (void)!::write(efd_, &one, sizeof one);
  }

  void Wait(Duration timeout) override {
    int ms = -1;
    if (timeout >= Duration::zero()) {
      // Round up, so a timer is never found not yet due after the wait.
      ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(timeout).count());
    }
    if (!interrupted_.empty()) {
      for (IoOp* op : std::exchange(interrupted_, {})) Complete(op, -ECANCELED);
      ms = 0;
    }
    epoll_event events[64];
    ++stats_.enters;
    int n = ::epoll_wait(epfd_, events, 64, ms);
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == efd_) {
        uint64_t v;
        (void)!::read(efd_, &v, sizeof v);
        continue;
      }
      uint32_t ev = events[i].events;
      // Each completion may run a coroutine that changes watches_: look the
      // fd up again every time.
      if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP)) Retry(fd, /*reader=*/true);
      if (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)) Retry(fd, /*reader=*/false);
    }
  }

  void Retry(int fd, bool reader) {
    auto it = watches_.find(fd);
    if (it == watches_.end()) return;
    IoOp*& slot = reader ? it->second.reader : it->second.writer;
    IoOp* op = slot;
    if (op == nullptr || !TryIo(op, true)) return;
    slot = nullptr;
    Update(fd, it->second);
    Complete(op, op->res);
  }

  int epfd_ = -1;
  int efd_ = -1;
  std::unordered_map<int, Watch> watches_;
  std::vector<IoOp*> interrupted_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<EventLoop>> NewEpollLoop() {
  auto loop = std::make_unique<EpollLoop>();
  if (absl::Status s = loop->Init(); !s.ok()) return s;
  return std::unique_ptr<EventLoop>(std::move(loop));
}

}  // namespace ringrpc::runtime::internal
