// grpc++'s mock test shape: application code against Greeter::StubInterface,
// tested with the generated MockGreeterStub and a scripted stream.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/test/mock_stream.h>
#include <gtest/gtest.h>

#include <string>

#include "examples/helloworld/helloworld.grpc.pb.h"
#include "examples/helloworld/helloworld_mock.grpc.pb.h"

using grpc::ClientContext;
using grpc::Status;
using grpc::testing::MockClientReader;
using helloworld::Greeter;
using helloworld::HelloReply;
using helloworld::HelloRequest;
using helloworld::MockGreeterStub;
using ::testing::_;
using ::testing::DoAll;
using ::testing::Return;
using ::testing::SetArgPointee;

class FakeClient {
 public:
  explicit FakeClient(Greeter::StubInterface* stub) : stub_(stub) {}

  std::string Greet(const std::string& name) {
    ClientContext context;
    HelloRequest request;
    request.set_name(name);
    HelloReply reply;
    Status s = stub_->SayHello(&context, request, &reply);
    return s.ok() ? reply.message() : "failed: " + s.error_message();
  }

  std::string GreetMany(const std::string& name) {
    ClientContext context;
    HelloRequest request;
    request.set_name(name);
    std::unique_ptr<grpc::ClientReaderInterface<HelloReply>> reader =
        stub_->SayHelloStream(&context, request);
    HelloReply reply;
    std::string all;
    while (reader->Read(&reply)) all += reply.message() + ";";
    return reader->Finish().ok() ? all : "failed";
  }

 private:
  Greeter::StubInterface* stub_;
};

TEST(GreeterMock, UnaryReplyIsScripted) {
  MockGreeterStub stub;
  HelloReply reply;
  reply.set_message("Hi mock");
  EXPECT_CALL(stub, SayHello(_, _, _)).WillOnce(DoAll(SetArgPointee<2>(reply), Return(Status::OK)));
  FakeClient client(&stub);
  EXPECT_EQ(client.Greet("x"), "Hi mock");
}

TEST(GreeterMock, UnaryErrorIsScripted) {
  MockGreeterStub stub;
  EXPECT_CALL(stub, SayHello(_, _, _))
      .WillOnce(Return(Status(grpc::StatusCode::UNAVAILABLE, "down")));
  FakeClient client(&stub);
  EXPECT_EQ(client.Greet("x"), "failed: down");
}

TEST(GreeterMock, ServerStreamOfThreeMessagesIsScripted) {
  MockGreeterStub stub;
  auto* reader = new MockClientReader<HelloReply>();
  HelloReply a, b, c;
  a.set_message("a");
  b.set_message("b");
  c.set_message("c");
  EXPECT_CALL(*reader, Read(_))
      .WillOnce(DoAll(SetArgPointee<0>(a), Return(true)))
      .WillOnce(DoAll(SetArgPointee<0>(b), Return(true)))
      .WillOnce(DoAll(SetArgPointee<0>(c), Return(true)))
      .WillOnce(Return(false));
  EXPECT_CALL(*reader, Finish()).WillOnce(Return(Status::OK));
  EXPECT_CALL(stub, SayHelloStreamRaw(_, _)).WillOnce(Return(reader));
  FakeClient client(&stub);
  EXPECT_EQ(client.GreetMany("x"), "a;b;c;");
}
