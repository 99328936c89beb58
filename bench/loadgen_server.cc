// loadgen_server: the server every loadgen client drives — Debian's grpc++
// 1.51 with its callback API, in its own process. Unary echoes (or answers
// `response_size` bytes); Bidi answers each message with one; ServerStream
// sends `count` messages of `response_size` bytes (count <= 0: until the
// client cancels), as fast as flow control lets it. A Unary with
// `sleep_ms` is answered that much later (bench:footprint holds calls in
// flight with it), from one timer thread, however many there are.
//
//   loadgen_server --listen=127.0.0.1:0 [--cpu=N]   # prints "LISTENING <port>"
#include <grpcpp/grpcpp.h>
#include <sched.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "tests/proto/echo_test.grpc.pb.h"
#include "tests/server/serve.h"

namespace {

using grpc::CallbackServerContext;
using ringrpc::test::EchoRequest;
using ringrpc::test::EchoResponse;

void Answer(const EchoRequest& req, EchoResponse* resp) {
  if (req.response_size() > 0) {
    resp->set_payload(std::string(req.response_size(), 'r'));
  } else {
    resp->set_payload(req.payload());
  }
}

// Unary calls answered later: one thread finishes each when it is due.
class Later {
 public:
  Later() : thread_([this] { Run(); }) { thread_.detach(); }
  void Add(std::chrono::steady_clock::time_point due, grpc::ServerUnaryReactor* r) {
    std::lock_guard<std::mutex> lock(mu_);
    due_.emplace(due, r);
    cv_.notify_one();
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (due_.empty()) {
        cv_.wait(lock);
        continue;
      }
      auto first = due_.begin();
      if (std::chrono::steady_clock::now() < first->first) {
        cv_.wait_until(lock, first->first);
        continue;
      }
      grpc::ServerUnaryReactor* r = first->second;
      due_.erase(first);
      lock.unlock();
      r->Finish(grpc::Status::OK);
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::multimap<std::chrono::steady_clock::time_point, grpc::ServerUnaryReactor*> due_;
  std::thread thread_;
};

class Service final : public ringrpc::test::TestService::CallbackService {
  grpc::ServerUnaryReactor* Unary(CallbackServerContext* ctx, const EchoRequest* req,
                                  EchoResponse* resp) override {
    Answer(*req, resp);
    grpc::ServerUnaryReactor* r = ctx->DefaultReactor();
    if (req->sleep_ms() > 0) {
      static Later* later = new Later();  // lives as long as the process
      later->Add(std::chrono::steady_clock::now() + std::chrono::milliseconds(req->sleep_ms()), r);
      return r;
    }
    r->Finish(grpc::Status::OK);
    return r;
  }

  grpc::ServerWriteReactor<EchoResponse>* ServerStream(CallbackServerContext*,
                                                       const EchoRequest* req) override {
    class Stream final : public grpc::ServerWriteReactor<EchoResponse> {
     public:
      explicit Stream(const EchoRequest& req) : left_(req.count() > 0 ? req.count() : -1) {
        resp_.set_payload(std::string(req.response_size(), 's'));
        Next();
      }
      void OnWriteDone(bool ok) override {
        if (!ok) {
          Finish(grpc::Status::CANCELLED);
          return;
        }
        Next();
      }
      void OnDone() override { delete this; }

     private:
      void Next() {
        if (left_ == 0) {
          Finish(grpc::Status::OK);
          return;
        }
        if (left_ > 0) --left_;
        StartWrite(&resp_);
      }
      int64_t left_;  // -1: until cancelled
      EchoResponse resp_;
    };
    return new Stream(*req);
  }

  grpc::ServerBidiReactor<EchoRequest, EchoResponse>* Bidi(CallbackServerContext*) override {
    class Echo final : public grpc::ServerBidiReactor<EchoRequest, EchoResponse> {
     public:
      Echo() { StartRead(&req_); }
      void OnReadDone(bool ok) override {
        if (!ok) {
          Finish(grpc::Status::OK);
          return;
        }
        resp_.Clear();
        Answer(req_, &resp_);
        StartWrite(&resp_);
      }
      void OnWriteDone(bool ok) override {
        if (ok) {
          StartRead(&req_);
        } else {
          Finish(grpc::Status::CANCELLED);
        }
      }
      void OnDone() override { delete this; }

     private:
      EchoRequest req_;
      EchoResponse resp_;
    };
    return new Echo();
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:0";
  int cpu = -1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--listen=", 9) == 0) listen = argv[i] + 9;
    if (std::strncmp(argv[i], "--cpu=", 6) == 0) cpu = std::atoi(argv[i] + 6);
  }
  if (cpu >= 0) {  // before grpc++ starts its threads: they inherit it
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
      std::fprintf(stderr, "loadgen_server: cannot pin to CPU %d\n", cpu);
      return 1;
    }
  }
  Service service;
  return ringrpc::testing::ServeUntilSigterm(
      "loadgen_server", listen, [] { return grpc::InsecureServerCredentials(); },
      [&](grpc::ServerBuilder& builder) { builder.RegisterService(&service); });
}
