// experimental::LocalCredentials against the grpc++ test server: LOCAL_TCP
// over loopback and UDS over a unix socket, with call credentials sent on
// both; and what each refuses, with a status that says so: a UDS channel
// to a TCP target (at once), LOCAL_TCP over a unix socket, a resolver's
// address that is not local, a local end that is not loopback. Also a
// channel on a resolver of the program's own with credentials
// (CreateChannelWithResolver).
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/call_credentials.h"
#include "ringrpc/client/channel.h"
#include "ringrpc/client/resolver.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/server_process.h"

namespace ringrpc {
namespace {

using experimental::LocalCredentials;
using test::EchoRequest;
using test::EchoResponse;
using test::ring::TestService;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::unique_ptr<testing::ServerProcess> Server(const std::string& listen,
                                               std::vector<std::string> extra = {}) {
  auto s = testing::ServerProcess::Start(listen, "tests/server/test_server", std::move(extra));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

// A unix socket's address in a directory of its own (a short path: a
// socket's is limited to 107 bytes), removed with it.
class UnixAddress {
 public:
  explicit UnixAddress(const char* name) {
    char dir[] = "/tmp/ringrpc-local-XXXXXX";
    EXPECT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    path_ = absl::StrCat(dir_, "/", name);
  }
  ~UnixAddress() {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  std::string target() const { return "unix:" + path_; }

 private:
  std::string dir_, path_;
};

// One echo (wait_for_ready: a refusal must end it anyway, not the deadline).
Status Echo(const std::shared_ptr<Channel>& ch) {
  ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  ctx.set_wait_for_ready(true);
  EchoRequest req;
  req.set_payload("local");
  EchoResponse resp;
  Status s = TestService::NewStub(ch)->Unary(&ctx, req, &resp);
  if (s.ok()) {
    EXPECT_EQ(resp.payload(), "local");
  }
  return s;
}

TEST(LocalCredentials, LocalTcpReachesALoopbackServerAndCarriesCallCredentials) {
  auto server = Server("127.0.0.1:0", {"--require_token=secret"});
  ASSERT_NE(server, nullptr);
  auto with_token = CreateChannel(
      server->address(),
      CompositeChannelCredentials(LocalCredentials(LOCAL_TCP), AccessTokenCredentials("secret")));
  Status s = Echo(with_token);
  EXPECT_TRUE(s.ok()) << s.error_message();
  // The token is what the server let in.
  Status without = Echo(CreateChannel(server->address(), LocalCredentials(LOCAL_TCP)));
  EXPECT_EQ(without.error_code(), StatusCode::UNAUTHENTICATED);
}

TEST(LocalCredentials, UdsReachesAUnixSocketServer) {
  const UnixAddress unix_socket("uds.sock");  // outlives the server
  const std::string listen = unix_socket.target();
  auto server = Server(listen);
  ASSERT_NE(server, nullptr);
  Status s = Echo(CreateChannel(listen, LocalCredentials(UDS)));
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST(LocalCredentials, UdsRefuseATcpTargetAtOnce) {
  auto ch = CreateChannel("127.0.0.1:1", LocalCredentials(UDS));
  Status s = Echo(ch);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), AllOf(HasSubstr("LocalCredentials(UDS)"), HasSubstr("unix:"),
                                       HasSubstr("127.0.0.1:1")));
}

TEST(LocalCredentials, LocalTcpRefuseAUnixSocket) {
  const UnixAddress unix_socket("tcp.sock");  // outlives the server
  const std::string listen = unix_socket.target();
  auto server = Server(listen);
  ASSERT_NE(server, nullptr);
  Status s = Echo(CreateChannel(listen, LocalCredentials(LOCAL_TCP)));
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);  // not the deadline
  EXPECT_THAT(s.error_message(),
              AllOf(HasSubstr("LocalCredentials(LOCAL_TCP)"), HasSubstr("loopback")));
}

TEST(LocalCredentials, UdsRefuseAResolversTcpAddress) {
  auto server = Server("127.0.0.1:0");
  ASSERT_NE(server, nullptr);
  auto resolver = std::make_shared<ManualResolver>();
  resolver->Push(AddressList{*transport::Address::Parse(server->address())});
  auto ch = CreateChannelWithResolver("local", resolver, LocalCredentials(UDS), ChannelArguments());
  Status s = Echo(ch);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(),
              AllOf(HasSubstr("LocalCredentials(UDS)"), HasSubstr(server->address())));
  // The same address with LOCAL_TCP is local.
  auto tcp_resolver = std::make_shared<ManualResolver>();
  tcp_resolver->Push(AddressList{*transport::Address::Parse(server->address())});
  auto tcp = CreateChannelWithResolver("local", tcp_resolver, LocalCredentials(LOCAL_TCP),
                                       ChannelArguments());
  EXPECT_TRUE(Echo(tcp).ok());
}

// This machine's first IPv4 address that is not loopback, if it has one.
std::optional<std::string> NonLoopbackAddress() {
  ifaddrs* all = nullptr;
  if (::getifaddrs(&all) != 0) return std::nullopt;
  std::optional<std::string> found;
  for (ifaddrs* i = all; i != nullptr && !found; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    const in_addr a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr;
    if ((ntohl(a.s_addr) >> 24) == 127) continue;
    char text[INET_ADDRSTRLEN];
    if (::inet_ntop(AF_INET, &a, text, sizeof text) != nullptr) found = text;
  }
  ::freeifaddrs(all);
  return found;
}

TEST(LocalCredentials, LocalTcpRefuseALocalEndThatIsNotLoopback) {
  std::optional<std::string> ip = NonLoopbackAddress();
  if (!ip) GTEST_SKIP() << "this machine has no IPv4 address but loopback";
  auto server = Server("0.0.0.0:0");
  ASSERT_NE(server, nullptr);
  const std::string target = absl::StrCat("ipv4:", *ip, ":", server->port());
  // Plaintext reaches it; LOCAL_TCP does not (the socket's own end is *ip).
  EXPECT_TRUE(Echo(CreateChannel(target, InsecureChannelCredentials())).ok());
  Status s = Echo(CreateChannel(target, LocalCredentials(LOCAL_TCP)));
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), AllOf(HasSubstr("LocalCredentials(LOCAL_TCP)"), HasSubstr(*ip)));
}

TEST(CreateChannelWithResolver, NullCredentialsOrResolverAreClearErrors) {
  auto resolver = std::make_shared<ManualResolver>();
  Status s = Echo(CreateChannelWithResolver("x", resolver, nullptr, ChannelArguments()));
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("credentials are null"));
  s = Echo(
      CreateChannelWithResolver("x", nullptr, InsecureChannelCredentials(), ChannelArguments()));
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("resolver is null"));
}

}  // namespace
}  // namespace ringrpc
