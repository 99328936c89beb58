// How programs end with ringrpc busy (grpc/grpc#37858, #27086): exit() and
// a return from main with calls in flight and CQ threads busy, exit() from
// inside a callback, a static channel destroyed at exit (each in
// shutdown_helper, a process of its own), and the last reference to a
// channel dropped inside one of its own callbacks. None hangs, crashes or
// leaves a sanitizer report (which makes the helper's exit status non-zero
// in the ASAN and TSAN builds).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ringrpc/client/channel.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/process_stats.h"
#include "tests/testing/server_process.h"

extern char** environ;

namespace ringrpc {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using test::EchoRequest;
using test::EchoResponse;
using test::ring::TestService;

struct Ended {
  bool exited = false;  // within the limit
  int status = -1;      // waitpid's
  std::string out;      // its stdout and stderr
};

// Runs the helper; kills it if it has not ended within `limit`.
Ended RunHelper(const std::string& mode, const std::string& target, seconds limit) {
  int pipe_fds[2];
  EXPECT_EQ(::pipe(pipe_fds), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pipe_fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, pipe_fds[0]);
  std::string binary = "tests/races/shutdown_helper";
  std::vector<char*> argv = {binary.data(), const_cast<char*>(mode.c_str()),
                             const_cast<char*>(target.c_str()), nullptr};
  pid_t pid;
  const int rc = posix_spawn(&pid, binary.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(pipe_fds[1]);
  Ended e;
  if (rc != 0) {
    ::close(pipe_fds[0]);
    e.out = "spawn failed";
    return e;
  }
  const auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd pfd{pipe_fds[0], POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[4096];
    const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
    if (n <= 0) break;  // every writer closed: the helper ended
    e.out.append(buf, n);
  }
  ::close(pipe_fds[0]);
  for (int i = 0; i < 100; ++i) {  // it closed its output: it is ending
    if (::waitpid(pid, &e.status, WNOHANG) == pid) {
      e.exited = true;
      return e;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &e.status, 0);
  return e;
}

class Shutdown : public ::testing::TestWithParam<const char*> {};

TEST_P(Shutdown, EndsAtOnceWithStatusZeroAndNoReport) {
  auto server = testing::ServerProcess::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  const auto start = std::chrono::steady_clock::now();
  Ended e = RunHelper(GetParam(), (*server)->address(), seconds(30));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(e.exited) << GetParam() << " still running after 30 s; output:\n" << e.out;
  EXPECT_TRUE(WIFEXITED(e.status))
      << GetParam() << " died of signal " << (WIFSIGNALED(e.status) ? WTERMSIG(e.status) : 0)
      << "; output:\n"
      << e.out;
  EXPECT_EQ(WEXITSTATUS(e.status), 0) << GetParam() << "; output:\n" << e.out;
  EXPECT_THAT(e.out, ::testing::HasSubstr("LOADED")) << GetParam();
  // The slow calls sleep 20 s on the server: ending must not wait for them
  // (the bound leaves room for a loaded machine starting the helper).
  EXPECT_LT(took, seconds(15)) << GetParam() << "; output:\n" << e.out;
}

INSTANTIATE_TEST_SUITE_P(Modes, Shutdown,
                         ::testing::Values("exit-in-flight", "return-in-flight",
                                           "exit-from-callback", "static-channel"),
                         [](const auto& info) {
                           std::string n = info.param;
                           std::erase(n, '-');
                           return n;
                         });

// The last reference to a channel (and its stub) dropped inside one of its
// own callbacks, on its CQ thread, with other calls queued: every call ends
// once, and the threads and descriptors go with the channel.
TEST(ShutdownInProcess, LastChannelReferenceDroppedInsideItsOwnCallback) {
  auto server = testing::ServerProcess::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  // A thread made and joined first: TSAN starts a background thread of its
  // own with the process's first pthread_create, which is not ours.
  std::thread([] {}).join();
  const int fds = testing::OpenFds();
  const long threads = testing::ThreadCount();
  for (int round = 0; round < 20; ++round) {
    struct Held {
      std::shared_ptr<Channel> channel;
      std::unique_ptr<TestService::Stub> stub;
    };
    auto held = new Held();
    held->channel = CreateChannel((*server)->address(), InsecureChannelCredentials());
    held->stub = TestService::NewStub(held->channel);
    constexpr int kCalls = 10;
    struct Slot {
      ClientContext ctx;
      EchoRequest req;
      EchoResponse resp;
      std::promise<Status> done;
    };
    std::vector<std::unique_ptr<Slot>> slots;
    for (int i = 0; i < kCalls; ++i) slots.push_back(std::make_unique<Slot>());
    std::atomic<int> ended{0};
    // Call 0's callback drops the last reference only once every call is
    // issued: the stub is the caller's, and using it after deleting it is
    // the caller's bug (call 0 can end before the loop below has finished).
    std::promise<void> issued;
    std::shared_future<void> all_issued = issued.get_future().share();
    for (int i = 0; i < kCalls; ++i) {
      Slot* s = slots[i].get();
      s->req.set_payload(std::to_string(i));
      s->req.set_sleep_ms(i == 0 ? 0 : 50);
      held->stub->async()->Unary(&s->ctx, &s->req, &s->resp,
                                 [s, i, &ended, held, all_issued](Status st) {
                                   if (i == 0) {
                                     all_issued.wait();
                                     delete held;  // the channel's last reference, here
                                   }
                                   ended.fetch_add(1);
                                   s->done.set_value(st);
                                 });
    }
    issued.set_value();
    for (int i = 0; i < kCalls; ++i) {
      auto f = slots[i]->done.get_future();
      ASSERT_EQ(f.wait_for(seconds(10)), std::future_status::ready) << "call " << i;
      Status st = f.get();
      // The first call is answered; the others either are, or end
      // CANCELLED/UNAVAILABLE with the channel gone.
      if (i == 0) {
        EXPECT_TRUE(st.ok()) << st.ToString();
      }
      if (st.ok()) {
        EXPECT_EQ(slots[i]->resp.payload(), std::to_string(i));
      }
    }
    EXPECT_EQ(ended.load(), kCalls);
  }
  auto settled = [&] {
    for (int i = 0; i < 200; ++i) {
      if (testing::OpenFds() <= fds && testing::ThreadCount() <= threads) return true;
      std::this_thread::sleep_for(milliseconds(50));
    }
    return false;
  };
  EXPECT_TRUE(settled()) << testing::OpenFds() << " fds (" << fds << " before), "
                         << testing::ThreadCount() << " threads (" << threads << " before)";
}

}  // namespace
}  // namespace ringrpc
