// GenericStub: calls by method name over bytes, in each form, against a grpc++ server process.
#include "ringrpc/client/generic_stub.h"

#include <gtest/gtest.h>

#include <future>
#include <string>

#include "tests/proto/echo_test.pb.h"
#include "tests/testing/server_process.h"

namespace ringrpc {
namespace {

using test::EchoRequest;
using test::EchoResponse;

class GenericStubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = testing::ServerProcess::Start();
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    stub_ = std::make_unique<GenericStub>(
        CreateChannel(server_->address(), InsecureChannelCredentials()));
  }
  static std::string Echo(const std::string& payload) {
    EchoRequest req;
    req.set_payload(payload);
    return req.SerializeAsString();
  }
  static std::string PayloadOf(const std::string& bytes) {
    EchoResponse resp;
    return resp.ParseFromString(bytes) ? resp.payload() : "<does not parse>";
  }
  std::unique_ptr<testing::ServerProcess> server_;
  std::unique_ptr<GenericStub> stub_;
};

TEST_F(GenericStubTest, UnaryInEachForm) {
  const std::string method = "/ringrpc.test.TestService/Unary";
  {
    ClientContext ctx;
    std::string reply;
    Status s = stub_->UnaryCall(&ctx, method, Echo("blocking"), &reply);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(PayloadOf(reply), "blocking");
  }
  {
    ClientContext ctx;
    std::string request = Echo("callback"), reply;
    std::promise<Status> done;
    stub_->UnaryCall(&ctx, method, &request, &reply, [&](Status s) { done.set_value(s); });
    ASSERT_TRUE(done.get_future().get().ok());
    EXPECT_EQ(PayloadOf(reply), "callback");
  }
  {
    std::string reply;
    std::promise<Status> done;
    stub_->channel()->Spawn([](GenericStub* stub, std::string method, std::string* reply,
                               std::promise<Status>* done) -> Task<void> {
      ClientContext ctx;
      done->set_value(co_await stub->co_UnaryCall(&ctx, method, Echo("coroutine"), reply));
    }(stub_.get(), method, &reply, &done));
    ASSERT_TRUE(done.get_future().get().ok());
    EXPECT_EQ(PayloadOf(reply), "coroutine");
  }
  {
    CompletionQueue cq;
    ClientContext ctx;
    std::string reply;
    Status status(StatusCode::UNKNOWN, "not set");
    auto rpc = stub_->PrepareUnaryCall(&ctx, method, Echo("completion queue"), &cq);
    rpc->StartCall();
    rpc->Finish(&reply, &status, &reply);
    void* tag = nullptr;
    bool ok = false;
    ASSERT_TRUE(cq.Next(&tag, &ok));
    EXPECT_EQ(tag, &reply);
    EXPECT_TRUE(ok);
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_EQ(PayloadOf(reply), "completion queue");
  }
  {
    CompletionQueue cq;  // a method the server does not have: its status
    ClientContext ctx;
    std::string reply;
    Status status;
    auto rpc = stub_->PrepareUnaryCall(&ctx, "/ringrpc.test.TestService/Nope", "", &cq);
    rpc->StartCall();
    rpc->Finish(&reply, &status, &reply);
    void* tag = nullptr;
    bool ok = false;
    ASSERT_TRUE(cq.Next(&tag, &ok));
    EXPECT_EQ(status.error_code(), StatusCode::UNIMPLEMENTED) << status.ToString();
  }
}

TEST_F(GenericStubTest, ACompletionQueueStreamOverBytes) {
  CompletionQueue cq;
  ClientContext ctx;
  auto stream = stub_->PrepareCall(&ctx, "/ringrpc.test.TestService/Bidi", &cq);
  auto next = [&cq](intptr_t want) {
    void* tag = nullptr;
    bool ok = false;
    EXPECT_TRUE(cq.Next(&tag, &ok));
    EXPECT_EQ(tag, reinterpret_cast<void*>(want));
    return ok;
  };
  stream->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(next(1));
  for (int i = 0; i < 3; ++i) {
    stream->Write(Echo("b" + std::to_string(i)), reinterpret_cast<void*>(2));
    ASSERT_TRUE(next(2));
    std::string reply;
    stream->Read(&reply, reinterpret_cast<void*>(3));
    ASSERT_TRUE(next(3));
    EXPECT_EQ(PayloadOf(reply), "b" + std::to_string(i));
  }
  stream->WritesDone(reinterpret_cast<void*>(4));
  ASSERT_TRUE(next(4));
  std::string none;
  stream->Read(&none, reinterpret_cast<void*>(5));
  EXPECT_FALSE(next(5));  // the end of the stream
  Status status;
  stream->Finish(&status, reinterpret_cast<void*>(6));
  EXPECT_TRUE(next(6));
  EXPECT_TRUE(status.ok()) << status.ToString();
}

TEST_F(GenericStubTest, ABidiStreamOverBytes) {
  ClientContext ctx;
  auto stream = stub_->Call(&ctx, "/ringrpc.test.TestService/Bidi");
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(stream->Write(Echo("m" + std::to_string(i))));
    std::string reply;
    ASSERT_TRUE(stream->Read(&reply));
    EXPECT_EQ(PayloadOf(reply), "m" + std::to_string(i));
  }
  ASSERT_TRUE(stream->WritesDone());
  std::string extra;
  EXPECT_FALSE(stream->Read(&extra));
  Status s = stream->Finish();
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST_F(GenericStubTest, AnUnknownMethodIsUnimplementedAndABadOneInvalid) {
  ClientContext ctx;
  std::string reply;
  Status s = stub_->UnaryCall(&ctx, "/ringrpc.test.TestService/NoSuchMethod", "", &reply);
  EXPECT_EQ(s.error_code(), StatusCode::UNIMPLEMENTED) << s.ToString();
  ClientContext ctx2;
  auto stream = stub_->Call(&ctx2, "not a path");
  EXPECT_FALSE(stream->Write("x"));
  Status bad = stream->Finish();
  EXPECT_EQ(bad.error_code(), StatusCode::INVALID_ARGUMENT) << bad.ToString();
}

}  // namespace
}  // namespace ringrpc
