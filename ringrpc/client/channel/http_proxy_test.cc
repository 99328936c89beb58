#include "ringrpc/client/channel/http_proxy.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace ringrpc::channel {
namespace {

GetEnv Env(std::map<std::string, std::string> vars) {
  auto owned = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [owned](const char* name) -> const char* {
    auto it = owned->find(name);
    return it == owned->end() ? nullptr : it->second.c_str();
  };
}

TEST(HttpProxy, ParsesUrlsAsGrpcWritesThem) {
  auto p = ParseHttpProxy("http://proxy.corp:3128");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->host, "proxy.corp");
  EXPECT_EQ(p->port, 3128);
  EXPECT_EQ(p->authorization, "");
  p = ParseHttpProxy("proxy.corp");  // no scheme, no port: 443
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->Name(), "proxy.corp:443");
  p = ParseHttpProxy("http://al%40ice:s3cret@[::1]:8080/");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->host, "::1");
  EXPECT_EQ(p->Name(), "[::1]:8080");
  EXPECT_EQ(p->authorization, "Basic YWxAaWNlOnMzY3JldA==");  // base64("al@ice:s3cret")
  struct Bad {
    const char* url;
    const char* says;
  };
  for (Bad b :
       {Bad{"https://p:1", "scheme \"https\" is not supported"},
        Bad{"socks5://p:1", "scheme \"socks5\""}, Bad{"http://:80", "no host"},
        Bad{"http://p:0", "port"}, Bad{"http://p:99999", "port"}, Bad{"http://p:8x", "port"},
        Bad{"http://p:80/path", "no path"}, Bad{"http://[::1", "unterminated"}}) {
    auto r = ParseHttpProxy(b.url);
    ASSERT_FALSE(r.ok()) << b.url;
    EXPECT_NE(r.status().message().find(b.says), std::string::npos) << r.status();
  }
}

TEST(HttpProxy, NoProxyListMatchesHostsAndDomainSuffixes) {
  EXPECT_TRUE(NoProxyMatches("*", "anything"));
  EXPECT_TRUE(NoProxyMatches("a.com, example.com", "svc.EXAMPLE.com"));
  EXPECT_TRUE(NoProxyMatches(".example.com", "svc.example.com"));
  EXPECT_TRUE(NoProxyMatches("example.com", "example.com"));
  EXPECT_FALSE(NoProxyMatches("example.com", "badexample.com"));
  EXPECT_FALSE(NoProxyMatches("", "example.com"));
  EXPECT_TRUE(NoProxyMatches("10.0.0.1", "10.0.0.1"));
}

TEST(HttpProxy, ChoosesAsGrpcDoes) {
  // The environment: grpc_proxy, then https_proxy, then http_proxy.
  auto p = ChooseHttpProxy(std::nullopt, true, "svc",
                           Env({{"http_proxy", "http://h:1"}, {"https_proxy", "http://s:2"}}));
  ASSERT_TRUE(p.ok() && p->has_value());
  EXPECT_EQ((*p)->Name(), "s:2");
  EXPECT_EQ((*p)->source, "https_proxy");
  p = ChooseHttpProxy(std::nullopt, true, "svc",
                      Env({{"grpc_proxy", "g:3"}, {"https_proxy", "http://s:2"}}));
  EXPECT_EQ((*p)->Name(), "g:3");
  // The argument wins; set empty it means no proxy.
  p = ChooseHttpProxy("http://a:4", true, "svc", Env({{"grpc_proxy", "g:3"}}));
  EXPECT_EQ((*p)->Name(), "a:4");
  EXPECT_EQ((*p)->source, "grpc.http_proxy");
  p = ChooseHttpProxy("", true, "svc", Env({{"grpc_proxy", "g:3"}}));
  EXPECT_FALSE(p->has_value());
  // grpc.enable_http_proxy=0: none at all.
  p = ChooseHttpProxy("http://a:4", false, "svc", Env({{"grpc_proxy", "g:3"}}));
  EXPECT_FALSE(p->has_value());
  // no_grpc_proxy first, else no_proxy.
  p = ChooseHttpProxy(std::nullopt, true, "svc.corp",
                      Env({{"grpc_proxy", "g:3"}, {"no_proxy", ".corp"}}));
  EXPECT_FALSE(p->has_value());
  p = ChooseHttpProxy(
      std::nullopt, true, "svc.corp",
      Env({{"grpc_proxy", "g:3"}, {"no_grpc_proxy", "other"}, {"no_proxy", ".corp"}}));
  EXPECT_TRUE(p->has_value());
  // A bad argument is the channel's error; a bad variable is ignored.
  auto bad = ChooseHttpProxy("https://a:4", true, "svc", Env({}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("grpc.http_proxy"), std::string::npos);
  p = ChooseHttpProxy(std::nullopt, true, "svc", Env({{"https_proxy", "https://s:2"}}));
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->has_value());
}

}  // namespace
}  // namespace ringrpc::channel
