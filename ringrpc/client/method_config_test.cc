// The service config's methodConfig applied to calls (issue 13, part 2),
// against a grpc++ server: timeout, waitForReady, message limits, matching
// by method and service, and a config ringrpc cannot honour failing every
// call with the reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "ringrpc/client/channel.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/loopback.h"
#include "tests/testing/server_fixture.h"

namespace ringrpc {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using test::EchoRequest;
using test::EchoResponse;
using test::ring::TestService;
using ::testing::HasSubstr;

std::shared_ptr<Channel> WithConfig(const std::string& target, const std::string& json,
                                    ChannelArguments args = {}) {
  args.SetServiceConfigJSON(json);
  return CreateCustomChannel(target, InsecureChannelCredentials(), args);
}

class MethodConfigTest : public testing::ServerTest {};

TEST_F(MethodConfigTest, TimeoutBoundsCallsOfItsMethodAndTheCallsOwnDeadlineStillCounts) {
  auto channel = WithConfig(server_->address(), R"({"methodConfig": [
      {"name": [{"service": "ringrpc.test.TestService", "method": "Unary"}], "timeout": "0.2s"}]})");
  auto stub = TestService::NewStub(channel);
  EchoRequest slow;
  slow.set_sleep_ms(3000);
  {
    ClientContext ctx;  // no deadline of its own: the config's 200 ms
    EchoResponse resp;
    const auto start = steady_clock::now();
    Status s = stub->Unary(&ctx, slow, &resp);
    EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED) << s.error_message();
    EXPECT_LT(steady_clock::now() - start, milliseconds(2500));
  }
  {
    ClientContext ctx;  // its own, shorter: the earlier one wins
    ctx.set_deadline(std::chrono::system_clock::now() + milliseconds(20));
    EchoResponse resp;
    EXPECT_EQ(stub->Unary(&ctx, slow, &resp).error_code(), StatusCode::DEADLINE_EXCEEDED);
  }
  {
    ClientContext ctx;  // a fast call is untouched
    EchoRequest quick;
    quick.set_payload("q");
    EchoResponse resp;
    ASSERT_TRUE(stub->Unary(&ctx, quick, &resp).ok());
    EXPECT_EQ(resp.payload(), "q");
  }
  {
    // Another method of the service has no entry (and no default): no
    // deadline, so a stream 300 ms apart finishes.
    ClientContext ctx;
    EchoRequest req;
    req.set_interval_ms(300);
    req.set_count(1);
    req.set_response_size(3);
    auto reader = stub->ServerStream(&ctx, req);
    EchoResponse m;
    int n = 0;
    while (reader->Read(&m)) ++n;
    Status s = reader->Finish();
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(n, 1);
  }
}

TEST_F(MethodConfigTest, AServiceEntryCoversEveryMethodOfTheService) {
  auto channel = WithConfig(server_->address(), R"({"methodConfig": [
      {"name": [{"service": "ringrpc.test.TestService"}], "timeout": "0.1s"}]})");
  auto stub = TestService::NewStub(channel);
  ClientContext ctx;
  EchoRequest req;
  req.set_interval_ms(3000);  // each message 3 s after the last
  req.set_count(2);
  auto reader = stub->ServerStream(&ctx, req);
  EchoResponse m;
  while (reader->Read(&m)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), StatusCode::DEADLINE_EXCEEDED);
}

TEST_F(MethodConfigTest, MessageLimitsAreTheSmallerOfMethodAndChannel) {
  auto channel = WithConfig(server_->address(), R"({"methodConfig": [{"name": [{}],
      "maxRequestMessageBytes": 100, "maxResponseMessageBytes": "50"}]})");
  auto stub = TestService::NewStub(channel);
  {
    ClientContext ctx;
    EchoRequest big;
    big.set_payload(std::string(200, 'b'));
    EchoResponse resp;
    Status s = stub->Unary(&ctx, big, &resp);
    EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(s.error_message(), HasSubstr("sent message larger than max"));
  }
  {
    ClientContext ctx;
    EchoRequest asks_big;
    asks_big.set_response_size(100);
    EchoResponse resp;
    Status s = stub->Unary(&ctx, asks_big, &resp);
    EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  }
  {
    ClientContext ctx;  // within both
    EchoRequest small;
    small.set_payload("fits");
    EchoResponse resp;
    ASSERT_TRUE(stub->Unary(&ctx, small, &resp).ok());
    EXPECT_EQ(resp.payload(), "fits");
  }
  // The channel's own limit is smaller still: it wins.
  ChannelArguments args;
  args.SetMaxSendMessageSize(10);
  auto tighter =
      WithConfig(server_->address(),
                 R"({"methodConfig": [{"name": [{}], "maxRequestMessageBytes": 100}]})", args);
  ClientContext ctx;
  EchoRequest mid;
  mid.set_payload(std::string(40, 'm'));
  EchoResponse resp;
  EXPECT_EQ(TestService::NewStub(tighter)->Unary(&ctx, mid, &resp).error_code(),
            StatusCode::RESOURCE_EXHAUSTED);
}

TEST_F(MethodConfigTest, WaitForReadyFromTheConfigUnlessTheCallSaysOtherwise) {
  // Nothing listens: fail-fast calls end UNAVAILABLE at once; waiting ones
  // wait for their deadline.
  const std::string nowhere = absl::StrCat("127.0.0.1:", testing::UnusedLoopbackPort());
  auto channel = WithConfig(nowhere, R"({"methodConfig": [{"name": [{}], "waitForReady": true}]})");
  auto stub = TestService::NewStub(channel);
  {
    ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + milliseconds(300));
    EchoResponse resp;
    Status s = stub->Unary(&ctx, EchoRequest(), &resp);
    EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  }
  {
    ClientContext ctx;
    ctx.set_wait_for_ready(false);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    EchoResponse resp;
    const auto start = steady_clock::now();
    Status s = stub->Unary(&ctx, EchoRequest(), &resp);
    EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE) << s.error_message();
    EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(10));
  }
}

TEST_F(MethodConfigTest, AConfigRingrpcCannotHonourFailsEveryCallNamingTheField) {
  auto refused = WithConfig(server_->address(), R"({"methodConfig": [{"name": [{}],
      "timeout": "5s", "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.02s"},
      "retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s",
                      "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]})");
  EXPECT_EQ(refused->configuration_status().error_code(), StatusCode::INVALID_ARGUMENT);
  ClientContext ctx;
  EchoResponse resp;
  Status s = TestService::NewStub(refused)->Unary(&ctx, EchoRequest(), &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("methodConfig[0].hedgingPolicy: cannot be set with retryPolicy"));
}

}  // namespace
}  // namespace ringrpc
