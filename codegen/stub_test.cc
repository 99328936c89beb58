// Generated stubs, end to end against the grpc++ test server (a child
// process): every call type and every call form; a gMock mock of a
// StubInterface; the tricky proto's stubs compile and run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "codegen/testdata/tricky.ringrpc.pb.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/server_process.h"

namespace {

using ringrpc::test::EchoRequest;
using ringrpc::test::EchoResponse;
using TestService = ringrpc::test::ringrpc::TestService;
using ::ringrpc::ClientContext;
using ::ringrpc::Status;
using ::ringrpc::StatusCode;
using ::ringrpc::pool::Task;

class StubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = ::ringrpc::testing::ServerProcess::Start();
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    channel_ = ::ringrpc::CreateChannel(server_->address(), ::ringrpc::InsecureChannelCredentials());
    stub_ = TestService::NewStub(channel_);
  }
  // Runs `task` on one of the channel's CQ threads and waits for it.
  template <typename F>
  void OnCq(F make_task) {
    std::promise<void> done;
    channel_->Spawn([](F make, std::promise<void>* done) -> Task<void> {
      co_await make();
      done->set_value();
    }(std::move(make_task), &done));
    done.get_future().get();
  }
  std::unique_ptr<::ringrpc::testing::ServerProcess> server_;
  std::shared_ptr<::ringrpc::Channel> channel_;
  std::unique_ptr<TestService::Stub> stub_;
};

TEST_F(StubTest, UnaryBlockingCallbackAndCoroutine) {
  EchoRequest req;
  req.set_payload("blocking");
  EchoResponse resp;
  ClientContext c1;
  ASSERT_TRUE(stub_->Unary(&c1, req, &resp).ok());
  EXPECT_EQ(resp.payload(), "blocking");

  req.set_payload("callback");
  ClientContext c2;
  std::promise<Status> done;
  stub_->async()->Unary(&c2, &req, &resp, [&](Status s) { done.set_value(s); });
  ASSERT_TRUE(done.get_future().get().ok());
  EXPECT_EQ(resp.payload(), "callback");

  Status co;
  OnCq([&]() -> Task<void> {
    ClientContext c3;
    EchoRequest r;
    r.set_payload("coroutine");
    co = co_await stub_->co_Unary(&c3, r, &resp);
  });
  ASSERT_TRUE(co.ok()) << co.ToString();
  EXPECT_EQ(resp.payload(), "coroutine");
}

TEST_F(StubTest, ServerClientAndBidiStreaming) {
  int server_msgs = 0, bidi_matched = 0;
  EchoResponse client_result;
  Status s1, s2, s3;
  OnCq([&]() -> Task<void> {
    ClientContext ctx;
    auto call = co_await stub_->co_ServerStream(&ctx, &s1);
    EchoRequest req;
    req.set_count(100);
    co_await call->Write(req);
    call->WritesDone();
    EchoResponse r;
    while (co_await call->Read(&r)) server_msgs += r.count() == server_msgs;
    s1 = co_await call->Finish();
  });
  OnCq([&]() -> Task<void> {
    ClientContext ctx;
    auto call = co_await stub_->co_ClientStream(&ctx, &s2);
    for (int i = 0; i < 10; ++i) {
      EchoRequest req;
      req.set_payload("abc");
      co_await call->Write(req);
    }
    call->WritesDone();
    co_await call->Read(&client_result);
    s2 = co_await call->Finish();
  });
  OnCq([&]() -> Task<void> {
    ClientContext ctx;
    auto call = co_await stub_->co_Bidi(&ctx, &s3);
    for (int i = 0; i < 20; ++i) {
      EchoRequest req;
      req.set_payload(std::to_string(i));
      co_await call->Write(req);
      EchoResponse r;
      if (co_await call->Read(&r)) bidi_matched += r.payload() == std::to_string(i);
    }
    call->WritesDone();
    EchoResponse r;
    while (co_await call->Read(&r)) {
    }
    s3 = co_await call->Finish();
  });
  EXPECT_TRUE(s1.ok()) << s1.ToString();
  EXPECT_EQ(server_msgs, 100);
  EXPECT_TRUE(s2.ok()) << s2.ToString();
  EXPECT_EQ(client_result.count(), 10);
  EXPECT_EQ(client_result.total_bytes(), 30);
  EXPECT_TRUE(s3.ok()) << s3.ToString();
  EXPECT_EQ(bidi_matched, 20);
}

TEST_F(StubTest, BlockingStreamsAsInGrpcpp) {
  {
    ClientContext ctx;
    EchoRequest req;
    req.set_count(50);
    auto reader = stub_->ServerStream(&ctx, req);
    EchoResponse r;
    int n = 0;
    while (reader->Read(&r)) n += r.count() == n;
    Status s = reader->Finish();
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(n, 50);
  }
  {
    ClientContext ctx;
    EchoResponse summary;
    auto writer = stub_->ClientStream(&ctx, &summary);
    for (int i = 0; i < 7; ++i) {
      EchoRequest req;
      req.set_payload("xy");
      ASSERT_TRUE(writer->Write(req));
    }
    Status s = writer->Finish();
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(summary.count(), 7);
    EXPECT_EQ(summary.total_bytes(), 14);
  }
  {
    ClientContext ctx;
    auto stream = stub_->Bidi(&ctx);
    // One thread writes while this one reads, as grpc++ allows.
    std::thread writer([&] {
      for (int i = 0; i < 30; ++i) {
        EchoRequest req;
        req.set_payload(std::to_string(i));
        stream->Write(req);
      }
      stream->WritesDone();
    });
    EchoResponse r;
    int n = 0;
    while (stream->Read(&r)) n += r.payload() == std::to_string(n);
    writer.join();
    Status s = stream->Finish();
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(n, 30);
  }
}

TEST(BlockingStream, FailureToOpenIsReportedByFinish) {
  auto channel = ::ringrpc::CreateChannel("127.0.0.1:1", ::ringrpc::InsecureChannelCredentials());
  auto stub = TestService::NewStub(channel);
  ClientContext ctx;
  auto reader = stub->ServerStream(&ctx, EchoRequest());
  EchoResponse r;
  EXPECT_FALSE(reader->Read(&r));
  EXPECT_EQ(reader->Finish().error_code(), StatusCode::UNAVAILABLE);
}

// Application code written against the interface can be tested with gMock.
class MockTestService : public TestService::StubInterface {
 public:
  MOCK_METHOD(Status, Unary, (ClientContext*, const EchoRequest&, EchoResponse*), (override));
  MOCK_METHOD(Status, Stats,
              (ClientContext*, const ringrpc::test::StatsRequest&, ringrpc::test::StatsResponse*),
              (override));
  MOCK_METHOD(std::unique_ptr<::ringrpc::ClientReader<EchoResponse>>, ServerStream,
              (ClientContext*, const EchoRequest&), (override));
  MOCK_METHOD(std::unique_ptr<::ringrpc::ClientWriter<EchoRequest>>, ClientStream,
              (ClientContext*, EchoResponse*), (override));
  MOCK_METHOD((std::unique_ptr<::ringrpc::ClientReaderWriter<EchoRequest, EchoResponse>>), Bidi,
              (ClientContext*), (override));
};

std::string Shout(TestService::StubInterface& stub, const std::string& text) {
  ClientContext ctx;
  EchoRequest req;
  req.set_payload(text);
  EchoResponse resp;
  Status s = stub.Unary(&ctx, req, &resp);
  return s.ok() ? resp.payload() + "!" : "error: " + s.error_message();
}

TEST(StubInterface, CanBeMocked) {
  MockTestService mock;
  EXPECT_CALL(mock, Unary(::testing::_, ::testing::_, ::testing::_))
      .WillOnce([](ClientContext*, const EchoRequest& req, EchoResponse* resp) {
        resp->set_payload("mocked " + req.payload());
        return Status();
      })
      .WillOnce(::testing::Return(Status(StatusCode::UNAVAILABLE, "down")));
  EXPECT_EQ(Shout(mock, "hi"), "mocked hi!");
  EXPECT_EQ(Shout(mock, "hi"), "error: down");
}

TEST(TrickyStubs, KeywordNamesCompileAndCallThrough) {
  auto channel = ::ringrpc::CreateChannel("127.0.0.1:1", ::ringrpc::InsecureChannelCredentials());
  auto stub = ringrpc::codegen_test::deep::nested::delete_::NewStub(channel);
  ClientContext ctx;
  ringrpc::codegen_test::common::Ping ping;
  ringrpc::codegen_test::deep::nested::Pong pong;
  Status s = stub->new_(&ctx, ping, &pong);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);  // nothing listens on port 1
  EXPECT_STREQ(ringrpc::codegen_test::deep::nested::Other::service_full_name,
               "ringrpc.codegen_test.deep.nested.Other");
}

}  // namespace
