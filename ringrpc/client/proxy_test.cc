// HTTP CONNECT proxies (issue 15, part 3) end to end: a real proxy
// (tinyproxy, started by the test on a loopback port) between ringrpc and
// a grpc++ server; the channel argument and the environment variables
// grpc++ reads; a proxy that refuses (407, 403) or is not there. TLS
// through the tunnel is in tests/tls/tls_test.cc.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ringrpc/client/channel.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/http_proxy_server.h"
#include "tests/testing/loopback.h"
#include "tests/testing/server_process.h"

namespace ringrpc {
namespace {

using test::EchoRequest;
using test::EchoResponse;
using test::ring::TestService;
using testing::HttpProxyServer;

std::unique_ptr<testing::ServerProcess> Backend() {
  auto s = testing::ServerProcess::Start();
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

std::unique_ptr<HttpProxyServer> Proxy(HttpProxyServer::Options o = {}) {
  auto p = HttpProxyServer::Start(std::move(o));
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? std::move(*p) : nullptr;
}

Status Call(const std::shared_ptr<Channel>& channel) {
  auto stub = TestService::NewStub(channel);
  ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  EchoRequest req;
  req.set_payload("through");
  EchoResponse resp;
  Status s = stub->Unary(&ctx, req, &resp);
  if (s.ok() && resp.payload() != "through") return Status(StatusCode::INTERNAL, "wrong echo");
  return s;
}

std::shared_ptr<Channel> Via(const std::string& target, const std::string& proxy_url) {
  ChannelArguments args;
  args.SetString("grpc.http_proxy", proxy_url);
  return CreateCustomChannel(target, InsecureChannelCredentials(), args);
}

TEST(HttpProxy, CallsGoThroughTheProxysTunnelWithBasicCredentials) {
  auto server = Backend();
  auto proxy = Proxy({.user = "alice", .password = "s3cret"});
  ASSERT_TRUE(server && proxy);
  for (const std::string& target :
       {server->address(), absl::StrCat("localhost:", server->port())}) {
    auto channel = Via(target, "http://alice:s3cret@" + proxy->address());
    for (int i = 0; i < 3; ++i) {
      Status s = Call(channel);
      EXPECT_TRUE(s.ok()) << target << ": " << s.error_message();
    }
    // The proxy was asked for the target by name, once (one connection).
    EXPECT_EQ(proxy->Connects(target), 1) << proxy->Log();
  }
}

TEST(HttpProxy, AProxyThatRefusesIsUnavailableWithItsAnswer) {
  auto server = Backend();
  auto proxy = Proxy({.user = "alice", .password = "s3cret", .connect_ports = {443}});
  ASSERT_TRUE(server && proxy);
  // No credentials: 407; wrong ones: tinyproxy says 401.
  Status s = Call(Via(server->address(), "http://" + proxy->address()));
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_TRUE(absl::StrContains(
      s.error_message(),
      absl::StrCat("HTTP proxy ", proxy->address(), " refused CONNECT ", server->address())))
      << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "407")) << s.error_message();
  s = Call(Via(server->address(), "http://alice:wrong@" + proxy->address()));
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_TRUE(absl::StrContains(s.error_message(), "401")) << s.error_message();

  s = Call(Via(server->address(), "http://alice:s3cret@" + proxy->address()));
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_TRUE(absl::StrContains(s.error_message(), "403")) << s.error_message();

  // No proxy listening: the dial's error, naming the proxy's address.
  const std::string dead = absl::StrCat("127.0.0.1:", testing::UnusedLoopbackPort());
  s = Call(Via(server->address(), "http://" + dead));
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_TRUE(absl::StrContains(s.error_message(), "connect to HTTP proxy " + dead))
      << s.error_message();

  // A proxy URL ringrpc cannot use is the channel's error.
  s = Call(Via(server->address(), "https://" + proxy->address()));
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StrContains(s.error_message(), "grpc.http_proxy")) << s.error_message();
}

TEST(HttpProxy, EnvironmentVariablesAsGrpcReadsThem) {
  auto server = Backend();
  auto proxy = Proxy();
  ASSERT_TRUE(server && proxy);
  const std::string target = server->address();
  ::setenv("http_proxy", ("http://" + proxy->address()).c_str(), 1);
  EXPECT_TRUE(Call(CreateChannel(target, InsecureChannelCredentials())).ok());
  EXPECT_EQ(proxy->Connects(target), 1);
  // grpc_proxy wins over http_proxy: a dead one fails the call.
  ::setenv("grpc_proxy", absl::StrCat("127.0.0.1:", testing::UnusedLoopbackPort()).c_str(), 1);
  EXPECT_EQ(Call(CreateChannel(target, InsecureChannelCredentials())).error_code(),
            StatusCode::UNAVAILABLE);
  // no_grpc_proxy names the host: direct.
  ::setenv("no_grpc_proxy", "example.com,127.0.0.1", 1);
  EXPECT_TRUE(Call(CreateChannel(target, InsecureChannelCredentials())).ok());
  ::unsetenv("no_grpc_proxy");
  // grpc.enable_http_proxy=0: direct whatever the environment says.
  ChannelArguments off;
  off.SetInt("grpc.enable_http_proxy", 0);
  EXPECT_TRUE(Call(CreateCustomChannel(target, InsecureChannelCredentials(), off)).ok());
  // grpc.http_proxy="" too.
  EXPECT_TRUE(Call(Via(target, "")).ok());
  ::unsetenv("grpc_proxy");
  ::unsetenv("http_proxy");
  EXPECT_EQ(proxy->Connects(target), 1);  // none of the direct calls went through it
}

}  // namespace
}  // namespace ringrpc
