// A program's hook on every socket a channel dials (SetSocketMutator) and
// TCP_USER_TIMEOUT (gRFC A18, grpc.tcp_user_timeout_ms), against a real
// grpc++ server: what the mutator does to the socket is what the server
// sees, a mutator that refuses fails the dial with a status naming it.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "ringrpc/client/channel.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/server_process.h"

namespace ringrpc {
namespace {

using test::EchoRequest;
using test::EchoResponse;
using test::ring::TestService;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Binds each socket to 127.0.0.2 (any port) and turns SO_KEEPALIVE on;
// records what it was given and the TCP_USER_TIMEOUT already set.
class Recorder final : public SocketMutator {
 public:
  explicit Recorder(bool accept = true) : accept_(accept) {}
  bool Mutate(const SocketInfo& s) override {
    unsigned user_timeout = ~0u;
    socklen_t len = sizeof user_timeout;
    ::getsockopt(s.fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, &len);
    absl::MutexLock lock(&mu_);
    seen_.push_back({s.fd, s.family, std::string(s.address), user_timeout});
    if (!accept_) return false;
    sockaddr_in local{};
    local.sin_family = AF_INET;
    local.sin_addr.s_addr = htonl(0x7f000002);  // 127.0.0.2
    int one = 1;
    return ::bind(s.fd, reinterpret_cast<sockaddr*>(&local), sizeof local) == 0 &&
           ::setsockopt(s.fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one) == 0;
  }
  struct Seen {
    int fd;
    int family;
    std::string address;
    unsigned user_timeout;
  };
  std::vector<Seen> seen() {
    absl::MutexLock lock(&mu_);
    return seen_;
  }

 private:
  const bool accept_;
  absl::Mutex mu_;
  std::vector<Seen> seen_ ABSL_GUARDED_BY(mu_);
};

class SocketMutatorTest : public ::testing::Test {
 public:
  void SetUp() override {
    auto s = testing::ServerProcess::Start();
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
  }
  // One unary call asking for the server's view of the peer.
  Status Call(const std::shared_ptr<Channel>& channel, EchoResponse* resp) {
    TestService::Stub stub(channel);
    ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    EchoRequest req;
    req.set_want_peer(true);
    return stub.Unary(&ctx, req, resp);
  }
  std::shared_ptr<Channel> ChannelWith(ChannelArguments args) {
    args.SetInt("ringrpc.cq_threads", 1);  // one dial
    return CreateCustomChannel(server_->address(), InsecureChannelCredentials(), args);
  }
  std::unique_ptr<testing::ServerProcess> server_;
};

TEST_F(SocketMutatorTest, WhatTheMutatorDoesToTheSocketIsWhatTheServerSees) {
  auto recorder = std::make_shared<Recorder>();
  ChannelArguments args;
  args.SetSocketMutator(recorder);
  auto channel = ChannelWith(args);
  EchoResponse resp;
  Status s = Call(channel, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  // Bound to 127.0.0.2 before the connect: the server's peer says so.
  EXPECT_THAT(resp.peer(), StartsWith("ipv4:127.0.0.2:"));
  std::vector<Recorder::Seen> seen = recorder->seen();
  ASSERT_EQ(seen.size(), 1u);  // one connection, one socket
  EXPECT_EQ(seen[0].family, AF_INET);
  EXPECT_EQ(seen[0].address, server_->address());
  // The option stays on the socket the channel keeps using.
  int keepalive = 0;
  socklen_t len = sizeof keepalive;
  ASSERT_EQ(::getsockopt(seen[0].fd, SOL_SOCKET, SO_KEEPALIVE, &keepalive, &len), 0);
  EXPECT_EQ(keepalive, 1);
  ASSERT_TRUE(Call(channel, &resp).ok());
  EXPECT_EQ(recorder->seen().size(), 1u);  // the pooled connection: no new socket
}

TEST_F(SocketMutatorTest, AMutatorThatRefusesFailsTheDialNamingIt) {
  auto recorder = std::make_shared<Recorder>(/*accept=*/false);
  ChannelArguments args;
  args.SetSocketMutator(recorder);
  auto channel = ChannelWith(args);
  EchoResponse resp;
  Status s = Call(channel, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("the channel's socket mutator refused the socket for " +
                                           server_->address()));
  EXPECT_GE(recorder->seen().size(), 1u);
}

// TCP_USER_TIMEOUT as the mutator finds it set on the new socket (0: the
// kernel's default).
unsigned UserTimeoutWith(SocketMutatorTest* t, ChannelArguments args) {
  auto recorder = std::make_shared<Recorder>();
  args.SetSocketMutator(recorder);
  EchoResponse resp;
  Status s = t->Call(t->ChannelWith(args), &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  std::vector<Recorder::Seen> seen = recorder->seen();
  return seen.empty() ? ~0u : seen[0].user_timeout;
}

TEST_F(SocketMutatorTest, TcpUserTimeoutFollowsKeepaliveUnlessTheArgumentSaysOtherwise) {
  EXPECT_EQ(UserTimeoutWith(this, ChannelArguments()), 0u);
  ChannelArguments keepalive;
  keepalive.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 60000);
  keepalive.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 3000);
  EXPECT_EQ(UserTimeoutWith(this, keepalive), 3000u);  // A18
  ChannelArguments both = keepalive;
  both.SetInt("grpc.tcp_user_timeout_ms", 0);
  EXPECT_EQ(UserTimeoutWith(this, both), 0u);
  ChannelArguments own;
  own.SetInt("grpc.tcp_user_timeout_ms", 1234);
  EXPECT_EQ(UserTimeoutWith(this, own), 1234u);
}

TEST_F(SocketMutatorTest, ANegativeTcpUserTimeoutIsRefusedByName) {
  ChannelArguments args;
  args.SetInt("grpc.tcp_user_timeout_ms", -1);
  EchoResponse resp;
  Status s = Call(ChannelWith(args), &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("grpc.tcp_user_timeout_ms"));
}

}  // namespace
}  // namespace ringrpc
