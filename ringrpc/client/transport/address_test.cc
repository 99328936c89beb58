#include "ringrpc/client/transport/address.h"

#include <gtest/gtest.h>

namespace ringrpc::transport {
namespace {

TEST(Address, ParsesAndPrintsEachForm) {
  for (const char* text :
       {"127.0.0.1:50051", "[::1]:443", "unix:/tmp/x.sock", "unix-abstract:ringrpc-test"}) {
    absl::StatusOr<Address> a = Address::Parse(text);
    ASSERT_TRUE(a.ok()) << text << ": " << a.status();
    EXPECT_EQ(a->ToString(), text);
  }
  EXPECT_EQ(Address::Parse("unix:///tmp/y.sock")->ToString(), "unix:/tmp/y.sock");
}

TEST(Address, BadInputSaysWhatIsWrong) {
  struct Case {
    const char* text;
    const char* why;
  };
  for (Case c :
       {Case{"127.0.0.1", "expected host:port"}, Case{"127.0.0.1:0", "port out of range"},
        Case{"127.0.0.1:70000", "port out of range"},
        Case{"127.0.0.1:http", "port is not a number"}, Case{"localhost:80", "not an IPv4 address"},
        Case{"[::1:80", "expected [ipv6]:port"}, Case{"[zz]:80", "not an IPv6 address"},
        Case{"unix:", "empty unix socket path"}}) {
    absl::StatusOr<Address> a = Address::Parse(c.text);
    ASSERT_FALSE(a.ok()) << c.text;
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(a.status().message().find(c.why), std::string::npos) << c.text << ": " << a.status();
  }
  std::string long_path = "unix:/" + std::string(200, 'p');
  EXPECT_NE(Address::Parse(long_path).status().message().find("too long"), std::string::npos);
}

}  // namespace
}  // namespace ringrpc::transport
