// A grpc++ front server whose handlers call a grpc++ backend through
// ringrpc, with ClientContext::FromServerContext (synchronous handlers) and
// FromCallbackServerContext (callback handlers): the test's grpc++ client
// sets a deadline or cancels, and the backend must see it. A request's
// name says what the front does ("nocancel:", "nodeadline:", "later:"
// prefixes) and what the backend does ("deadline": answer with the
// deadline it got; "wait": hold until cancelled or released; "rich": fail
// with error details).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "examples/helloworld/helloworld.grpc.pb.h"
#include "examples/helloworld/helloworld.ringrpc.pb.h"
#include "ringrpc/grpcpp/interop.h"
#include "ringrpc/ringrpc.h"

namespace {

using helloworld::HelloReply;
using helloworld::HelloRequest;
using std::chrono::milliseconds;
using std::chrono::system_clock;

int64_t MillisSinceEpoch(system_clock::time_point t) {
  return std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count();
}

// What the backend saw, for the test to wait on.
struct Seen {
  std::mutex mu;
  std::condition_variable cv;
  int waiting = 0;                                  // "wait" calls that started
  int cancelled = 0;                                // "wait" calls that saw IsCancelled()
  bool released = false;                            // "wait" calls may end OK
  std::optional<ringrpc::StatusCode> front_status;  // the front's ringrpc call

  template <typename Pred>
  bool WaitFor(Pred pred, std::chrono::seconds limit = std::chrono::seconds(20)) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, limit, pred);
  }
  void Update(const std::function<void()>& f) {
    {
      std::lock_guard<std::mutex> lock(mu);
      f();
    }
    cv.notify_all();
  }
};

class Backend final : public helloworld::Greeter::Service {
 public:
  explicit Backend(Seen* seen) : seen_(seen) {}
  grpc::Status SayHello(grpc::ServerContext* ctx, const HelloRequest* req,
                        HelloReply* reply) override {
    if (req->name() == "deadline") {
      const system_clock::time_point d = ctx->deadline();
      reply->set_message(
          d == system_clock::time_point::max() ? "none" : std::to_string(MillisSinceEpoch(d)));
      return grpc::Status::OK;
    }
    if (req->name() == "rich") {
      return {grpc::StatusCode::NOT_FOUND, "no such thing",
              std::string("\x0a\x03"
                          "abc",
                          5)};
    }
    if (req->name() == "wait") {
      seen_->Update([&] { ++seen_->waiting; });
      const auto until = system_clock::now() + std::chrono::seconds(30);
      while (!ctx->IsCancelled() && system_clock::now() < until) {
        {
          std::lock_guard<std::mutex> lock(seen_->mu);
          if (seen_->released) return grpc::Status::OK;
        }
        std::this_thread::sleep_for(milliseconds(5));
      }
      if (ctx->IsCancelled()) seen_->Update([&] { ++seen_->cancelled; });
      return {grpc::StatusCode::ABORTED, "waited"};
    }
    return {grpc::StatusCode::INVALID_ARGUMENT, "unknown backend name " + req->name()};
  }

 private:
  Seen* seen_;
};

// Front-end options, from the request name's prefixes.
struct Plan {
  ringrpc::PropagationOptions options;
  bool later_deadline = false;  // set_deadline(now + 1 h) after FromServerContext
  HelloRequest backend_request;
};

Plan PlanFor(const HelloRequest& req) {
  Plan p;
  std::string name = req.name();
  for (;;) {
    if (name.rfind("nocancel:", 0) == 0) {
      p.options.disable_cancellation_propagation();
      name = name.substr(9);
    } else if (name.rfind("nodeadline:", 0) == 0) {
      p.options.disable_deadline_propagation();
      name = name.substr(11);
    } else if (name.rfind("later:", 0) == 0) {
      p.later_deadline = true;
      name = name.substr(6);
    } else {
      break;
    }
  }
  p.backend_request.set_name(name);
  return p;
}

class SyncFront final : public helloworld::Greeter::Service {
 public:
  SyncFront(std::shared_ptr<ringrpc::Channel> backend, Seen* seen)
      : stub_(helloworld::ring::Greeter::NewStub(backend)), seen_(seen) {}
  grpc::Status SayHello(grpc::ServerContext* server_ctx, const HelloRequest* req,
                        HelloReply* reply) override {
    Plan plan = PlanFor(*req);
    std::unique_ptr<ringrpc::ClientContext> ctx =
        ringrpc::ClientContext::FromServerContext(*server_ctx, plan.options);
    if (plan.later_deadline) ctx->set_deadline(system_clock::now() + std::chrono::hours(1));
    ringrpc::Status s = stub_->SayHello(ctx.get(), plan.backend_request, reply);
    seen_->Update([&] { seen_->front_status = s.error_code(); });
    return ringrpc::ToGrpcStatus(s);
  }

 private:
  std::unique_ptr<helloworld::ring::Greeter::Stub> stub_;
  Seen* seen_;
};

class CallbackFront final : public helloworld::Greeter::CallbackService {
 public:
  CallbackFront(std::shared_ptr<ringrpc::Channel> backend, Seen* seen)
      : stub_(helloworld::ring::Greeter::NewStub(backend)), seen_(seen) {}
  grpc::ServerUnaryReactor* SayHello(grpc::CallbackServerContext* server_ctx,
                                     const HelloRequest* req, HelloReply* reply) override {
    grpc::ServerUnaryReactor* reactor = server_ctx->DefaultReactor();
    struct Call {
      Plan plan;
      std::unique_ptr<ringrpc::ClientContext> ctx;
    };
    auto call = std::make_shared<Call>();
    call->plan = PlanFor(*req);
    call->ctx = ringrpc::ClientContext::FromCallbackServerContext(*server_ctx, call->plan.options);
    if (call->plan.later_deadline) {
      call->ctx->set_deadline(system_clock::now() + std::chrono::hours(1));
    }
    stub_->async()->SayHello(call->ctx.get(), &call->plan.backend_request, reply,
                             [this, call, reactor](ringrpc::Status s) {
                               seen_->Update([&] { seen_->front_status = s.error_code(); });
                               // The ringrpc context goes before the server call ends.
                               call->ctx.reset();
                               reactor->Finish(ringrpc::ToGrpcStatus(s));
                             });
    return reactor;
  }

 private:
  std::unique_ptr<helloworld::ring::Greeter::Stub> stub_;
  Seen* seen_;
};

std::unique_ptr<grpc::Server> Start(grpc::Service* service, int* port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), port);
  builder.RegisterService(service);
  return builder.BuildAndStart();
}

class MidTier : public ::testing::TestWithParam<bool> {  // true: callback front
 protected:
  void SetUp() override {
    int backend_port = 0, front_port = 0;
    backend_server_ = Start(&backend_, &backend_port);
    ASSERT_NE(backend_server_, nullptr);
    auto to_backend = ringrpc::CreateChannel("127.0.0.1:" + std::to_string(backend_port),
                                             ringrpc::InsecureChannelCredentials());
    if (GetParam()) {
      front_ = std::make_unique<CallbackFront>(to_backend, &seen_);
    } else {
      front_ = std::make_unique<SyncFront>(to_backend, &seen_);
    }
    front_server_ = Start(front_.get(), &front_port);
    ASSERT_NE(front_server_, nullptr);
    client_ = helloworld::Greeter::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(front_port), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    seen_.Update([&] { seen_.released = true; });
    if (front_server_) front_server_->Shutdown(system_clock::now() + std::chrono::seconds(5));
    if (backend_server_) backend_server_->Shutdown(system_clock::now() + std::chrono::seconds(5));
  }

  grpc::Status Call(const std::string& name, grpc::ClientContext* ctx, HelloReply* reply) {
    HelloRequest req;
    req.set_name(name);
    return client_->SayHello(ctx, req, reply);
  }

  // The backend's deadline for a call with deadline `d`, or "none".
  std::string BackendDeadline(const std::string& name, system_clock::time_point d) {
    grpc::ClientContext ctx;
    ctx.set_deadline(d);
    HelloReply reply;
    grpc::Status s = Call(name, &ctx, &reply);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return reply.message();
  }

  // Starts a "wait" call through the front and returns once the backend
  // holds it.
  std::future<grpc::Status> StartWait(const std::string& name, grpc::ClientContext* ctx) {
    const int before = [&] {
      std::lock_guard<std::mutex> lock(seen_.mu);
      return seen_.waiting;
    }();
    auto done = std::async(std::launch::async, [this, name, ctx] {
      HelloReply reply;
      return Call(name, ctx, &reply);
    });
    EXPECT_TRUE(seen_.WaitFor([&] { return seen_.waiting > before; }));
    return done;
  }

  Seen seen_;
  Backend backend_{&seen_};
  std::unique_ptr<grpc::Service> front_;
  std::unique_ptr<grpc::Server> backend_server_, front_server_;
  std::unique_ptr<helloworld::Greeter::Stub> client_;
};

TEST_P(MidTier, TheClientsDeadlineReachesTheBackend) {
  const system_clock::time_point d = system_clock::now() + std::chrono::seconds(20);
  const std::string got = BackendDeadline("deadline", d);
  ASSERT_NE(got, "none");
  // The same instant, give or take the hops' transit and grpc-timeout's
  // rounding: well inside a second of it, not the 20 s it is away.
  EXPECT_NEAR(std::stoll(got), MillisSinceEpoch(d), 1000);
}

TEST_P(MidTier, ALaterDeadlineSetAfterwardsIsCappedAtTheServerCalls) {
  const system_clock::time_point d = system_clock::now() + std::chrono::seconds(20);
  const std::string got = BackendDeadline("later:deadline", d);
  ASSERT_NE(got, "none");
  EXPECT_NEAR(std::stoll(got), MillisSinceEpoch(d), 1000);  // not an hour away
}

TEST_P(MidTier, WithoutDeadlinePropagationTheBackendHasNone) {
  EXPECT_EQ(BackendDeadline("nodeadline:deadline", system_clock::now() + std::chrono::seconds(20)),
            "none");
}

TEST_P(MidTier, TheClientsCancelReachesTheBackend) {
  grpc::ClientContext ctx;  // no deadline: only the cancel ends it
  std::future<grpc::Status> done = StartWait("wait", &ctx);
  ctx.TryCancel();
  EXPECT_EQ(done.get().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(seen_.WaitFor([&] { return seen_.cancelled == 1 && seen_.front_status; }));
  EXPECT_EQ(seen_.front_status, ringrpc::StatusCode::CANCELLED);
}

TEST_P(MidTier, AnExpiredDeadlineEndsTheBackendCall) {
  grpc::ClientContext ctx;
  ctx.set_deadline(system_clock::now() + milliseconds(300));
  std::future<grpc::Status> done = StartWait("wait", &ctx);
  EXPECT_EQ(done.get().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_TRUE(seen_.WaitFor([&] { return seen_.cancelled == 1 && seen_.front_status; }));
  // The ringrpc call's own deadline or the watch on the server call ended it.
  EXPECT_TRUE(seen_.front_status == ringrpc::StatusCode::DEADLINE_EXCEEDED ||
              seen_.front_status == ringrpc::StatusCode::CANCELLED)
      << static_cast<int>(*seen_.front_status);
}

TEST_P(MidTier, WithoutCancellationPropagationTheBackendCallGoesOn) {
  grpc::ClientContext ctx;
  std::future<grpc::Status> done = StartWait("nocancel:wait", &ctx);
  ctx.TryCancel();
  EXPECT_EQ(done.get().error_code(), grpc::StatusCode::CANCELLED);
  // The watch would have cancelled it within about 10 ms; give it far more.
  std::this_thread::sleep_for(milliseconds(300));
  {
    std::lock_guard<std::mutex> lock(seen_.mu);
    EXPECT_EQ(seen_.cancelled, 0);
    EXPECT_FALSE(seen_.front_status.has_value());
  }
  seen_.Update([&] { seen_.released = true; });
  EXPECT_TRUE(seen_.WaitFor([&] { return seen_.front_status.has_value(); }));
  EXPECT_EQ(seen_.front_status, ringrpc::StatusCode::OK);
}

TEST_P(MidTier, ABackendsStatusComesBackWhole) {
  grpc::ClientContext ctx;
  HelloReply reply;
  grpc::Status s = Call("rich", &ctx, &reply);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "no such thing");
  EXPECT_EQ(s.error_details(), std::string("\x0a\x03"
                                           "abc",
                                           5));
}

TEST_P(MidTier, ManyConcurrentCallsEachEndWithTheirOwnOutcome) {
  // Half are cancelled by their client, half answer: a watch must cancel
  // exactly its own call.
  constexpr int kCalls = 16;
  std::vector<std::unique_ptr<grpc::ClientContext>> ctxs;
  std::vector<std::future<grpc::Status>> waits;
  for (int i = 0; i < kCalls; ++i) {
    ctxs.push_back(std::make_unique<grpc::ClientContext>());
    ctxs.back()->set_deadline(system_clock::now() + std::chrono::seconds(20));
    waits.push_back(StartWait("wait", ctxs.back().get()));
  }
  for (int i = 0; i < kCalls; i += 2) ctxs[i]->TryCancel();
  for (int i = 0; i < kCalls; i += 2) {
    EXPECT_EQ(waits[i].get().error_code(), grpc::StatusCode::CANCELLED);
  }
  EXPECT_TRUE(seen_.WaitFor([&] { return seen_.cancelled == kCalls / 2; }));
  seen_.Update([&] { seen_.released = true; });
  for (int i = 1; i < kCalls; i += 2) EXPECT_TRUE(waits[i].get().ok()) << i;
  std::lock_guard<std::mutex> lock(seen_.mu);
  EXPECT_EQ(seen_.cancelled, kCalls / 2);
}

INSTANTIATE_TEST_SUITE_P(ServerApis, MidTier, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "CallbackServer" : "SyncServer";
                         });

TEST(StatusConversion, RoundTripsCodeMessageAndDetails) {
  const ringrpc::Status r(ringrpc::StatusCode::RESOURCE_EXHAUSTED, "slow down", "\x01\x02");
  const grpc::Status g = ringrpc::ToGrpcStatus(r);
  EXPECT_EQ(g.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(g.error_message(), "slow down");
  EXPECT_EQ(g.error_details(), "\x01\x02");
  const ringrpc::Status back = ringrpc::FromGrpcStatus(g);
  EXPECT_EQ(back.error_code(), ringrpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(back.error_message(), "slow down");
  EXPECT_EQ(back.error_details(), "\x01\x02");
  EXPECT_TRUE(ringrpc::ToGrpcStatus(ringrpc::Status()).ok());
  EXPECT_TRUE(ringrpc::FromGrpcStatus(grpc::Status::OK).ok());
  // Every code keeps its number.
  for (int c = 1; c <= 16; ++c) {
    EXPECT_EQ(static_cast<int>(
                  ringrpc::ToGrpcStatus(ringrpc::Status(static_cast<ringrpc::StatusCode>(c), "x"))
                      .error_code()),
              c);
  }
}

}  // namespace
