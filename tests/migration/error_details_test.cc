// Rich error details (grpc-status-details-bin) from a real grpc++ server:
// the server ends calls with a google.rpc.Status holding an Any, and the
// ringrpc client gets those bytes in Status::error_details() in every call
// form, and the typed message through ExtractErrorDetails, as grpc++'s.
#include <google/rpc/status.pb.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>

#include "examples/helloworld/helloworld.grpc.pb.h"
#include "examples/helloworld/helloworld.ringrpc.pb.h"
#include "ringrpc/ringrpc.h"

namespace {

using helloworld::HelloReply;
using helloworld::HelloRequest;

// "rich" ends with details (code 5, an Any naming the missing name);
// "plain" with an error and no details; else OK.
class RichErrors final : public helloworld::Greeter::Service {
  grpc::Status SayHello(grpc::ServerContext*, const HelloRequest* req, HelloReply* reply) override {
    if (req->name() == "plain") return {grpc::StatusCode::INVALID_ARGUMENT, "plain error"};
    if (req->name() != "rich") {
      reply->set_message("Hello " + req->name());
      return grpc::Status::OK;
    }
    google::rpc::Status rich;
    rich.set_code(static_cast<int>(grpc::StatusCode::NOT_FOUND));
    rich.set_message("no user rich");
    HelloRequest missing;
    missing.set_name("rich");
    rich.add_details()->PackFrom(missing);
    return {grpc::StatusCode::NOT_FOUND, "no user rich", rich.SerializeAsString()};
  }
  grpc::Status SayHelloStream(grpc::ServerContext* ctx, const HelloRequest* req,
                              grpc::ServerWriter<HelloReply>*) override {
    HelloReply unused;
    return SayHello(ctx, req, &unused);
  }
};

class ErrorDetails : public ::testing::Test {
 protected:
  void SetUp() override {
    int port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    channel_ = ringrpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                      ringrpc::InsecureChannelCredentials());
    stub_ = helloworld::ring::Greeter::NewStub(channel_);
  }
  void TearDown() override { server_->Shutdown(); }

  static HelloRequest Named(const std::string& name) {
    HelloRequest r;
    r.set_name(name);
    return r;
  }

  // The typed details of `s`, checked whole.
  static void ExpectRich(const ringrpc::Status& s) {
    EXPECT_EQ(s.error_code(), ringrpc::StatusCode::NOT_FOUND);
    EXPECT_EQ(s.error_message(), "no user rich");
    google::rpc::Status rich;
    ASSERT_TRUE(ringrpc::ExtractErrorDetails(s, &rich).ok());
    EXPECT_EQ(rich.code(), 5);
    EXPECT_EQ(rich.message(), "no user rich");
    ASSERT_EQ(rich.details_size(), 1);
    HelloRequest missing;
    ASSERT_TRUE(rich.details(0).UnpackTo(&missing));
    EXPECT_EQ(missing.name(), "rich");
  }

  RichErrors service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<ringrpc::Channel> channel_;
  std::unique_ptr<helloworld::ring::Greeter::Stub> stub_;
};

TEST_F(ErrorDetails, BlockingUnaryCallCarriesTheServersRichStatus) {
  ringrpc::ClientContext ctx;
  HelloReply reply;
  ExpectRich(stub_->SayHello(&ctx, Named("rich"), &reply));
}

TEST_F(ErrorDetails, CallbackAndCompletionQueueFormsCarryThemToo) {
  ringrpc::ClientContext ctx;
  HelloRequest req = Named("rich");
  HelloReply reply;
  std::promise<ringrpc::Status> done;
  stub_->async()->SayHello(&ctx, &req, &reply, [&](ringrpc::Status s) { done.set_value(s); });
  ExpectRich(done.get_future().get());

  ringrpc::CompletionQueue cq;
  ringrpc::ClientContext ctx2;
  ringrpc::Status status;
  auto rpc = stub_->AsyncSayHello(&ctx2, req, &cq);
  rpc->Finish(&reply, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_TRUE(ok);
  ExpectRich(status);
}

TEST_F(ErrorDetails, AServerStreamsStatusCarriesThem) {
  ringrpc::ClientContext ctx;
  auto reader = stub_->SayHelloStream(&ctx, Named("rich"));
  HelloReply reply;
  EXPECT_FALSE(reader->Read(&reply));
  ExpectRich(reader->Finish());
}

TEST_F(ErrorDetails, AnErrorWithoutDetailsHasNoneAndOkHasNone) {
  ringrpc::ClientContext ctx;
  HelloReply reply;
  ringrpc::Status s = stub_->SayHello(&ctx, Named("plain"), &reply);
  EXPECT_EQ(s.error_code(), ringrpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_details(), "");
  google::rpc::Status rich;
  EXPECT_TRUE(ringrpc::ExtractErrorDetails(s, &rich).ok());
  EXPECT_EQ(rich.details_size(), 0);
  ringrpc::ClientContext ctx2;
  EXPECT_TRUE(stub_->SayHello(&ctx2, Named("bob"), &reply).ok());
  EXPECT_EQ(reply.message(), "Hello bob");
}

TEST(ErrorDetailsApi, BadBytesAndNullOutputsAreClearErrors) {
  ringrpc::Status garbage(ringrpc::StatusCode::INTERNAL, "x", std::string("\xff\xff\xff", 3));
  google::rpc::Status rich;
  ringrpc::Status r = ringrpc::ExtractErrorDetails(garbage, &rich);
  EXPECT_EQ(r.error_code(), ringrpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(r.error_message().find("google.rpc.Status"), std::string::npos) << r.error_message();
  EXPECT_EQ(ringrpc::ExtractErrorDetails<google::rpc::Status>(garbage, nullptr).error_code(),
            ringrpc::StatusCode::FAILED_PRECONDITION);
}

TEST(ErrorDetailsApi, SetErrorDetailsRoundTripsAndMapsUnknownCodes) {
  google::rpc::Status rich;
  rich.set_code(7);
  rich.set_message("denied");
  ringrpc::Status s;
  ASSERT_TRUE(ringrpc::SetErrorDetails(rich, &s).ok());
  EXPECT_EQ(s.error_code(), ringrpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(), "denied");
  google::rpc::Status back;
  ASSERT_TRUE(ringrpc::ExtractErrorDetails(s, &back).ok());
  EXPECT_EQ(back.code(), 7);
  rich.set_code(99);
  ASSERT_TRUE(ringrpc::SetErrorDetails(rich, &s).ok());
  EXPECT_EQ(s.error_code(), ringrpc::StatusCode::UNKNOWN);
}

}  // namespace
