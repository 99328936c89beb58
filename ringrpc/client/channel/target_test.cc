#include "ringrpc/client/channel/target.h"

#include <gtest/gtest.h>

namespace ringrpc::channel {
namespace {

TEST(Target, DnsFormsAndBareHostPort) {
  for (const char* t : {"dns:///example.com:50051", "dns://8.8.8.8/example.com:50051",
                        "dns:example.com:50051", "example.com:50051"}) {
    absl::StatusOr<Target> p = ParseTarget(t);
    ASSERT_TRUE(p.ok()) << t << ": " << p.status();
    EXPECT_EQ(p->kind, Target::Kind::kDns) << t;
    EXPECT_EQ(p->host, "example.com") << t;
    EXPECT_EQ(p->port, 50051) << t;
    EXPECT_EQ(p->authority, "example.com:50051") << t;
  }
  EXPECT_EQ(ParseTarget("example.com")->port, 443);  // gRPC's default port
  EXPECT_EQ(ParseTarget("dns:///[::1]:80")->host, "::1");
}

TEST(Target, StaticForms) {
  absl::StatusOr<Target> v4 = ParseTarget("ipv4:127.0.0.1:1000,10.0.0.2:2000");
  ASSERT_TRUE(v4.ok()) << v4.status();
  ASSERT_EQ(v4->addresses.size(), 2u);
  EXPECT_EQ(v4->addresses[1].ToString(), "10.0.0.2:2000");
  EXPECT_EQ(v4->authority, "127.0.0.1:1000");
  EXPECT_EQ(ParseTarget("ipv6:[::1]:80")->addresses.at(0).ToString(), "[::1]:80");
  EXPECT_EQ(ParseTarget("unix:/tmp/a.sock")->addresses.at(0).ToString(), "unix:/tmp/a.sock");
  EXPECT_EQ(ParseTarget("unix-abstract:svc")->addresses.at(0).ToString(), "unix-abstract:svc");
}

TEST(Target, AHostNamedXdsIsStillAHost) {
  absl::StatusOr<Target> t = ParseTarget("xds:443");
  ASSERT_TRUE(t.ok()) << t.status();
}

TEST(Target, XdsTargetsKeepTheTargetAndTakeTheNameAsAuthority) {
  absl::StatusOr<Target> t = ParseTarget("xds:///greeter.example.com");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->kind, Target::Kind::kXds);
  EXPECT_EQ(t->xds_target, "xds:///greeter.example.com");
  EXPECT_EQ(t->authority, "greeter.example.com");
  t = ParseTarget("xds://authority.example/svc");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->authority, "svc");
  t = ParseTarget("xds:svc");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->kind, Target::Kind::kXds);
  EXPECT_EQ(t->authority, "svc");
}

TEST(Target, MalformedTargetsSayWhy) {
  struct Case {
    const char* target;
    const char* why;
  };
  for (Case c : {Case{"", "empty"}, Case{"dns:///:80", "missing host"},
                 Case{"host:99999", "port out of range"}, Case{"host:abc", "not a number"},
                 Case{"ipv4:", "no addresses"}, Case{"ipv4:1.2.3.4:5,[::1]:6", "not an ipv4"},
                 Case{"ipv6:1.2.3.4:5", "not an ipv6"}, Case{"xds:///", "expected xds:///name"},
                 Case{"foo:///svc", "unknown scheme"}, Case{"::1:80", "need [brackets]"},
                 Case{"unix:", "empty unix socket path"}}) {
    absl::StatusOr<Target> p = ParseTarget(c.target);
    ASSERT_FALSE(p.ok()) << c.target;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(p.status().message()).find(c.why), std::string::npos)
        << c.target << " -> " << p.status();
  }
}

// Found by target_fuzzer: "unix:" + a path with a NUL byte parsed, and
// the socket would have been the path up to the NUL.
TEST(Target, RegressionNulByteInAPathOrHostIsRejected) {
  using namespace std::string_view_literals;
  for (std::string_view t : {"unix:\0\xff"sv, "unix:/tmp/a\0b"sv, "ipv4:127.0.0.1\0:1"sv,
                             "dns:///host\0.example:443"sv, "host\0:80"sv}) {
    absl::StatusOr<Target> p = ParseTarget(t);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(p.status().message()).find("NUL byte"), std::string::npos) << p.status();
  }
  // An abstract socket's name may hold NUL bytes.
  EXPECT_TRUE(ParseTarget("unix-abstract:a\0b"sv).ok());
}

// Found by target_fuzzer: a unix path starting with "//" printed as
// "unix://..." and read back without its first two slashes.
TEST(Target, RegressionUnixPathWithLeadingSlashesPrintsBackToItself) {
  for (const char* t : {"unix:///////x/y", "unix:////a", "unix:/tmp/s.sock", "unix:rel/p"}) {
    absl::StatusOr<Target> p = ParseTarget(t);
    ASSERT_TRUE(p.ok()) << t << ": " << p.status();
    std::string printed = p->addresses.at(0).ToString();
    absl::StatusOr<transport::Address> back = transport::Address::Parse(printed);
    ASSERT_TRUE(back.ok()) << printed;
    EXPECT_EQ(back->ToString(), printed) << t;
  }
  EXPECT_EQ(ParseTarget("unix:/tmp/s.sock")->addresses.at(0).ToString(), "unix:/tmp/s.sock");
}

}  // namespace
}  // namespace ringrpc::channel
