#include "ringrpc/client/channel/dns_resolver.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ringrpc/base/mutex.h"
#include "tests/testing/dns_server.h"

namespace ringrpc::channel {
namespace {

using std::chrono::milliseconds;
using testing::DnsServer;
using testing::SilentDnsServer;

// Every update a resolver delivers, in order, for a test thread to wait on.
class Updates {
 public:
  ResolverListener Listener() {
    return [this](absl::StatusOr<ResolverResult> r) {
      MutexLock lock(&mu_);
      if (thread_ == std::thread::id()) thread_ = std::this_thread::get_id();
      got_.push_back(std::move(r));
    };
  }
  // The n-th update (from 1), waiting up to `within` for it.
  std::optional<absl::StatusOr<ResolverResult>> Nth(size_t n, milliseconds within) {
    auto end = std::chrono::steady_clock::now() + within;
    for (;;) {
      {
        MutexLock lock(&mu_);
        if (got_.size() >= n) return got_[n - 1];
      }
      if (std::chrono::steady_clock::now() > end) return std::nullopt;
      std::this_thread::sleep_for(milliseconds(5));
    }
  }
  size_t count() {
    MutexLock lock(&mu_);
    return got_.size();
  }
  std::thread::id thread() {
    MutexLock lock(&mu_);
    return thread_;
  }

 private:
  Mutex mu_;
  std::vector<absl::StatusOr<ResolverResult>> got_ ABSL_GUARDED_BY(mu_);
  std::thread::id thread_ ABSL_GUARDED_BY(mu_);
};

std::set<std::string> Names(const ResolverResult& r) {
  std::set<std::string> s;
  for (const auto& a : r.addresses) s.insert(a.ToString());
  return s;
}

DnsResolver::Options At(const std::string& server, milliseconds min_interval = milliseconds(0)) {
  return DnsResolver::Options{.server = server, .min_interval = min_interval};
}

TEST(DnsResolver, ResolvesAandAaaaRecordsFromTheServerTheTargetNames) {
  auto dns = DnsServer::Start({{"svc.ringrpc.test", "127.0.0.2"},
                               {"svc.ringrpc.test", "127.0.0.3"},
                               {"dual.ringrpc.test", "::1"},
                               {"dual.ringrpc.test", "127.0.0.1"}});
  ASSERT_TRUE(dns.ok()) << dns.status();
  Updates u;
  DnsResolver r("svc.ringrpc.test", 443, At((*dns)->address()));
  r.Start(u.Listener());
  auto got = u.Nth(1, milliseconds(5000));
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(got->ok()) << got->status();
  EXPECT_EQ(Names(**got), (std::set<std::string>{"127.0.0.2:443", "127.0.0.3:443"}));
  EXPECT_FALSE((*got)->service_config.has_value());  // TXT not asked for
  EXPECT_NE(u.thread(), std::this_thread::get_id());

  Updates u2;
  DnsResolver both("dual.ringrpc.test", 50051, At((*dns)->address()));
  both.Start(u2.Listener());
  got = u2.Nth(1, milliseconds(5000));
  ASSERT_TRUE(got.has_value() && got->ok());
  EXPECT_EQ(Names(**got), (std::set<std::string>{"[::1]:50051", "127.0.0.1:50051"}));
}

TEST(DnsResolver, UnknownNameIsUnavailableSayingSoAndNamingTheServer) {
  auto dns = DnsServer::Start({{"svc.ringrpc.test", "127.0.0.2"}});
  ASSERT_TRUE(dns.ok()) << dns.status();
  Updates u;
  DnsResolver r("nope.ringrpc.test", 443, At((*dns)->address()));
  r.Start(u.Listener());
  auto got = u.Nth(1, milliseconds(5000));
  ASSERT_TRUE(got.has_value());
  ASSERT_FALSE(got->ok());
  EXPECT_EQ(got->status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(
      got->status().message().find("DNS resolution of nope.ringrpc.test failed: no such name"),
      std::string::npos)
      << got->status();
  EXPECT_NE(got->status().message().find((*dns)->address()), std::string::npos) << got->status();
}

TEST(DnsResolver, ServerThatNeverAnswersTimesOutWithinTheQueryTimeout) {
  SilentDnsServer silent;
  Updates u;
  auto options = At(silent.address());
  options.query_timeout = milliseconds(400);
  auto start = std::chrono::steady_clock::now();
  DnsResolver r("svc.ringrpc.test", 443, options);
  r.Start(u.Listener());
  auto got = u.Nth(1, milliseconds(10000));
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(got.has_value());
  ASSERT_FALSE(got->ok());
  EXPECT_EQ(got->status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(got->status().message().find("timed out after 400 ms (asked " + silent.address()),
            std::string::npos)
      << got->status();
  EXPECT_GE(took, milliseconds(390));
  EXPECT_LT(took, milliseconds(5000));
}

TEST(DnsResolver, ShutdownEndsAQueryInFlightAtOnce) {
  SilentDnsServer silent;
  Updates u;
  auto options = At(silent.address());
  options.query_timeout = milliseconds(60000);
  DnsResolver r("svc.ringrpc.test", 443, options);
  r.Start(u.Listener());
  std::this_thread::sleep_for(milliseconds(100));  // the query is out
  auto start = std::chrono::steady_clock::now();
  r.Shutdown();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(2000));
  EXPECT_EQ(u.count(), 0u);  // nothing delivered after (or for) a cancelled query
}

TEST(DnsResolver, LocalhostIsBothLoopbackAddressesWithoutAskingTheServer) {
  SilentDnsServer silent;  // asked, it would time out
  Updates u;
  auto options = At(silent.address());
  options.query_timeout = milliseconds(60000);
  DnsResolver r("localhost", 8080, options);
  r.Start(u.Listener());
  auto got = u.Nth(1, milliseconds(2000));
  ASSERT_TRUE(got.has_value() && got->ok());
  EXPECT_EQ(Names(**got), (std::set<std::string>{"[::1]:8080", "127.0.0.1:8080"}));
}

TEST(DnsResolver, IpLiteralsAreThemselvesWithoutAskingTheServer) {
  SilentDnsServer silent;  // asked, it would time out
  for (const char* host : {"127.0.0.1", "::1"}) {
    Updates u;
    auto options = At(silent.address());
    options.query_timeout = milliseconds(60000);
    DnsResolver r(host, 8080, options);
    r.Start(u.Listener());
    auto got = u.Nth(1, milliseconds(2000));
    ASSERT_TRUE(got.has_value() && got->ok()) << host;
    EXPECT_EQ(Names(**got), (std::set<std::string>{std::string(host) == "::1" ? "[::1]:8080"
                                                                              : "127.0.0.1:8080"}));
  }
}

TEST(ResolveLocally, OnlyLiteralsAndLocalhostSkipDns) {
  auto names = [](std::string_view host) -> std::set<std::string> {
    std::optional<AddressList> l = ResolveLocally(host, 443);
    if (!l) return {"(dns)"};
    std::set<std::string> out;
    for (const auto& a : *l) out.insert(a.ToString());
    return out;
  };
  EXPECT_EQ(names("10.1.2.3"), (std::set<std::string>{"10.1.2.3:443"}));
  EXPECT_EQ(names("2001:db8::7"), (std::set<std::string>{"[2001:db8::7]:443"}));
  EXPECT_EQ(names("::ffff:10.1.2.3"), (std::set<std::string>{"[::ffff:10.1.2.3]:443"}));
  EXPECT_EQ(names("LocalHost."), (std::set<std::string>{"[::1]:443", "127.0.0.1:443"}));
  // Not literals: a name, inet_aton's short forms, a dotted quad out of range.
  for (const char* name : {"svc.example", "10.1.2", "0x7f.1", "127.0.0.256", "1.2.3.4.5", ""}) {
    EXPECT_EQ(names(name), (std::set<std::string>{"(dns)"})) << name;
  }
}

TEST(DnsResolver, ReresolvesWhenAskedNoMoreOftenThanTheMinimumInterval) {
  auto dns = DnsServer::Start({{"svc.ringrpc.test", "127.0.0.2"}});
  ASSERT_TRUE(dns.ok()) << dns.status();
  Updates u;
  DnsResolver r("svc.ringrpc.test", 443, At((*dns)->address(), milliseconds(500)));
  r.Start(u.Listener());
  auto first = u.Nth(1, milliseconds(5000));
  ASSERT_TRUE(first.has_value() && first->ok());
  auto first_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(
      (*dns)->SetHosts({{"svc.ringrpc.test", "127.0.0.4"}}, "svc.ringrpc.test", {"127.0.0.4"}));
  for (int i = 0; i < 5; ++i) r.RequestReresolution();  // a burst of lost connections
  auto second = u.Nth(2, milliseconds(5000));
  ASSERT_TRUE(second.has_value() && second->ok());
  EXPECT_GE(std::chrono::steady_clock::now() - first_at, milliseconds(400));
  EXPECT_EQ(Names(**second), (std::set<std::string>{"127.0.0.4:443"}));
  std::this_thread::sleep_for(milliseconds(700));
  EXPECT_EQ(u.count(), 2u);  // the burst made one resolution, and nothing polls
  EXPECT_EQ(r.resolutions(), 2);
}

TEST(DnsResolver, FailedResolutionIsRetriedByItselfWithBackoff) {
  auto dns = DnsServer::Start({{"other.ringrpc.test", "127.0.0.2"}});
  ASSERT_TRUE(dns.ok()) << dns.status();
  Updates u;
  DnsResolver r("late.ringrpc.test", 443, At((*dns)->address()));
  r.Start(u.Listener());
  auto first = u.Nth(1, milliseconds(5000));
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(first->ok());
  ASSERT_TRUE(
      (*dns)->SetHosts({{"late.ringrpc.test", "127.0.0.5"}}, "late.ringrpc.test", {"127.0.0.5"}));
  // gRPC's DNS backoff: the first retry 1 s (+-20%) after the failure.
  auto second = u.Nth(2, milliseconds(5000));
  ASSERT_TRUE(second.has_value());
  ASSERT_TRUE(second->ok()) << second->status();
  EXPECT_EQ(Names(**second), (std::set<std::string>{"127.0.0.5:443"}));
}

TEST(DnsResolver, ServiceConfigFromTheTxtRecordWhenAskedFor) {
  // A record longer than one TXT string (255 bytes) comes in pieces.
  const std::string config =
      R"(grpc_config=[{"clientLanguage":["go"],"serviceConfig":{"loadBalancingPolicy":"pick_first"}},)"
      R"({"percentage":0,"serviceConfig":{"loadBalancingPolicy":"pick_first"}},)"
      R"({"clientLanguage":["c++","java"],"serviceConfig":{"loadBalancingConfig":[{"round_robin":{}}],)"
      R"("methodConfig":[{"name":[{"service":"pkg.Svc"}],"timeout":"1.5s"}]}}])";
  ASSERT_GT(config.size(), 255u);
  auto dns = DnsServer::Start(
      {{"svc.ringrpc.test", "127.0.0.2"}, {"bad.ringrpc.test", "127.0.0.3"}},
      {{"_grpc_config.svc.ringrpc.test", {config.substr(0, 200), config.substr(200)}},
       {"_grpc_config.bad.ringrpc.test", {"grpc_config={\"not\":\"a list\"}"}}});
  ASSERT_TRUE(dns.ok()) << dns.status();
  auto options = At((*dns)->address());
  options.request_service_config = true;
  Updates u;
  DnsResolver r("svc.ringrpc.test", 443, options);
  r.Start(u.Listener());
  auto got = u.Nth(1, milliseconds(5000));
  ASSERT_TRUE(got.has_value() && got->ok());
  ASSERT_TRUE((*got)->service_config.has_value());
  EXPECT_EQ(
      *(*got)->service_config,
      R"({"loadBalancingConfig":[{"round_robin":{}}],"methodConfig":[{"name":[{"service":"pkg.Svc"}],"timeout":"1.5s"}]})");

  Updates bad;
  DnsResolver rb("bad.ringrpc.test", 443, options);
  rb.Start(bad.Listener());
  got = bad.Nth(1, milliseconds(5000));
  ASSERT_TRUE(got.has_value() && got->ok());  // the addresses still count
  EXPECT_EQ(Names(**got), (std::set<std::string>{"127.0.0.3:443"}));
  EXPECT_EQ((*got)->service_config_error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE((*got)->service_config_error.message().find("not a JSON array of choices"),
            std::string::npos);

  Updates none;  // a name without a TXT record: no config, no error
  options.server = (*dns)->address();
  DnsResolver rn("bad.ringrpc.test", 443, At((*dns)->address()));
  rn.Start(none.Listener());
  got = none.Nth(1, milliseconds(5000));
  ASSERT_TRUE(got.has_value() && got->ok());
  EXPECT_FALSE((*got)->service_config.has_value());
  EXPECT_TRUE((*got)->service_config_error.ok());
}

TEST(ChooseServiceConfig, FollowsA2sChoiceRules) {
  const char* txt = R"([{"clientHostname":["other"],"serviceConfig":{"a":1}},
                        {"percentage":50,"serviceConfig":{"b":2}},
                        {"serviceConfig":{"c":3}}])";
  EXPECT_EQ(**ChooseServiceConfig(txt, "me", 49), R"({"b":2})");
  EXPECT_EQ(**ChooseServiceConfig(txt, "me", 50), R"({"c":3})");
  EXPECT_EQ(**ChooseServiceConfig(txt, "other", 99), R"({"a":1})");
  EXPECT_FALSE(ChooseServiceConfig(R"([{"clientLanguage":["go"],"serviceConfig":{}}])", "me", 0)
                   ->has_value());
  struct Bad {
    const char* txt;
    const char* says;
  };
  for (Bad b : {Bad{"{", "not valid JSON"}, Bad{"{}", "not a JSON array"},
                Bad{"[1]", "[0] is not an object"},
                Bad{R"([{"serviceConfig":{},"colour":1}])", "unknown field \"colour\""},
                Bad{R"([{"percentage":101,"serviceConfig":{}}])", "percentage"},
                Bad{R"([{"clientLanguage":"c++","serviceConfig":{}}])", "clientLanguage"},
                Bad{R"([{}])", "serviceConfig is missing"}}) {
    auto r = ChooseServiceConfig(b.txt, "me", 0);
    ASSERT_FALSE(r.ok()) << b.txt;
    EXPECT_NE(r.status().message().find(b.says), std::string::npos) << r.status();
  }
}

}  // namespace
}  // namespace ringrpc::channel
