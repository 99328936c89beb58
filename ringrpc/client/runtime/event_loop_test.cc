// The event loop on both backends, with real sockets and real threads.
#include "ringrpc/client/runtime/event_loop.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "ringrpc/client/runtime/cq_threads.h"
#include "ringrpc/client/runtime/loop_event.h"
#include "ringrpc/pool/pool.h"
#include "tests/testing/loopback.h"

namespace ringrpc::runtime {
namespace {

using std::chrono::milliseconds;

int OpenFds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n - 1;  // the DIR's own fd
}

// A loopback listener with an echo thread per connection.
class EchoServer {
 public:
  EchoServer() {
    fd_ = ::ringrpc::testing::ListenLoopback(64, &addr_);
    acceptor_ = std::thread([this] {
      for (;;) {
        int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        echoers_.emplace_back([c] {
          char buf[4096];
          for (ssize_t n; (n = ::read(c, buf, sizeof buf)) > 0;) {
            if (::write(c, buf, n) != n) break;
          }
          ::close(c);
        });
      }
    });
  }
  ~EchoServer() {
    ::shutdown(fd_, SHUT_RDWR);
    acceptor_.join();
    ::close(fd_);
    for (auto& t : echoers_) t.join();
  }
  const sockaddr_in& addr() const { return addr_; }

 private:
  int fd_;
  sockaddr_in addr_{};
  std::thread acceptor_;
  std::vector<std::thread> echoers_;
};

int NonBlockingSocket() { return ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0); }

class LoopTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<EventLoop>> loop = EventLoop::Create(GetParam());
    if (!loop.ok() && GetParam() == Backend::kIoUring) {
      GTEST_SKIP() << "io_uring unavailable here: " << loop.status();
    }
    ASSERT_TRUE(loop.ok()) << loop.status();
    loop_ = std::move(*loop);
    ASSERT_EQ(loop_->backend(), GetParam());
  }
  // Runs turns until `done` or `limit` passes.
  template <typename F>
  bool RunUntil(F done, milliseconds limit = milliseconds(5000)) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() > end) return false;
      loop_->RunOnce(milliseconds(50));
    }
    return true;
  }
  std::unique_ptr<EventLoop> loop_;
};

struct Recorder : TimerCallback {
  Recorder(std::vector<int>* order, int id) : order(order), id(id) {}
  std::vector<int>* order;
  int id;
  TimePoint fired_at{};
  void OnTimer() override {
    order->push_back(id);
    fired_at = Clock::now();
  }
};

// A loop made on one thread and destroyed there, then another on a new
// thread with nothing ordering the two (the first thread is not joined):
// the new ring's memory may be the old one's, mapped again. Under TSAN that
// must not read as a race (the ring's memory is announced as new when a
// loop starts: UringLoop::ForgetEarlierUsesOfTheRingMemory).
TEST_P(LoopTest, LoopsOnSuccessiveThreadsShareNothingEvenAtOneAddress) {
  static std::atomic<int> fired{0};  // relaxed: orders nothing on purpose
  fired.store(0, std::memory_order_relaxed);
  const Backend backend = GetParam();
  for (int i = 0; i < 6; ++i) {
    std::thread([backend] {
      absl::StatusOr<std::unique_ptr<EventLoop>> loop = EventLoop::Create(backend);
      if (!loop.ok()) return;
      std::vector<int> order;
      Recorder r(&order, 0);
      (*loop)->ScheduleTimer(Clock::now(), &r);
      for (int k = 0; k < 20 && order.empty(); ++k) (*loop)->RunOnce(milliseconds(5));
      fired.fetch_add(static_cast<int>(order.size()), std::memory_order_relaxed);
    }).detach();
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (fired.load(std::memory_order_relaxed) <= i && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(milliseconds(5));
    }
    std::this_thread::sleep_for(milliseconds(20));  // the thread's loop is gone
  }
  EXPECT_EQ(fired.load(std::memory_order_relaxed), 6);
}

TEST_P(LoopTest, TimersFireInDeadlineOrderAndNotEarly) {
  std::vector<int> order;
  TimePoint start = Clock::now();
  Recorder a(&order, 1), b(&order, 2), c(&order, 3), cancelled(&order, 4);
  loop_->ScheduleTimer(start + milliseconds(30), &c);
  loop_->ScheduleTimer(start + milliseconds(10), &a);
  loop_->ScheduleTimer(start + milliseconds(20), &b);
  uint64_t id = loop_->ScheduleTimer(start + milliseconds(15), &cancelled);
  EXPECT_TRUE(loop_->CancelTimer(id));
  EXPECT_FALSE(loop_->CancelTimer(id));
  ASSERT_TRUE(RunUntil([&] { return order.size() == 3; }));
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_GE(a.fired_at - start, milliseconds(10));
  EXPECT_GE(c.fired_at - start, milliseconds(30));
  EXPECT_LT(c.fired_at - start, milliseconds(30 + 20));
}

TEST_P(LoopTest, PostsFromAnotherThreadRunInOrderOnTheLoopThread) {
  std::thread runner([&] { loop_->Run(); });
  constexpr int kPosts = 2000;
  std::vector<int> seen;
  std::atomic<bool> wrong_thread{false};
  std::thread::id loop_thread = runner.get_id();
  for (int i = 0; i < kPosts; ++i) {
    loop_->Post([&, i] {
      if (std::this_thread::get_id() != loop_thread) wrong_thread = true;
      seen.push_back(i);
    });
  }
  std::atomic<bool> last{false};
  loop_->Post([&] { last = true; });
  while (!last) std::this_thread::yield();
  loop_->Stop();
  runner.join();
  ASSERT_EQ(seen.size(), size_t{kPosts});
  for (int i = 0; i < kPosts; ++i) ASSERT_EQ(seen[i], i);
  EXPECT_FALSE(wrong_thread);
  // One wake-up per empty -> non-empty transition, not one per post.
  EXPECT_LT(loop_->stats().wakeups_sent, uint64_t{kPosts});
  EXPECT_EQ(loop_->stats().posts, uint64_t{kPosts + 1});
}

Task<void> EchoOnce(EventLoop& loop, sockaddr_in addr, std::string msg, std::string* got,
                    int* error) {
  int fd = NonBlockingSocket();
  IoResult c = co_await loop.Connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  if (!c.ok()) {
    *error = -c.res;
    loop.Close(fd);
    co_return;
  }
  std::vector<uint8_t> out(msg.begin(), msg.end());
  size_t sent = 0;
  while (sent < msg.size()) {
    IoResult s = co_await loop.Send(fd, std::move(out), sent);
    if (!s.ok()) {
      *error = -s.res;
      loop.Close(fd);
      co_return;
    }
    sent += s.res;
    out = std::move(s.buf);
  }
  std::vector<uint8_t> in(1024);
  while (got->size() < msg.size()) {
    IoResult r = co_await loop.Recv(fd, std::move(in));
    if (r.res <= 0) {
      *error = r.res == 0 ? -1 : -r.res;
      break;
    }
    got->append(reinterpret_cast<char*>(r.buf.data()), r.res);
    in = std::move(r.buf);
  }
  loop.Close(fd);
}

TEST_P(LoopTest, ConnectSendRecvOverLoopbackTcp) {
  EchoServer server;
  int fds_before = OpenFds();
  std::string got;
  int error = 0;
  std::string msg(100000, 'x');
  for (size_t i = 0; i < msg.size(); ++i) msg[i] = char('a' + i % 26);
  loop_->Spawn(EchoOnce(*loop_, server.addr(), msg, &got, &error));
  ASSERT_TRUE(RunUntil([&] { return got.size() >= msg.size() || error != 0; }));
  EXPECT_EQ(error, 0) << std::strerror(error);
  EXPECT_EQ(got, msg);
  RunUntil([&] { return loop_->ops_in_flight() == 0; });
  // The echo thread closes its end when it sees ours close.
  EXPECT_TRUE(RunUntil([&] { return OpenFds() == fds_before; }, milliseconds(1000)))
      << OpenFds() << " fds open, " << fds_before << " before";
}

TEST_P(LoopTest, ConnectToAClosedPortIsRefused) {
  int probe = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(probe, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(probe, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(probe);  // the port is now closed
  std::string got;
  int error = 0;
  loop_->Spawn(EchoOnce(*loop_, a, "hi", &got, &error));
  ASSERT_TRUE(RunUntil([&] { return error != 0; }));
  EXPECT_EQ(error, ECONNREFUSED);
}

Task<void> RecvForever(EventLoop& loop, int fd, bool* returned) {
  IoResult r = co_await loop.Recv(fd, std::vector<uint8_t>(64));
  (void)r;
  *returned = true;
}

TEST_P(LoopTest, DestroyingATaskCancelsItsRecvInFlight) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  bool returned = false;
  {
    Task<void> t = RecvForever(*loop_, sv[0], &returned);
    t.handle().resume();
    loop_->RunOnce(milliseconds(10));
    EXPECT_EQ(loop_->ops_in_flight(), 1u);
  }  // destroyed mid-recv
  EXPECT_EQ(loop_->stats().ops_cancelled, 1u);
#if defined(__SANITIZE_ADDRESS__)
  // Orphaned, its cancel not yet answered: named by nothing but the
  // kernel's ring, so the loop owns it, and a leak check that runs now (a
  // process exiting while a CQ thread tears its loop down) finds it.
  EXPECT_EQ(__lsan_do_recoverable_leak_check(), 0);
#endif
  ASSERT_TRUE(RunUntil([&] { return loop_->ops_in_flight() == 0; }));
  // Data arriving later does not resume anything or touch freed memory.
  ASSERT_EQ(::write(sv[1], "late", 4), 4);
  loop_->RunOnce(milliseconds(10));
  EXPECT_FALSE(returned);
  ::close(sv[0]);
  ::close(sv[1]);
}

// Awaits `aw` and records its result; publishes the op for Interrupt().
Task<void> AwaitInto(IoAwaitable aw, IoOp** op, IoResult* out, bool* returned) {
  *op = aw.op();
  *out = co_await aw;
  *op = nullptr;
  *returned = true;
}

// A send queued this turn, then its socket closed (the connection
// destroyed) before the loop submits: the descriptor number may be reused
// at once -- by another thread's new connection -- and the queued send
// must not go out on that other socket (it did: a grpc++ server saw
// another connection's frames in the middle of its stream and failed it
// with "Failed parsing HTTP/2").
TEST_P(LoopTest, ClosingASocketWithASendQueuedNeverSendsOnItsReusedNumber) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  const int closed_fd = sv[0];
  {
    IoOp* op = nullptr;
    IoResult r;
    bool returned = false;
    Task<void> t =
        AwaitInto(loop_->Send(sv[0], std::vector<uint8_t>(4, 'x'), 0), &op, &r, &returned);
    t.handle().resume();  // queued, not yet submitted
  }                       // the sender goes away
  loop_->Close(sv[0]);
  // The number is free: the next socket gets it (lowest free descriptor).
  int other[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, other), 0);
  ASSERT_EQ(other[0], closed_fd) << "the test needs the number reused";
  ASSERT_TRUE(RunUntil([&] { return loop_->ops_in_flight() == 0; }));
  char buf[16];
  EXPECT_EQ(::recv(other[1], buf, sizeof buf, MSG_DONTWAIT), -1)
      << "the closed socket's send arrived on the socket that reused its number";
  EXPECT_EQ(errno, EAGAIN);
  for (int fd : {sv[1], other[0], other[1]}) ::close(fd);
}

TEST_P(LoopTest, InterruptedRecvEndsCancelledAndLosesNoBytes) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  IoOp* op = nullptr;
  IoResult r;
  bool returned = false;
  loop_->Spawn(AwaitInto(loop_->Recv(sv[0], std::vector<uint8_t>(64)), &op, &r, &returned));
  loop_->RunOnce(milliseconds(10));
  ASSERT_NE(op, nullptr);
  ASSERT_FALSE(returned);
  loop_->Interrupt(op);
  EXPECT_FALSE(returned) << "the waiter resumes on a later pass, never inline";
  ASSERT_TRUE(RunUntil([&] { return returned; }));
  EXPECT_EQ(r.res, -ECANCELED);
  EXPECT_EQ(loop_->ops_in_flight(), 0u);
  // Bytes written after the interrupt are all there for the next reader.
  ASSERT_EQ(::write(sv[1], "after", 5), 5);
  returned = false;
  loop_->Spawn(AwaitInto(loop_->Recv(sv[0], std::vector<uint8_t>(64)), &op, &r, &returned));
  ASSERT_TRUE(RunUntil([&] { return returned; }));
  ASSERT_EQ(r.res, 5);
  EXPECT_EQ(std::string(r.buf.begin(), r.buf.begin() + 5), "after");
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST_P(LoopTest, InterruptingARecvThatAlreadyGotBytesKeepsThem) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  IoOp* op = nullptr;
  IoResult r;
  bool returned = false;
  loop_->Spawn(AwaitInto(loop_->Recv(sv[0], std::vector<uint8_t>(64)), &op, &r, &returned));
  loop_->RunOnce(milliseconds(10));
  ASSERT_NE(op, nullptr);
  // The bytes arrive and the interrupt is asked in the same turn: whichever
  // wins, no byte is lost.
  ASSERT_EQ(::write(sv[1], "raced", 5), 5);
  loop_->Interrupt(op);
  ASSERT_TRUE(RunUntil([&] { return returned; }));
  std::string got;
  if (r.res > 0) {
    got.assign(r.buf.begin(), r.buf.begin() + r.res);
  } else {
    EXPECT_EQ(r.res, -ECANCELED);
    char buf[16];
    ssize_t n = ::recv(sv[0], buf, sizeof buf, MSG_DONTWAIT);
    ASSERT_EQ(n, 5);
    got.assign(buf, n);
  }
  EXPECT_EQ(got, "raced");
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST_P(LoopTest, PollInWaitsForBytesWithoutTakingThem) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  IoOp* op = nullptr;
  IoResult r;
  bool returned = false;
  loop_->Spawn(AwaitInto(loop_->PollIn(sv[0]), &op, &r, &returned));
  loop_->RunOnce(milliseconds(10));
  EXPECT_FALSE(returned);
  ASSERT_EQ(::write(sv[1], "ping", 4), 4);
  ASSERT_TRUE(RunUntil([&] { return returned; }));
  EXPECT_TRUE(r.res > 0 && (r.res & POLLIN)) << r.res;
  char buf[8];
  EXPECT_EQ(::recv(sv[0], buf, sizeof buf, MSG_DONTWAIT), 4);
  // An interrupted poll ends cancelled.
  returned = false;
  loop_->Spawn(AwaitInto(loop_->PollIn(sv[0]), &op, &r, &returned));
  loop_->RunOnce(milliseconds(10));
  ASSERT_NE(op, nullptr);
  loop_->Interrupt(op);
  ASSERT_TRUE(RunUntil([&] { return returned; }));
  EXPECT_EQ(r.res, -ECANCELED);
  EXPECT_EQ(loop_->ops_in_flight(), 0u);
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST_P(LoopTest, LoopDestroyedWithOperationsInFlightLeaksNothing) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  bool returned = false;
  for (int i = 0; i < 3; ++i) {
    int dup = ::dup(sv[0]);
    loop_->Spawn(RecvForever(*loop_, dup, &returned));
  }
  loop_->RunOnce(milliseconds(10));
  EXPECT_EQ(loop_->spawned(), 3u);
  loop_.reset();  // ASAN checks the buffers and ops were freed exactly once
  EXPECT_FALSE(returned);
  ::close(sv[0]);
  ::close(sv[1]);
}

// Many sends queued in one turn go to the kernel in one enter.
TEST_P(LoopTest, OneEnterPerTurnCoversEverySocket) {
  constexpr int kPairs = 16;
  int sv[kPairs][2];
  for (auto& p : sv) ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, p), 0);
  int done = 0;
  auto send_one = [](EventLoop& loop, int fd, int* done) -> Task<void> {
    IoResult r = co_await loop.Send(fd, std::vector<uint8_t>(100, 7));
    if (r.res == 100) ++*done;
  };
  loop_->RunOnce(Duration::zero());  // settle (arms the wake-up read)
  uint64_t enters = loop_->stats().enters;
  for (auto& p : sv) loop_->Spawn(send_one(*loop_, p[0], &done));
  loop_->RunOnce(milliseconds(100));
  EXPECT_EQ(done, kPairs);
  if (GetParam() == Backend::kIoUring) {
    EXPECT_EQ(loop_->stats().enters - enters, 1u);
  }
  for (auto& p : sv) {
    ::close(p[0]);
    ::close(p[1]);
  }
}

// The loop is the pool's runtime on its thread: waits and acquire timeouts
// run on real time.
struct NullManager {
  struct Connection {};
  Task<absl::StatusOr<Connection>> Connect() { co_return Connection{}; }
  void Disconnect(Connection&&) {}
};

TEST_P(LoopTest, PoolAcquireTimeoutRunsOnTheLoop) {
  pool::ThreadContext ctx(loop_.get());
  pool::ThreadContext::Scope scope(&ctx);
  pool::PoolConfig c;
  c.max_size = 1;
  c.acquire_timeout = milliseconds(40);
  auto p = *pool::Pool<NullManager>::Create(c, std::make_shared<NullManager>());
  absl::StatusOr<pool::Lease<NullManager>> held = p.TryAcquire();
  auto first = [](pool::Pool<NullManager> p) -> Task<absl::StatusOr<pool::Lease<NullManager>>> {
    co_return co_await p.Acquire();
  };
  Task<absl::StatusOr<pool::Lease<NullManager>>> a = first(p);
  a.handle().resume();
  ASSERT_TRUE(a.done() && a.result().ok());
  // Deadlines count from the loop's time, cached at the start of a turn.
  loop_->RunOnce(Duration::zero());
  TimePoint start = loop_->Now();
  Task<absl::StatusOr<pool::Lease<NullManager>>> b = first(p);
  b.handle().resume();
  ASSERT_TRUE(RunUntil([&] { return b.done(); }));
  auto waited = Clock::now() - start;
  EXPECT_EQ(b.result().status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_GE(waited, milliseconds(40));
  EXPECT_LT(waited, milliseconds(40 + 20));
  a.result()->Release();
}

// Issue 11: a finished task's frame (which may hold a channel, its rings
// and sockets) is freed in the turn it finishes, before the loop waits
// again; an idle loop may never turn again.
TEST_P(LoopTest, FinishedTasksAreFreedBeforeTheLoopWaitsAgain) {
  auto held = std::make_shared<int>(7);
  std::weak_ptr<int> watch = held;
  // Started by a post (as Channel::Spawn does), finished at once.
  loop_->Post([this, h = std::move(held)]() mutable {
    loop_->Spawn([](std::shared_ptr<int> h) -> Task<void> {
      EXPECT_EQ(*h, 7);
      co_return;
    }(std::move(h)));
  });
  // One turn with a long wait: while the loop waits, the frame is gone.
  std::atomic<bool> freed_while_waiting{false};
  std::thread waker([&] {
    std::this_thread::sleep_for(milliseconds(300));
    freed_while_waiting = watch.expired();
    loop_->Post([] {});
  });
  loop_->RunOnce(milliseconds(5000));
  waker.join();
  EXPECT_TRUE(freed_while_waiting.load());
  EXPECT_EQ(loop_->spawned(), 0u);
}

// A LoopCondition wakes every coroutine waiting at it when notified, each
// on a later pass (never inside NotifyAll); a waiter whose frame is
// destroyed while it waits leaves the list (the next NotifyAll skips it);
// a NotifyAll with nobody waiting wakes nobody later.
TEST_P(LoopTest, LoopConditionWakesEveryWaiterOnALaterPass) {
  LoopCondition cond(*loop_);
  bool ready = false;
  int woken = 0;
  auto waiter = [](LoopCondition* c, const bool* ready, int* woken) -> Task<void> {
    while (!*ready) co_await c->Wait();
    ++*woken;
  };
  cond.NotifyAll();  // nobody waits: nothing is kept for later
  for (int i = 0; i < 3; ++i) loop_->Spawn(waiter(&cond, &ready, &woken));
  // A fourth waiter that is destroyed while it waits.
  std::optional<Task<void>> dropped(waiter(&cond, &ready, &woken));
  dropped->handle().resume();
  EXPECT_TRUE(cond.has_waiters());
  loop_->RunOnce(milliseconds(0));
  EXPECT_EQ(woken, 0);
  cond.NotifyAll();  // not ready yet: each looks and waits again
  loop_->RunOnce(milliseconds(0));
  EXPECT_EQ(woken, 0);
  EXPECT_TRUE(cond.has_waiters());
  dropped.reset();
  ready = true;
  cond.NotifyAll();
  EXPECT_EQ(woken, 0) << "NotifyAll resumed a waiter inline";
  EXPECT_TRUE(RunUntil([&] { return woken == 3; }));
  EXPECT_FALSE(cond.has_waiters());
  EXPECT_EQ(woken, 3);
}

INSTANTIATE_TEST_SUITE_P(Backends, LoopTest, ::testing::Values(Backend::kIoUring, Backend::kEpoll),
                         [](const auto& info) { return BackendName(info.param); });

// ---- CQ threads --------------------------------------------------------------

TEST(CqThreads, PostsReachEachThreadAndShutdownJoinsAndClosesEverything) {
  int fds_before = OpenFds();
  for (Backend b : {Backend::kIoUring, Backend::kEpoll}) {
    absl::StatusOr<std::unique_ptr<CqThreads>> cq = CqThreads::Start({.threads = 3, .backend = b});
    ASSERT_TRUE(cq.ok()) << cq.status();
    EXPECT_EQ((*cq)->size(), 3u);
    std::atomic<int> ran{0};
    std::vector<std::thread::id> ids(3);
    for (size_t i = 0; i < 3; ++i) {
      (*cq)->Post(i, [&, i] {
        ids[i] = std::this_thread::get_id();
        EXPECT_EQ(EventLoop::Current(), &(*cq)->loop(i));
        EXPECT_EQ(pool::ThreadContext::Current().runtime(), &(*cq)->loop(i));
        ran.fetch_add(1);
      });
    }
    while (ran.load() < 3) std::this_thread::yield();
    EXPECT_NE(ids[0], ids[1]);
    EXPECT_NE(ids[1], ids[2]);
    (*cq)->Shutdown();
  }
  EXPECT_EQ(OpenFds(), fds_before);
}

// A post from one io_uring CQ thread to another wakes it with MSG_RING.
TEST(CqThreads, CrossThreadWakeUpUsesMsgRing) {
  absl::StatusOr<std::unique_ptr<CqThreads>> cq =
      CqThreads::Start({.threads = 2, .backend = Backend::kIoUring});
  if (!cq.ok()) GTEST_SKIP() << "io_uring unavailable: " << cq.status();
  std::atomic<bool> reached{false}, counted{false};
  std::atomic<uint64_t> msg_rings{0};
  (*cq)->Post(0, [&] {
    (*cq)->Post(1, [&] { reached = true; });
    msg_rings = (*cq)->loop(0).stats().msg_rings_sent;
    counted = true;
  });
  // Both: the MSG_RING is submitted at once, so thread 1 may run its post
  // before thread 0 has read its counter.
  while (!reached || !counted) std::this_thread::yield();
  EXPECT_EQ(msg_rings.load(), 1u);
}

// Without MSG_RING (a kernel before 5.18, or RINGRPC_MSG_RING=0) the same
// post wakes the other thread through its eventfd.
TEST(CqThreads, CrossThreadWakeUpFallsBackToTheEventfdWithoutMsgRing) {
  ::setenv("RINGRPC_MSG_RING", "0", 1);
  absl::StatusOr<std::unique_ptr<CqThreads>> cq =
      CqThreads::Start({.threads = 2, .backend = Backend::kIoUring});
  ::unsetenv("RINGRPC_MSG_RING");
  if (!cq.ok()) GTEST_SKIP() << "io_uring unavailable: " << cq.status();
  std::atomic<int> reached{0};
  std::atomic<uint64_t> msg_rings{99}, failures{99};
  for (int i = 0; i < 100; ++i) {
    (*cq)->Post(0, [&] {
      (*cq)->Post(1, [&] { reached.fetch_add(1); });
      msg_rings = (*cq)->loop(0).stats().msg_rings_sent;  // read on loop 0's own thread
      failures = (*cq)->loop(0).stats().msg_ring_failures;
    });
    // Thread 1 asleep between posts: each needs a real wake-up.
    while (reached.load() <= i) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(reached.load(), 100);
  EXPECT_EQ(msg_rings.load(), 0u);
  EXPECT_EQ(failures.load(), 0u);
}

// The last reference can go on one of the set's own threads (a call that
// ends there releases its channel): that must not join itself.
TEST(CqThreads, DestroyedFromOneOfItsOwnThreads) {
  auto cq = std::shared_ptr<CqThreads>(*CqThreads::Start({.threads = 2}));
  std::atomic<bool> done{false};
  std::shared_ptr<CqThreads> last = cq;
  cq.reset();
  last->Post(0, [&done, held = std::make_shared<std::shared_ptr<CqThreads>>(std::move(last))] {
    held->reset();  // ~CqThreads on CQ thread 0
    done = true;
  });
  while (!done) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // thread 0 ends on its own
}

TEST(CqThreads, UnknownPollerInTheEnvironmentIsAClearError) {
  ::setenv("RINGRPC_POLLER", "kqueue", 1);
  absl::StatusOr<std::unique_ptr<CqThreads>> cq = CqThreads::Start({.threads = 1});
  ::unsetenv("RINGRPC_POLLER");
  ASSERT_FALSE(cq.ok());
  EXPECT_EQ(cq.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(cq.status().message()), ::testing::HasSubstr("kqueue"));
}

}  // namespace
}  // namespace ringrpc::runtime
