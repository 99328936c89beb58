// grpc++'s greeter_callback_client.cc shape: the callback form, the caller
// waiting on a condition variable, and a server stream through a reactor.
#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <iostream>
#include <memory>
#include <mutex>
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

  std::string SayHello(const std::string& user) {
    HelloRequest request;
    request.set_name(user);
    HelloReply reply;
    ClientContext context;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    Status status;
    stub_->async()->SayHello(&context, &request, &reply, [&mu, &cv, &done, &status](Status s) {
      status = std::move(s);
      std::lock_guard<std::mutex> lock(mu);
      done = true;
      cv.notify_one();
    });
    std::unique_lock<std::mutex> lock(mu);
    while (!done) {
      cv.wait(lock);
    }
    if (status.ok()) {
      return reply.message();
    } else {
      std::cout << status.error_code() << ": " << status.error_message() << std::endl;
      return "RPC failed";
    }
  }

  class Reader : public grpc::ClientReadReactor<HelloReply> {
   public:
    Reader(Greeter::Stub* stub, const HelloRequest& request) {
      stub->async()->SayHelloStream(&context_, &request, this);
      StartRead(&reply_);
      StartCall();
    }
    void OnReadDone(bool ok) override {
      if (ok) {
        messages_ += reply_.message() + ";";
        StartRead(&reply_);
      }
    }
    void OnDone(const Status& s) override {
      std::unique_lock<std::mutex> l(mu_);
      status_ = s;
      done_ = true;
      cv_.notify_one();
    }
    Status Await(std::string* messages) {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [this] { return done_; });
      *messages = messages_;
      return std::move(status_);
    }

   private:
    ClientContext context_;
    HelloReply reply_;
    std::string messages_;
    std::mutex mu_;
    std::condition_variable cv_;
    Status status_;
    bool done_ = false;
  };

  std::string SayHellos(const std::string& user, int times) {
    HelloRequest request;
    request.set_name(user);
    request.set_times(times);
    Reader reader(stub_.get(), request);
    std::string messages;
    Status status = reader.Await(&messages);
    return status.ok() ? messages : "RPC failed";
  }

 private:
  std::unique_ptr<Greeter::Stub> stub_;
};

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  GreeterClient greeter(grpc::CreateChannel(argv[1], grpc::InsecureChannelCredentials()));
  std::cout << "Greeter received: " << greeter.SayHello("world") << std::endl;
  std::cout << "Greeter received: " << greeter.SayHello("error") << std::endl;
  std::cout << "Greeter stream: " << greeter.SayHellos("world", 3) << std::endl;
  return 0;
}
