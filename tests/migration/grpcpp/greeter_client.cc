// grpc++'s greeter_client.cc shape: a blocking client class, channel
// arguments, a deadline, metadata, an error status and the channel's state.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>

#include "examples/helloworld/helloworld.grpc.pb.h"

using grpc::Channel;
using grpc::ClientContext;
using grpc::Status;
using helloworld::Greeter;
using helloworld::HelloReply;
using helloworld::HelloRequest;

class GreeterClient {
 public:
  GreeterClient(std::shared_ptr<Channel> channel) : stub_(Greeter::NewStub(channel)) {}

  std::string SayHello(const std::string& user, int deadline_ms = 5000) {
    HelloRequest request;
    request.set_name(user);
    HelloReply reply;
    ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms));
    context.AddMetadata("x-user", "alice");
    Status status = stub_->SayHello(&context, request, &reply);
    if (status.ok()) {
      return reply.message();
    } else {
      std::cout << status.error_code() << ": " << status.error_message() << std::endl;
      return "RPC failed";
    }
  }

 private:
  std::unique_ptr<Greeter::Stub> stub_;
};

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::string target_str = argv[1];
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 60000);
  args.SetMaxReceiveMessageSize(4 * 1024 * 1024);
  args.SetLoadBalancingPolicyName("pick_first");
  args.SetUserAgentPrefix("migration-test");
  std::shared_ptr<Channel> channel =
      grpc::CreateCustomChannel(target_str, grpc::InsecureChannelCredentials(), args);
  bool connected =
      channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10));
  std::cout << "connected: " << connected << std::endl;
  std::cout << "ready: " << (channel->GetState(false) == GRPC_CHANNEL_READY) << std::endl;

  GreeterClient greeter(channel);
  std::cout << "Greeter received: " << greeter.SayHello("world") << std::endl;
  std::cout << "Greeter received: " << greeter.SayHello("error") << std::endl;
  std::cout << "Greeter received: " << greeter.SayHello("slow", 200) << std::endl;
  return 0;
}
