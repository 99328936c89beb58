// grpc++'s greeter_async_client.cc shape: one call through a
// CompletionQueue, the tag taken back with Next on the calling thread.
#include <grpcpp/grpcpp.h>

#include <iostream>
#include <memory>
#include <string>

#include "examples/helloworld/helloworld.grpc.pb.h"

using grpc::Channel;
using grpc::ClientAsyncResponseReader;
using grpc::ClientContext;
using grpc::CompletionQueue;
using grpc::Status;
using helloworld::Greeter;
using helloworld::HelloReply;
using helloworld::HelloRequest;

class GreeterClient {
 public:
  explicit GreeterClient(std::shared_ptr<Channel> channel) : stub_(Greeter::NewStub(channel)) {}

  std::string SayHello(const std::string& user) {
    HelloRequest request;
    request.set_name(user);
    HelloReply reply;
    ClientContext context;
    CompletionQueue cq;
    Status status;
    std::unique_ptr<ClientAsyncResponseReader<HelloReply>> rpc(
        stub_->AsyncSayHello(&context, request, &cq));
    rpc->Finish(&reply, &status, (void*)1);
    void* got_tag;
    bool ok = false;
    if (!cq.Next(&got_tag, &ok) || got_tag != (void*)1 || !ok) return "bad tag";
    if (status.ok()) {
      return reply.message();
    } else {
      return "RPC failed: " + status.error_message();
    }
  }

 private:
  std::unique_ptr<Greeter::Stub> stub_;
};

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  GreeterClient greeter(grpc::CreateChannel(argv[1], grpc::InsecureChannelCredentials()));
  std::cout << "Greeter received: " << greeter.SayHello("world") << std::endl;
  std::cout << "Greeter received: " << greeter.SayHello("error") << std::endl;
  return 0;
}
