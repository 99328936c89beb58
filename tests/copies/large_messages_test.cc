// Large messages cross threads intact: the receive blocks a response's
// slices point into are reused by the loop only once no message holds
// them, and a request is sent from the caller's serialized string. Echoes
// of distinct random payloads from several application threads at once
// (blocking calls parse on the caller's thread while the CQ thread fills
// the next blocks), and a blocking server stream read on the test thread.
// Run under ASAN and TSAN too.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/server_process.h"

namespace {

using ringrpc::test::EchoRequest;
using ringrpc::test::EchoResponse;
using TestService = ringrpc::test::ring::TestService;
using ::ringrpc::ClientContext;
using ::ringrpc::Status;

std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

class LargeMessages : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = ::ringrpc::testing::ServerProcess::Start();
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    stub_ = TestService::NewStub(
        ::ringrpc::CreateChannel(server_->address(), ::ringrpc::InsecureChannelCredentials()));
  }
  std::unique_ptr<::ringrpc::testing::ServerProcess> server_;
  std::unique_ptr<TestService::Stub> stub_;
};

TEST_F(LargeMessages, EchoesFromManyThreadsComeBackIntact) {
  constexpr int kThreads = 4, kCalls = 12;
  std::atomic<int> intact{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(1000 + t);
      for (int i = 0; i < kCalls; ++i) {
        // Sizes across the 4 KiB line and across receive blocks.
        const size_t size = (i % 3 == 0) ? 3000 : (i % 3 == 1) ? 70000 : 300000;
        EchoRequest req;
        req.set_payload(RandomBytes(rng, size));
        EchoResponse resp;
        ClientContext ctx;
        Status s = stub_->Unary(&ctx, req, &resp);
        if (!s.ok()) {
          ++failed;
          ADD_FAILURE() << s.ToString();
        } else if (resp.payload() == req.payload()) {
          ++intact;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(intact.load(), kThreads * kCalls);
}

TEST_F(LargeMessages, ABlockingServerStreamOfLargeMessagesIsReadWhole) {
  constexpr int kMessages = 64;
  constexpr int kSize = 100000;
  EchoRequest req;
  req.set_count(kMessages);
  req.set_response_size(kSize);
  ClientContext ctx;
  auto reader = stub_->ServerStream(&ctx, req);
  EchoResponse resp;
  int whole = 0, in_order = 0;
  while (reader->Read(&resp)) {
    whole += resp.payload() == std::string(kSize, 's');
    in_order += resp.count() == in_order;
  }
  Status s = reader->Finish();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(whole, kMessages);
  EXPECT_EQ(in_order, kMessages);
}

}  // namespace
