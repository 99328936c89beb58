// grpc++'s greeter_async_client2.cc shape: many calls outstanding on one
// CompletionQueue, a second thread looping on Next, Shutdown to end it.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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

  void SayHello(const std::string& user) {
    HelloRequest request;
    request.set_name(user);
    AsyncClientCall* call = new AsyncClientCall;
    call->response_reader = stub_->PrepareAsyncSayHello(&call->context, request, &cq_);
    call->response_reader->StartCall();
    call->response_reader->Finish(&call->reply, &call->status, (void*)call);
  }

  void AsyncCompleteRpc() {
    void* got_tag;
    bool ok = false;
    while (cq_.Next(&got_tag, &ok)) {
      AsyncClientCall* call = static_cast<AsyncClientCall*>(got_tag);
      std::lock_guard<std::mutex> lock(mu_);
      if (!ok) {
        replies_.push_back("not ok");
      } else if (call->status.ok()) {
        replies_.push_back(call->reply.message());
      } else {
        replies_.push_back("RPC failed: " + call->status.error_message());
      }
      cv_.notify_all();
      delete call;
    }
  }

  void Shutdown() { cq_.Shutdown(); }

  void WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return replies_.size() >= n; });
  }

  std::vector<std::string> Replies() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> r = replies_;
    std::sort(r.begin(), r.end());
    return r;
  }

 private:
  struct AsyncClientCall {
    HelloReply reply;
    ClientContext context;
    Status status;
    std::unique_ptr<ClientAsyncResponseReader<HelloReply>> response_reader;
  };

  std::unique_ptr<Greeter::Stub> stub_;
  CompletionQueue cq_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> replies_;
};

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  GreeterClient greeter(grpc::CreateChannel(argv[1], grpc::InsecureChannelCredentials()));
  std::thread thread_ = std::thread(&GreeterClient::AsyncCompleteRpc, &greeter);
  for (int i = 0; i < 100; i++) {
    std::string user("world " + std::to_string(i % 10));
    greeter.SayHello(user);
  }
  greeter.SayHello("error");
  greeter.WaitFor(101);  // every reply is in before the queue is shut down
  greeter.Shutdown();
  thread_.join();
  std::vector<std::string> replies = greeter.Replies();
  std::cout << "replies: " << replies.size() << std::endl;
  for (size_t i = 0; i < replies.size(); i += 10) std::cout << replies[i] << std::endl;
  return 0;
}
