// fork() in a process that uses ringrpc (grpc++ does not support it without
// exec: grpc/grpc#17695). What ringrpc does: before fork() returns in the
// child, every set of CQ threads gets new threads with new loops, so the
// channels made before the fork keep working there, on connections the
// child dials itself; new channels work; destroying a channel joins none of
// the parent's threads. The parent's rings, sockets and calls are never
// touched by the child, and the parent carries on as if nothing happened.
// Calls in flight at the fork belong to the parent: they end there, not in
// the child.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/call_credentials.h"
#include "ringrpc/client/channel.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/dns_server.h"
#include "tests/testing/server_process.h"

namespace ringrpc {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using test::EchoRequest;
using test::EchoResponse;
using test::ring::TestService;

bool Echoes(TestService::Stub& stub, const std::string& payload) {
  ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + seconds(5));
  EchoRequest req;
  req.set_payload(payload);
  EchoResponse resp;
  Status s = stub.Unary(&ctx, req, &resp);
  return s.ok() && resp.payload() == payload;
}

struct Slow {
  ClientContext ctx;
  EchoRequest req;
  EchoResponse resp;
  std::promise<Status> done;
};

TEST(Fork, TheChildCallsOnOldAndNewChannelsAndTheParentCarriesOn) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "TSAN ends a child that starts threads after a multi-threaded fork";
#endif
  auto server = testing::ServerProcess::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  auto dns = testing::DnsServer::Start({{"svc.ringrpc.test", "127.0.0.1"}});
  ASSERT_TRUE(dns.ok()) << dns.status();
  // The process-wide CQ threads; a DNS resolver's thread; CQ threads of its
  // own; call credentials from a blocking plugin (its worker threads).
  ChannelArguments own;
  own.SetInt("ringrpc.cq_threads", 2);
  ChannelArguments insecure_creds;
  insecure_creds.SetInt("ringrpc.allow_insecure_call_credentials", 1);
  class Token final : public MetadataCredentialsPlugin {
    Status GetMetadata(std::string_view, std::string_view, const AuthContext&,
                       std::multimap<std::string, std::string>* md) override {
      md->emplace("x-token", "t");
      return Status();
    }
  };
  std::vector<std::shared_ptr<Channel>> channels = {
      CreateChannel((*server)->address(), InsecureChannelCredentials()),
      CreateChannel(
          absl::StrCat("dns://", (*dns)->address(), "/svc.ringrpc.test:", (*server)->port()),
          InsecureChannelCredentials()),
      CreateCustomChannel((*server)->address(), InsecureChannelCredentials(), own),
      CreateCustomChannel(
          (*server)->address(),
          CompositeChannelCredentials(InsecureChannelCredentials(),
                                      MetadataCredentialsFromPlugin(std::make_unique<Token>())),
          insecure_creds)};
  std::vector<std::unique_ptr<TestService::Stub>> stubs;
  for (auto& c : channels) {
    stubs.push_back(TestService::NewStub(c));
    ASSERT_TRUE(Echoes(*stubs.back(), "before"));
  }
  // Calls in flight across the fork, on every channel.
  std::vector<std::unique_ptr<Slow>> slow;
  for (int i = 0; i < 12; ++i) {
    auto s = std::make_unique<Slow>();
    s->req.set_payload(absl::StrCat("slow ", i));
    s->req.set_sleep_ms(800);
    s->ctx.set_deadline(std::chrono::system_clock::now() + seconds(10));
    Slow* p = s.get();
    stubs[i % stubs.size()]->async()->Unary(&p->ctx, &p->req, &p->resp,
                                            [p](Status st) { p->done.set_value(st); });
    slow.push_back(std::move(s));
  }
  std::this_thread::sleep_for(milliseconds(100));

  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child: no gtest here (its state is the parent's); the exit code
    // says what failed, one bit per check.
    int failed = 0;
    for (size_t i = 0; i < stubs.size(); ++i) {
      for (int k = 0; k < 5; ++k) {
        if (!Echoes(*stubs[i], absl::StrCat("child old ", i, " ", k))) failed |= 1 << i;
      }
    }
    {
      auto fresh =
          TestService::NewStub(CreateChannel((*server)->address(), InsecureChannelCredentials()));
      for (int k = 0; k < 5; ++k) {
        if (!Echoes(*fresh, absl::StrCat("child new ", k))) failed |= 1 << 4;
      }
    }
    // Every channel made before the fork goes (the DNS resolver's thread
    // and the CQ threads are the parent's: nothing may wait for them).
    stubs.clear();
    channels.clear();
    std::_Exit(failed);  // the parent's objects are the parent's to free
  }

  // The parent: its calls in flight end with their own answers.
  for (size_t i = 0; i < slow.size(); ++i) {
    auto f = slow[i]->done.get_future();
    ASSERT_EQ(f.wait_for(seconds(10)), std::future_status::ready) << i;
    Status st = f.get();
    EXPECT_TRUE(st.ok()) << i << ": " << st.ToString();
    EXPECT_EQ(slow[i]->resp.payload(), slow[i]->req.payload());
  }
  int status = 0;
  bool ended = false;
  for (int i = 0; i < 600 && !ended; ++i) {  // 30 s
    ended = ::waitpid(child, &status, WNOHANG) == child;
    if (!ended) std::this_thread::sleep_for(milliseconds(50));
  }
  if (!ended) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
  }
  ASSERT_TRUE(ended) << "the child still ran 30 s after the fork (a hang)";
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  const int failed = WEXITSTATUS(status);
  EXPECT_EQ(failed & 1, 0) << "a call on the process-wide threads' channel failed in the child";
  EXPECT_EQ(failed & 2, 0) << "a call on the DNS channel failed in the child";
  EXPECT_EQ(failed & 4, 0) << "a call on the own-threads channel failed in the child";
  EXPECT_EQ(failed & 8, 0) << "a call with call credentials failed in the child";
  EXPECT_EQ(failed & 16, 0) << "a call on a channel made in the child failed";
  EXPECT_EQ(failed & ~31, 0) << "exit status " << failed;
  // The parent carries on, on the same connections.
  const uint64_t made = channels[0]->Metrics().created;
  for (size_t i = 0; i < stubs.size(); ++i) {
    for (int k = 0; k < 5; ++k) EXPECT_TRUE(Echoes(*stubs[i], absl::StrCat("after ", i, " ", k)));
  }
  EXPECT_EQ(channels[0]->Metrics().created, made);
}

}  // namespace
}  // namespace ringrpc
