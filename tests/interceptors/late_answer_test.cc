// Interceptors that answer later, as grpc++ allows: Proceed() or Fail()
// called after Intercept returned, from another thread (a token fetched
// off the call's thread). Against the grpc++ test server, in every call
// form: what the late interceptor changed goes out / reaches the caller,
// a late Fail ends the call with its status, and an answer that never
// comes ends the call at its deadline or at TryCancel; answering such a
// batch afterwards (the call, its stub and channel gone) is safe.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ringrpc/client/callback_reactor.h"
#include "ringrpc/client/completion_queue.h"
#include "ringrpc/client/interceptor.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/hook_log.h"
#include "tests/testing/server_process.h"

namespace ringrpc {
namespace {

using experimental::ClientInterceptorFactoryInterface;
using experimental::ClientRpcInfo;
using experimental::InterceptionHookPoints;
using experimental::Interceptor;
using experimental::InterceptorBatchMethods;
using test::EchoRequest;
using test::EchoResponse;
using test::ring::TestService;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using Hook = InterceptionHookPoints;
using Log = testing::HookLog;

// A thread that runs jobs in order, a little later: where the
// interceptors answer from.
class Answerer {
 public:
  Answerer() : thread_([this] { Work(); }) {}
  ~Answerer() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Later(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_all();
  }

 private:
  void Work() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      job();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::thread thread_;
};

// Answers every hook point from the Answerer: adds a token to the
// request metadata, a '?' to each request's payload and a '!' to each
// response's (the last two through the typed views), then proceeds.
class LateInterceptor final : public Interceptor {
 public:
  LateInterceptor(Answerer* answerer, Log* log) : answerer_(answerer), log_(log) {}
  void Intercept(InterceptorBatchMethods* m) override {
    answerer_->Later([m, log = log_] {
      log->Add(testing::HookName(m));
      if (m->QueryInterceptionHookPoint(Hook::PRE_SEND_INITIAL_METADATA)) {
        m->GetSendInitialMetadata()->emplace("x-echo-token", "fetched");
      }
      if (m->QueryInterceptionHookPoint(Hook::PRE_SEND_MESSAGE)) {
        EchoRequest r = *static_cast<const EchoRequest*>(m->GetSendMessage());
        r.set_payload(r.payload() + "?");
        m->ModifySendMessage(&r);
      }
      if (m->QueryInterceptionHookPoint(Hook::POST_RECV_MESSAGE)) {
        auto* r = static_cast<EchoResponse*>(m->GetRecvMessage());
        r->set_payload(r->payload() + "!");
      }
      m->Proceed();
    });
  }

 private:
  Answerer* answerer_;
  Log* log_;
};

// Does `act` at the hook points in `hooks` (it must answer, at once or
// later); proceeds at once at the others.
class Scripted final : public Interceptor {
 public:
  using Act = std::function<void(InterceptorBatchMethods*)>;
  Scripted(std::vector<Hook> hooks, Act act, std::atomic<int>* alive)
      : hooks_(std::move(hooks)), act_(std::move(act)), alive_(alive) {
    if (alive_ != nullptr) alive_->fetch_add(1);
  }
  ~Scripted() override {
    if (alive_ != nullptr) alive_->fetch_sub(1);
  }
  void Intercept(InterceptorBatchMethods* m) override {
    for (Hook h : hooks_) {
      if (m->QueryInterceptionHookPoint(h)) {
        act_(m);
        return;
      }
    }
    m->Proceed();
  }

 private:
  std::vector<Hook> hooks_;
  Act act_;
  std::atomic<int>* alive_;
};

template <typename Make>
class Factory final : public ClientInterceptorFactoryInterface {
 public:
  explicit Factory(Make make) : make_(std::move(make)) {}
  Interceptor* CreateClientInterceptor(ClientRpcInfo*) override { return make_(); }

 private:
  Make make_;
};

class LateAnswerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto s = testing::ServerProcess::Start();
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = s->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  template <typename Make>
  static std::unique_ptr<TestService::Stub> Stub(Make make) {
    std::vector<std::unique_ptr<ClientInterceptorFactoryInterface>> v;
    v.push_back(std::make_unique<Factory<Make>>(std::move(make)));
    return TestService::NewStub(experimental::CreateCustomChannelWithInterceptors(
        server_->address(), InsecureChannelCredentials(), ChannelArguments(), std::move(v)));
  }
  std::unique_ptr<TestService::Stub> LateStub() {
    return Stub([this] { return new LateInterceptor(&answerer_, &log_); });
  }
  static std::chrono::system_clock::time_point In(int ms) {
    return std::chrono::system_clock::now() + std::chrono::milliseconds(ms);
  }

  static testing::ServerProcess* server_;
  Answerer answerer_;
  Log log_;
};
testing::ServerProcess* LateAnswerTest::server_ = nullptr;

const std::vector<std::string> kUnaryHooks = {"send_md", "send_msg", "close",
                                              "recv_md", "recv_msg", "status"};

TEST_F(LateAnswerTest, EveryHookAnsweredFromAnotherThreadInEachUnaryForm) {
  auto stub = LateStub();
  auto check = [&](ClientContext& ctx, const Status& s, const EchoResponse& resp) {
    ASSERT_TRUE(s.ok()) << s.error_message();
    // The request went out as the late interceptor left it, and the
    // response reached the caller as it left that.
    EXPECT_EQ(resp.payload(), "hi?!");
    auto token = ctx.GetServerInitialMetadata().find("x-echo-token");
    ASSERT_NE(token, ctx.GetServerInitialMetadata().end());
    EXPECT_EQ(token->second, "fetched");
    EXPECT_THAT(log_.Take(), ElementsAreArray(kUnaryHooks));
  };
  EchoRequest req;
  req.set_payload("hi");
  {  // blocking
    ClientContext ctx;
    EchoResponse resp;
    Status s = stub->Unary(&ctx, req, &resp);
    check(ctx, s, resp);
  }
  {  // callback
    ClientContext ctx;
    EchoResponse resp;
    std::promise<Status> done;
    stub->async()->Unary(&ctx, &req, &resp, [&](Status s) { done.set_value(s); });
    Status s = done.get_future().get();
    check(ctx, s, resp);
  }
  {  // CompletionQueue
    CompletionQueue cq;
    ClientContext ctx;
    EchoResponse resp;
    Status s(StatusCode::UNKNOWN, "not set");
    auto rpc = stub->PrepareAsyncUnary(&ctx, req, &cq);
    rpc->StartCall();
    rpc->Finish(&resp, &s, reinterpret_cast<void*>(1));
    void* tag = nullptr;
    bool ok = false;
    ASSERT_EQ(cq.AsyncNext(&tag, &ok, In(20000)), CompletionQueue::GOT_EVENT);
    EXPECT_EQ(tag, reinterpret_cast<void*>(1));
    EXPECT_TRUE(ok);
    check(ctx, s, resp);
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
  }
}

TEST_F(LateAnswerTest, EveryHookAnsweredFromAnotherThreadOnStreams) {
  auto stub = LateStub();
  {  // server stream of 3
    ClientContext ctx;
    EchoRequest req;
    req.set_count(3);
    auto reader = stub->ServerStream(&ctx, req);
    EchoResponse r;
    int n = 0;
    while (reader->Read(&r)) {
      EXPECT_THAT(r.payload(), HasSubstr("!"));
      ++n;
    }
    Status s = reader->Finish();
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(n, 3);
    EXPECT_THAT(log_.Take(), ElementsAreArray({"send_md", "send_msg", "close", "recv_md",
                                               "recv_msg", "recv_msg", "recv_msg", "status"}));
  }
  {  // bidi: two messages each way
    ClientContext ctx;
    auto stream = stub->Bidi(&ctx);
    std::vector<std::string> got;
    for (const char* p : {"a", "b"}) {
      EchoRequest req;
      req.set_payload(p);
      ASSERT_TRUE(stream->Write(req));
      EchoResponse r;
      ASSERT_TRUE(stream->Read(&r));
      got.push_back(r.payload());
    }
    ASSERT_TRUE(stream->WritesDone());
    EchoResponse extra;
    EXPECT_FALSE(stream->Read(&extra));
    Status s = stream->Finish();
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_THAT(got, ElementsAreArray({"a?!", "b?!"}));
    auto token = ctx.GetServerInitialMetadata().find("x-echo-token");
    ASSERT_NE(token, ctx.GetServerInitialMetadata().end());
    EXPECT_EQ(token->second, "fetched");
    log_.Take();
  }
  {  // client stream of 2
    ClientContext ctx;
    EchoResponse resp;
    auto writer = stub->ClientStream(&ctx, &resp);
    EchoRequest req;
    req.set_payload("xy");
    ASSERT_TRUE(writer->Write(req));
    ASSERT_TRUE(writer->Write(req));
    ASSERT_TRUE(writer->WritesDone());
    Status s = writer->Finish();
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(resp.count(), 2);
    // Each request grew by its '?' before it was sent.
    EXPECT_EQ(resp.total_bytes(), 6);
    EXPECT_THAT(log_.Take(), ElementsAreArray({"send_md", "send_msg", "send_msg", "close",
                                               "recv_md", "recv_msg", "status"}));
  }
}

TEST_F(LateAnswerTest, ALateFailEndsTheCallWithItsStatus) {
  for (Hook at :
       {Hook::PRE_SEND_INITIAL_METADATA, Hook::PRE_SEND_MESSAGE, Hook::POST_RECV_MESSAGE}) {
    auto stub = Stub([&, at] {
      return new Scripted(
          {at},
          [this](InterceptorBatchMethods* m) {
            answerer_.Later(
                [m] { m->Fail(Status(StatusCode::PERMISSION_DENIED, "no token for you")); });
          },
          nullptr);
    });
    ClientContext ctx;
    EchoRequest req;
    EchoResponse resp;
    Status s = stub->Unary(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), StatusCode::PERMISSION_DENIED) << static_cast<int>(at);
    EXPECT_EQ(s.error_message(), "no token for you");
  }
}

TEST_F(LateAnswerTest, AnAnswerThatNeverComesEndsTheCallAtItsDeadline) {
  std::atomic<int> alive{0};
  std::promise<InterceptorBatchMethods*> kept;
  {
    auto stub = Stub([&] {
      return new Scripted(
          {Hook::PRE_SEND_INITIAL_METADATA}, [&](InterceptorBatchMethods* m) { kept.set_value(m); },
          &alive);
    });
    ClientContext ctx;
    ctx.set_deadline(In(300));
    EchoRequest req;
    EchoResponse resp;
    Status s = stub->Unary(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED);
    EXPECT_THAT(s.error_message(), HasSubstr("interceptor 0 had answered at "
                                             "PRE_SEND_INITIAL_METADATA"));
  }
  // The call, its stub and its channel are gone; the batch is not, and
  // neither is the interceptor that will answer it.
  InterceptorBatchMethods* m = kept.get_future().get();
  EXPECT_EQ(alive.load(), 1);
  m->GetSendInitialMetadata()->emplace("x-late", "1");
  m->Proceed();
  for (int i = 0; i < 1000 && alive.load() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(alive.load(), 0);  // let go once answered
}

TEST_F(LateAnswerTest, TryCancelEndsAWaitForALateAnswerBeforeAndAfterTheCallOpened) {
  for (Hook at : {Hook::PRE_SEND_INITIAL_METADATA, Hook::POST_RECV_MESSAGE}) {
    std::atomic<int> alive{0};
    std::mutex mu;
    std::vector<InterceptorBatchMethods*> kept;
    std::promise<void> waiting;
    {
      auto stub = Stub([&, at] {
        return new Scripted(
            {at},
            [&](InterceptorBatchMethods* m) {
              std::lock_guard<std::mutex> lock(mu);
              kept.push_back(m);
              if (kept.size() == 1) waiting.set_value();
            },
            &alive);
      });
      ClientContext ctx;  // no deadline
      EchoRequest req;
      req.set_count(2);
      std::thread cancel([&] {
        waiting.get_future().wait();
        ctx.TryCancel();
      });
      // (Opening waits for the first interceptor's answer in one case.)
      auto reader = stub->ServerStream(&ctx, req);
      EchoResponse r;
      EXPECT_FALSE(reader->Read(&r));
      Status s = reader->Finish();
      cancel.join();
      EXPECT_EQ(s.error_code(), StatusCode::CANCELLED) << static_cast<int>(at);
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      for (InterceptorBatchMethods* m : kept) m->Proceed();
      kept.clear();
    }
    for (int i = 0; i < 1000 && alive.load() != 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(alive.load(), 0);  // the call's interceptors, let go once answered
  }
}

// Many callers at once, each call's hooks answered late from two threads,
// some calls cancelled or cut off by their deadline while they wait: every
// call ends exactly once, with OK, CANCELLED or DEADLINE_EXCEEDED, and the
// ones that ended OK carry what the interceptor changed.
TEST_F(LateAnswerTest, ManyCallsAnsweredLateWhileSomeAreCancelledOrTimeOut) {
  Answerer second;
  std::atomic<int> turn{0};
  auto stub = Stub([&] {
    Answerer* a = turn.fetch_add(1) % 2 == 0 ? &answerer_ : &second;
    return new LateInterceptor(a, &log_);
  });
  constexpr int kThreads = 4, kCalls = 40;
  std::atomic<int> ok{0}, cancelled{0}, timed_out{0}, other{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < kThreads; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        ClientContext ctx;
        if (i % 5 == 1) ctx.set_deadline(In(1 + i % 3));
        EchoRequest req;
        req.set_payload("p");
        EchoResponse resp;
        std::promise<Status> done;
        std::atomic<int> ends{0};
        stub->async()->Unary(&ctx, &req, &resp, [&](Status s) {
          ends.fetch_add(1);
          done.set_value(std::move(s));
        });
        if (i % 5 == 3) {
          std::this_thread::sleep_for(std::chrono::microseconds(500 * (t + 1)));
          ctx.TryCancel();
        }
        Status s = done.get_future().get();
        EXPECT_EQ(ends.load(), 1);
        if (s.ok()) {
          EXPECT_EQ(resp.payload(), "p?!");
          ok.fetch_add(1);
        } else if (s.error_code() == StatusCode::CANCELLED) {
          cancelled.fetch_add(1);
        } else if (s.error_code() == StatusCode::DEADLINE_EXCEEDED) {
          timed_out.fetch_add(1);
        } else {
          ADD_FAILURE() << s.error_message();
          other.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& c : callers) c.join();
  EXPECT_EQ(ok + cancelled + timed_out, kThreads * kCalls);
  EXPECT_EQ(other.load(), 0);
  // The calls left alone (three in five) all succeed.
  EXPECT_GE(ok.load(), kThreads * kCalls * 3 / 5);
  log_.Take();
}

}  // namespace
}  // namespace ringrpc
