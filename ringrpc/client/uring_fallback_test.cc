// The automatic fallback to epoll when io_uring is refused, as a seccomp
// filter (containers' default profiles), io_uring_disabled or an old
// kernel refuse it: this test process forbids io_uring_setup to itself
// (EPERM from a seccomp filter, on every thread) before ringrpc starts, then
// calls a real grpc++ server. Its own binary: the filter cannot be undone.
#include <errno.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "absl/strings/match.h"
#include "ringrpc/client/channel.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/server_process.h"

namespace ringrpc {
namespace {

using test::EchoRequest;
using test::EchoResponse;
using test::ring::TestService;

// io_uring_setup fails EPERM for every thread of this process from now on.
bool ForbidIoUringSetup() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return false;
  return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) == 0;
}

Status Call(TestService::Stub& stub, const std::string& payload, EchoResponse* resp) {
  ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  EchoRequest req;
  req.set_payload(payload);
  return stub.Unary(&ctx, req, resp);
}

TEST(UringFallback, CallsWorkOnEpollWhenIoUringIsRefusedAndTheChannelSaysSo) {
  auto server = testing::ServerProcess::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  {
    // Before: this kernel gives io_uring (else there is nothing to fall
    // from). Threads of its own: the process-wide set is made only below,
    // under the filter (a set let go here may outlive this scope briefly).
    ChannelArguments args;
    args.SetInt("ringrpc.cq_threads", 1);
    auto channel = CreateCustomChannel((*server)->address(), InsecureChannelCredentials(), args);
    if (channel->poller() != "io_uring") GTEST_SKIP() << "io_uring unavailable here already";
  }
  ASSERT_TRUE(ForbidIoUringSetup()) << "seccomp: " << errno;
  ASSERT_EQ(syscall(__NR_io_uring_setup, 8, nullptr), -1);
  ASSERT_EQ(errno, EPERM);

  // The process-wide CQ threads and a channel's own both fall back.
  ChannelArguments own;
  own.SetInt("ringrpc.cq_threads", 2);
  for (auto channel :
       {CreateChannel((*server)->address(), InsecureChannelCredentials()),
        CreateCustomChannel((*server)->address(), InsecureChannelCredentials(), own)}) {
    EXPECT_EQ(channel->poller(), "epoll");
    EXPECT_TRUE(channel->configuration_status().ok())
        << channel->configuration_status().error_message();
    auto stub = TestService::NewStub(channel);
    for (int i = 0; i < 20; ++i) {
      EchoResponse resp;
      const std::string payload = "call " + std::to_string(i);
      Status s = Call(*stub, payload, &resp);
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(resp.payload(), payload);
    }
  }

  // Asked for by name, io_uring is an error naming it, not a silent epoll.
  ChannelArguments uring;
  uring.SetString("ringrpc.poller", "io_uring");
  auto forced = CreateCustomChannel((*server)->address(), InsecureChannelCredentials(), uring);
  EXPECT_FALSE(forced->configuration_status().ok());
  EXPECT_TRUE(absl::StrContains(forced->configuration_status().error_message(), "io_uring"))
      << forced->configuration_status().error_message();
  EchoResponse resp;
  Status s = Call(*TestService::NewStub(forced), "x", &resp);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.error_message(), "io_uring")) << s.ToString();
}

}  // namespace
}  // namespace ringrpc
