// A user's program with protos from another repository: grpc++'s server and
// client, and ringrpc's client, all over the one set of message classes
// from the user's cc_proto_library. Exits 0 only when every call returned
// what the server sent.
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <memory>
#include <string>

#include "greet/v1/greeter.grpc.pb.h"
#include "greet/v1/greeter.ringrpc.pb.h"
#include "status.ringrpc.pb.h"

namespace {

using shared::greet::v1::HelloReply;
using shared::greet::v1::HelloRequest;

class GreeterImpl final : public shared::greet::v1::Greeter::Service {
  grpc::Status SayHello(grpc::ServerContext*, const HelloRequest* request,
                        HelloReply* reply) override {
    reply->set_message("hello " + request->name());
    reply->mutable_answered_at()->set_seconds(1700000000);
    *reply->mutable_echoed_origin() = request->origin();
    return grpc::Status::OK;
  }
  grpc::Status SayHellos(grpc::ServerContext*, const HelloRequest* request,
                         grpc::ServerWriter<HelloReply>* writer) override {
    for (int i = 0; i < request->repeat(); ++i) {
      HelloReply reply;
      reply.set_message("hello #" + std::to_string(i) + " " + request->name());
      writer->Write(reply);
    }
    return grpc::Status::OK;
  }
};

int failures = 0;

void Expect(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what.c_str());
  if (!ok) ++failures;
}

HelloRequest Request(const std::string& name) {
  HelloRequest request;
  request.set_name(name);
  request.mutable_origin()->set_caller(name);
  request.mutable_origin()->mutable_sent_at()->set_seconds(42);
  return request;
}

}  // namespace

int main() {
  GreeterImpl service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::printf("FAILED: the embedded grpc++ server did not start\n");
    return 1;
  }
  const std::string target = "127.0.0.1:" + std::to_string(port);

  {  // grpc++'s client.
    auto stub = shared::greet::v1::Greeter::NewStub(
        grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    HelloReply reply;
    grpc::Status status = stub->SayHello(&context, Request("grpc++"), &reply);
    Expect(status.ok() && reply.message() == "hello grpc++" &&
               reply.echoed_origin().sent_at().seconds() == 42,
           "grpc++ SayHello: " + (status.ok() ? reply.message() : status.error_message()));
  }

  auto channel = ringrpc::CreateChannel(target, ringrpc::InsecureChannelCredentials());
  auto stub = shared::greet::v1::ring::Greeter::NewStub(channel);
  {  // ringrpc's client, unary.
    ringrpc::ClientContext context;
    HelloReply reply;
    ringrpc::Status status = stub->SayHello(&context, Request("ringrpc"), &reply);
    Expect(status.ok() && reply.message() == "hello ringrpc" &&
               reply.answered_at().seconds() == 1700000000 &&
               reply.echoed_origin().caller() == "ringrpc",
           "ringrpc SayHello: " + (status.ok() ? reply.message() : status.ToString()));
  }
  {  // ringrpc's client, server stream.
    ringrpc::ClientContext context;
    HelloRequest request = Request("stream");
    request.set_repeat(3);
    auto reader = stub->SayHellos(&context, request);
    HelloReply reply;
    int n = 0;
    bool in_order = true;
    while (reader->Read(&reply)) {
      in_order = in_order && reply.message() == "hello #" + std::to_string(n) + " stream";
      ++n;
    }
    ringrpc::Status status = reader->Finish();
    Expect(status.ok() && n == 3 && in_order,
           "ringrpc SayHellos: " + std::to_string(n) + " replies, " + status.ToString());
  }
  {  // The convenience form's stub: the server does not implement Status.
    auto status_stub = user::app::Status::NewStub(channel);
    ringrpc::ClientContext context;
    user::app::CheckReply reply;
    ringrpc::Status status = status_stub->Check(&context, google::protobuf::Empty(), &reply);
    Expect(status.error_code() == ringrpc::StatusCode::UNIMPLEMENTED,
           "ringrpc Status.Check (not served): " + status.ToString());
  }
  server->Shutdown();
  std::printf("%d failed\n", failures);
  return failures == 0 ? 0 : 1;
}
