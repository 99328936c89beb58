// The CompletionQueue form against a real grpc++ server: every method kind,
// every tag path (ok true and false), deadlines, TryCancel, metadata,
// Shutdown with calls pending, a queue destroyed under calls, a channel
// dropped under calls, and several threads draining one queue.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/channel.h"
#include "ringrpc/client/completion_queue.h"
#include "ringrpc/client/interceptor.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/server_process.h"

namespace ringrpc {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::system_clock;
using test::EchoRequest;
using test::EchoResponse;
using test::ring::TestService;

void* Tag(intptr_t n) { return reinterpret_cast<void*>(n); }

class CqTest : public ::testing::Test {
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
  void SetUp() override {
    channel_ = CreateChannel(server_->address(), InsecureChannelCredentials());
    stub_ = TestService::NewStub(channel_);
  }

  // The next tag, within 20 s (a hang fails the test instead of the run).
  static std::pair<void*, bool> NextTag(CompletionQueue* cq) {
    void* tag = nullptr;
    bool ok = false;
    EXPECT_EQ(cq->AsyncNext(&tag, &ok, system_clock::now() + seconds(20)),
              CompletionQueue::GOT_EVENT);
    return {tag, ok};
  }

  // No tag within 50 ms.
  static bool NothingMore(CompletionQueue* cq) {
    void* tag;
    bool ok;
    return cq->AsyncNext(&tag, &ok, system_clock::now() + milliseconds(50)) ==
           CompletionQueue::TIMEOUT;
  }

  static testing::ServerProcess* server_;
  std::shared_ptr<Channel> channel_;
  std::unique_ptr<TestService::Stub> stub_;
  CompletionQueue cq_;
};

testing::ServerProcess* CqTest::server_ = nullptr;

TEST_F(CqTest, UnaryPreparedThenStartedDeliversFinishOnceWithTheAnswer) {
  ClientContext ctx;
  ctx.AddMetadata("x-echo-color", "blue");
  ctx.AddMetadata("x-trailer-size", "7");
  EchoRequest req;
  req.set_payload("hello");
  EchoResponse resp;
  Status status(StatusCode::UNKNOWN, "not set");
  auto rpc = stub_->PrepareAsyncUnary(&ctx, req, &cq_);
  rpc->StartCall();
  rpc->Finish(&resp, &status, Tag(1));
  auto [tag, ok] = NextTag(&cq_);
  EXPECT_EQ(tag, Tag(1));
  EXPECT_TRUE(ok);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(resp.payload(), "hello");
  EXPECT_EQ(ctx.GetServerInitialMetadata().find("x-echo-color")->second, "blue");
  EXPECT_EQ(ctx.GetServerTrailingMetadata().find("x-trailer-size")->second, "7");
  EXPECT_TRUE(NothingMore(&cq_));  // its tag came out once
}

TEST_F(CqTest, AsyncUnaryStartsAtOnceAndReportsAServerError) {
  ClientContext ctx;
  EchoRequest req;
  req.set_status_code(static_cast<int>(StatusCode::NOT_FOUND));
  req.set_status_message("no such thing");
  EchoResponse resp;
  Status status;
  auto rpc = stub_->AsyncUnary(&ctx, req, &cq_);
  rpc->Finish(&resp, &status, Tag(2));
  auto [tag, ok] = NextTag(&cq_);
  EXPECT_EQ(tag, Tag(2));
  EXPECT_TRUE(ok);  // Finish's tag is always ok; the outcome is the status
  EXPECT_EQ(status.error_code(), StatusCode::NOT_FOUND);
  EXPECT_EQ(status.error_message(), "no such thing");
}

TEST_F(CqTest, UnaryDeadlineAndTryCancel) {
  ClientContext late, cancelled;
  late.set_deadline(system_clock::now() + milliseconds(100));
  EchoRequest slow;
  slow.set_sleep_ms(5000);
  EchoResponse r1, r2;
  Status s1, s2;
  auto a = stub_->AsyncUnary(&late, slow, &cq_);
  a->Finish(&r1, &s1, Tag(1));
  auto b = stub_->AsyncUnary(&cancelled, slow, &cq_);
  b->Finish(&r2, &s2, Tag(2));
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(50));
    cancelled.TryCancel();
  });
  std::set<void*> seen;
  for (int i = 0; i < 2; ++i) {
    auto [tag, ok] = NextTag(&cq_);
    EXPECT_TRUE(ok);
    seen.insert(tag);
  }
  canceller.join();
  EXPECT_EQ(seen, (std::set<void*>{Tag(1), Tag(2)}));
  EXPECT_EQ(s1.error_code(), StatusCode::DEADLINE_EXCEEDED) << s1.error_message();
  EXPECT_EQ(s2.error_code(), StatusCode::CANCELLED) << s2.error_message();
}

TEST_F(CqTest, UnaryReadInitialMetadataComesBeforeFinish) {
  ClientContext ctx;
  ctx.AddMetadata("x-echo-k", "v");
  EchoRequest req;
  req.set_payload("p");
  EchoResponse resp;
  Status status;
  auto rpc = stub_->PrepareAsyncUnary(&ctx, req, &cq_);
  rpc->StartCall();
  rpc->ReadInitialMetadata(Tag(1));
  rpc->Finish(&resp, &status, Tag(2));
  auto [t1, ok1] = NextTag(&cq_);
  EXPECT_EQ(t1, Tag(1));
  EXPECT_TRUE(ok1);
  EXPECT_EQ(ctx.GetServerInitialMetadata().count("x-echo-k"), 1u);
  auto [t2, ok2] = NextTag(&cq_);
  EXPECT_EQ(t2, Tag(2));
  EXPECT_TRUE(status.ok());
  // A second Finish: its tag with ok false, the status untouched.
  Status untouched(StatusCode::ABORTED, "mine");
  rpc->Finish(&resp, &untouched, Tag(3));
  auto [t3, ok3] = NextTag(&cq_);
  EXPECT_EQ(t3, Tag(3));
  EXPECT_FALSE(ok3);
  EXPECT_EQ(untouched.error_code(), StatusCode::ABORTED);
}

TEST_F(CqTest, FinishAskedAfterTheCallEndedStillDelivers) {
  ClientContext ctx;
  EchoRequest req;
  req.set_payload("early");
  EchoResponse resp;
  Status status;
  auto rpc = stub_->AsyncUnary(&ctx, req, &cq_);
  std::this_thread::sleep_for(milliseconds(200));  // the answer is in by now (or not: either way)
  rpc->Finish(&resp, &status, Tag(4));
  auto [tag, ok] = NextTag(&cq_);
  EXPECT_EQ(tag, Tag(4));
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(resp.payload(), "early");
}

TEST_F(CqTest, ServerStreamReadsUntilOkFalseThenFinishes) {
  ClientContext ctx;
  ctx.AddMetadata("x-echo-s", "1");
  EchoRequest req;
  req.set_count(5);
  req.set_response_size(3);
  auto stream = stub_->AsyncServerStream(&ctx, req, &cq_, Tag(100));
  auto [start, start_ok] = NextTag(&cq_);
  EXPECT_EQ(start, Tag(100));
  EXPECT_TRUE(start_ok);
  stream->ReadInitialMetadata(Tag(101));
  auto [md, md_ok] = NextTag(&cq_);
  EXPECT_EQ(md, Tag(101));
  EXPECT_TRUE(md_ok);
  EXPECT_EQ(ctx.GetServerInitialMetadata().count("x-echo-s"), 1u);
  std::vector<int> counts;
  for (;;) {
    EchoResponse resp;
    stream->Read(&resp, Tag(102));
    auto [tag, ok] = NextTag(&cq_);
    EXPECT_EQ(tag, Tag(102));
    if (!ok) break;
    EXPECT_EQ(resp.payload(), "sss");
    counts.push_back(resp.count());
  }
  EXPECT_EQ(counts, (std::vector<int>{0, 1, 2, 3, 4}));
  Status status(StatusCode::UNKNOWN, "");
  stream->Finish(&status, Tag(103));
  auto [fin, fin_ok] = NextTag(&cq_);
  EXPECT_EQ(fin, Tag(103));
  EXPECT_TRUE(fin_ok);
  EXPECT_TRUE(status.ok()) << status.error_message();
  // A read on an ended call: its tag with ok false.
  EchoResponse after;
  stream->Read(&after, Tag(104));
  auto [late, late_ok] = NextTag(&cq_);
  EXPECT_EQ(late, Tag(104));
  EXPECT_FALSE(late_ok);
}

TEST_F(CqTest, ClientStreamWritesThenFinishGivesTheResponse) {
  ClientContext ctx;
  EchoResponse resp;
  auto stream = stub_->PrepareAsyncClientStream(&ctx, &resp, &cq_);
  stream->StartCall(Tag(1));
  EXPECT_EQ(NextTag(&cq_).first, Tag(1));
  for (int i = 0; i < 3; ++i) {
    EchoRequest req;
    req.set_payload(std::string(10, 'a'));
    stream->Write(req, Tag(10 + i));
    auto [tag, ok] = NextTag(&cq_);
    EXPECT_EQ(tag, Tag(10 + i));
    EXPECT_TRUE(ok);
  }
  stream->WritesDone(Tag(2));
  auto [wd, wd_ok] = NextTag(&cq_);
  EXPECT_EQ(wd, Tag(2));
  EXPECT_TRUE(wd_ok);
  Status status;
  stream->Finish(&status, Tag(3));
  auto [fin, fin_ok] = NextTag(&cq_);
  EXPECT_EQ(fin, Tag(3));
  EXPECT_TRUE(fin_ok);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(resp.count(), 3);
  EXPECT_EQ(resp.total_bytes(), 30);
}

TEST_F(CqTest, BidiPingPongWithWriteLast) {
  ClientContext ctx;
  auto stream = stub_->AsyncBidi(&ctx, &cq_, Tag(1));
  EXPECT_EQ(NextTag(&cq_), std::make_pair(Tag(1), true));
  for (int i = 0; i < 4; ++i) {
    EchoRequest req;
    req.set_payload("m" + std::to_string(i));
    if (i == 3) {
      stream->WriteLast(req, WriteOptions(), Tag(2));
    } else {
      stream->Write(req, Tag(2));
    }
    EXPECT_EQ(NextTag(&cq_), std::make_pair(Tag(2), true));
    EchoResponse resp;
    stream->Read(&resp, Tag(3));
    EXPECT_EQ(NextTag(&cq_), std::make_pair(Tag(3), true));
    EXPECT_EQ(resp.payload(), "m" + std::to_string(i));
  }
  EchoResponse end;
  stream->Read(&end, Tag(3));
  EXPECT_EQ(NextTag(&cq_), std::make_pair(Tag(3), false));
  Status status;
  stream->Finish(&status, Tag(4));
  EXPECT_EQ(NextTag(&cq_), std::make_pair(Tag(4), true));
  EXPECT_TRUE(status.ok()) << status.error_message();
  // A write after the end: ok false.
  EchoRequest more;
  stream->Write(more, Tag(5));
  EXPECT_EQ(NextTag(&cq_), std::make_pair(Tag(5), false));
}

TEST_F(CqTest, BidiCancelledMidStreamEndsEveryTag) {
  ClientContext ctx;
  auto stream = stub_->AsyncBidi(&ctx, &cq_, Tag(1));
  EXPECT_EQ(NextTag(&cq_).first, Tag(1));
  EchoResponse resp;
  stream->Read(&resp, Tag(2));  // nothing written: the server sends nothing
  ctx.TryCancel();
  EXPECT_EQ(NextTag(&cq_), std::make_pair(Tag(2), false));
  Status status;
  stream->Finish(&status, Tag(3));
  EXPECT_EQ(NextTag(&cq_), std::make_pair(Tag(3), true));
  EXPECT_EQ(status.error_code(), StatusCode::CANCELLED);
}

TEST_F(CqTest, StreamToAnUnreachableServerFailsItsTagsAndFinishSaysWhy) {
  auto dead = CreateChannel("127.0.0.1:1", InsecureChannelCredentials());
  auto stub = TestService::NewStub(dead);
  ClientContext ctx;
  EchoRequest req;
  auto stream = stub->AsyncServerStream(&ctx, req, &cq_, Tag(1));
  EXPECT_EQ(NextTag(&cq_).first, Tag(1));
  EchoResponse resp;
  stream->Read(&resp, Tag(2));
  EXPECT_EQ(NextTag(&cq_), std::make_pair(Tag(2), false));
  Status status;
  stream->Finish(&status, Tag(3));
  EXPECT_EQ(NextTag(&cq_), std::make_pair(Tag(3), true));
  EXPECT_EQ(status.error_code(), StatusCode::UNAVAILABLE) << status.error_message();
}

TEST_F(CqTest, ShutdownWithCallsPendingDeliversThemAllThenSaysShutdown) {
  constexpr int kCalls = 20;
  struct Call {
    ClientContext ctx;
    EchoRequest req;
    EchoResponse resp;
    Status status;
    std::unique_ptr<ClientAsyncResponseReader<EchoResponse>> rpc;
  };
  std::vector<std::unique_ptr<Call>> calls;
  for (int i = 0; i < kCalls; ++i) {
    auto c = std::make_unique<Call>();
    c->req.set_payload(std::to_string(i));
    c->req.set_sleep_ms(100);
    c->rpc = stub_->AsyncUnary(&c->ctx, c->req, &cq_);
    c->rpc->Finish(&c->resp, &c->status, c.get());
    calls.push_back(std::move(c));
  }
  cq_.Shutdown();
  // Work after Shutdown: refused, its tag delivered with ok false.
  Call refused;
  refused.status = Status(StatusCode::ABORTED, "untouched");
  refused.rpc = stub_->AsyncUnary(&refused.ctx, refused.req, &cq_);
  refused.rpc->Finish(&refused.resp, &refused.status, &refused);
  std::set<void*> ok_tags;
  bool refused_seen = false;
  void* tag;
  bool ok;
  while (cq_.Next(&tag, &ok)) {
    if (tag == &refused) {
      EXPECT_FALSE(ok);
      refused_seen = true;
      continue;
    }
    EXPECT_TRUE(ok);
    EXPECT_TRUE(ok_tags.insert(tag).second) << "a tag came out twice";
  }
  EXPECT_TRUE(refused_seen);
  EXPECT_EQ(refused.status.error_code(), StatusCode::ABORTED);
  ASSERT_EQ(ok_tags.size(), size_t{kCalls});
  for (auto& c : calls) {
    EXPECT_TRUE(c->status.ok()) << c->status.error_message();
    EXPECT_EQ(c->resp.payload(), c->req.payload());
  }
}

TEST_F(CqTest, TheChannelDroppedUnderACallStillDeliversItsTag) {
  ClientContext ctx;
  EchoRequest req;
  req.set_payload("kept");
  req.set_sleep_ms(100);
  EchoResponse resp;
  Status status;
  auto rpc = stub_->AsyncUnary(&ctx, req, &cq_);
  rpc->Finish(&resp, &status, Tag(9));
  stub_.reset();
  channel_.reset();  // the call keeps what it needs
  EXPECT_EQ(NextTag(&cq_), std::make_pair(Tag(9), true));
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(resp.payload(), "kept");
}

TEST_F(CqTest, AQueueDestroyedUnderCallsDropsTheirTags) {
  struct Call {
    ClientContext ctx;
    EchoRequest req;
    EchoResponse resp;
    Status status;
  };
  // The contexts and responses must outlive the calls, whose ends no one
  // will see: kept for the life of the process (reachable, not leaked).
  static auto* const kept = new std::vector<std::unique_ptr<Call>>();
  std::vector<std::unique_ptr<Call>>& calls = *kept;
  {
    CompletionQueue doomed;
    for (int i = 0; i < 10; ++i) {
      auto c = std::make_unique<Call>();
      c->req.set_sleep_ms(50);
      auto rpc = stub_->AsyncUnary(&c->ctx, c->req, &doomed);
      rpc->Finish(&c->resp, &c->status, c.get());
      calls.push_back(std::move(c));  // the reader goes now: allowed
    }
  }
  // The calls end on their own (their tags dropped); the channel carries on.
  ClientContext ctx;
  EchoRequest req;
  req.set_payload("after");
  EchoResponse resp;
  Status status;
  stub_->AsyncUnary(&ctx, req, &cq_)->Finish(&resp, &status, Tag(1));
  EXPECT_EQ(NextTag(&cq_), std::make_pair(Tag(1), true));
  EXPECT_EQ(resp.payload(), "after");
}

TEST_F(CqTest, NullQueueFinishSaysInvalidArgument) {
  ClientContext ctx;
  EchoRequest req;
  EchoResponse resp;
  Status status;
  auto rpc = stub_->AsyncUnary(&ctx, req, nullptr);
  rpc->Finish(&resp, &status, Tag(1));
  EXPECT_EQ(status.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("CompletionQueue"), std::string::npos);
}

// A server of its own, killed and started again on the same port: the
// channel's state changes are tags on the queue; a deadline with no change
// is a tag with ok false.
TEST(CqStateTest, NotifyOnStateChangeThroughAServerRestart) {
  auto server = testing::ServerProcess::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  auto channel = CreateChannel((*server)->address(), InsecureChannelCredentials());
  ASSERT_TRUE(channel->WaitForConnected(system_clock::now() + seconds(10)));
  ASSERT_EQ(channel->GetState(false), GRPC_CHANNEL_READY);
  CompletionQueue cq;
  void* tag;
  bool ok = true;
  // No change before the deadline: ok false, not before it.
  const auto start = std::chrono::steady_clock::now();
  channel->NotifyOnStateChange(GRPC_CHANNEL_READY, system_clock::now() + milliseconds(100), &cq,
                               Tag(1));
  ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_EQ(tag, Tag(1));
  EXPECT_FALSE(ok);
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(99));
  // A state other than `last` now: at once, ok true.
  channel->NotifyOnStateChange(GRPC_CHANNEL_IDLE, system_clock::now() + seconds(20), &cq, Tag(2));
  ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_EQ(tag, Tag(2));
  EXPECT_TRUE(ok);
  // The server goes: READY is left.
  channel->NotifyOnStateChange(GRPC_CHANNEL_READY, system_clock::now() + seconds(20), &cq, Tag(3));
  (*server)->Kill();
  ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_EQ(tag, Tag(3));
  EXPECT_TRUE(ok);
  ConnectivityState now = channel->GetState(false);
  EXPECT_NE(now, GRPC_CHANNEL_READY);
  // It comes back on the same port: watched until READY again.
  auto again = testing::ServerProcess::Start(absl::StrCat("127.0.0.1:", port));
  ASSERT_TRUE(again.ok()) << again.status();
  const auto give_up = system_clock::now() + seconds(30);
  while (now != GRPC_CHANNEL_READY && system_clock::now() < give_up) {
    channel->GetState(true);  // asks for a connection, as grpc++ users do
    channel->NotifyOnStateChange(now, give_up, &cq, Tag(4));
    ASSERT_TRUE(cq.Next(&tag, &ok));
    EXPECT_EQ(tag, Tag(4));
    now = channel->GetState(false);
  }
  EXPECT_EQ(now, GRPC_CHANNEL_READY);
  cq.Shutdown();
  EXPECT_FALSE(cq.Next(&tag, &ok));
}

// What the other forms have works the same in the CompletionQueue form:
// retries (a unary call and a stream's replay), an interceptor,
// compression both ways.
class CqFeaturesTest : public CqTest {
 protected:
  static std::shared_ptr<Channel> WithRetries() {
    ChannelArguments args;
    args.SetServiceConfigJSON(
        R"({"methodConfig": [{"name": [{"service": "ringrpc.test.TestService"}],
            "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.05s",
            "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]})");
    return CreateCustomChannel(server_->address(), InsecureChannelCredentials(), args);
  }
};

TEST_F(CqFeaturesTest, AUnaryCallIsRetriedAndItsTagComesOnce) {
  auto stub = TestService::NewStub(WithRetries());
  ClientContext ctx;
  ctx.AddMetadata("x-call-key", "cq-unary-retry");
  ctx.AddMetadata("x-fail-attempts", "2");
  EchoRequest req;
  req.set_payload("third time");
  EchoResponse resp;
  Status status;
  stub->AsyncUnary(&ctx, req, &cq_)->Finish(&resp, &status, Tag(1));
  EXPECT_EQ(NextTag(&cq_), std::make_pair(Tag(1), true));
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(resp.payload(), "third time");
  EXPECT_EQ(ctx.GetServerInitialMetadata().find("x-attempt")->second, "2");
  EXPECT_TRUE(NothingMore(&cq_));  // its tag came out once
}

TEST_F(CqFeaturesTest, AStreamIsReplayedOnARetry) {
  auto stub = TestService::NewStub(WithRetries());
  ClientContext ctx;
  ctx.AddMetadata("x-call-key", "cq-stream-retry");
  ctx.AddMetadata("x-fail-attempts", "1");
  EchoResponse resp;
  auto stream = stub->AsyncClientStream(&ctx, &resp, &cq_, Tag(1));
  EXPECT_EQ(NextTag(&cq_).first, Tag(1));
  for (int i = 0; i < 3; ++i) {
    EchoRequest req;
    req.set_payload("abcd");
    stream->Write(req, Tag(2));
    EXPECT_EQ(NextTag(&cq_), std::make_pair(Tag(2), true));
  }
  stream->WritesDone(Tag(3));
  EXPECT_EQ(NextTag(&cq_), std::make_pair(Tag(3), true));
  Status status;
  stream->Finish(&status, Tag(4));
  EXPECT_EQ(NextTag(&cq_), std::make_pair(Tag(4), true));
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(resp.count(), 3);  // the second attempt got every message again
  EXPECT_EQ(ctx.GetServerInitialMetadata().find("x-attempt")->second, "1");
}

class EchoHeaderInterceptor final : public experimental::Interceptor {
 public:
  void Intercept(experimental::InterceptorBatchMethods* m) override {
    if (m->QueryInterceptionHookPoint(
            experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      m->GetSendInitialMetadata()->emplace("x-echo-intercepted", "yes");
    }
    m->Proceed();
  }
};
class EchoHeaderFactory final : public experimental::ClientInterceptorFactoryInterface {
 public:
  experimental::Interceptor* CreateClientInterceptor(experimental::ClientRpcInfo*) override {
    return new EchoHeaderInterceptor();
  }
};

TEST_F(CqFeaturesTest, InterceptorsAndCompressionApply) {
  std::vector<std::unique_ptr<experimental::ClientInterceptorFactoryInterface>> factories;
  factories.push_back(std::make_unique<EchoHeaderFactory>());
  auto stub = TestService::NewStub(experimental::CreateCustomChannelWithInterceptors(
      server_->address(), InsecureChannelCredentials(), ChannelArguments(), std::move(factories)));
  ClientContext ctx;
  ctx.set_compression_algorithm(GRPC_COMPRESS_GZIP);
  ctx.AddMetadata("x-compress-response", "gzip");
  EchoRequest req;
  req.set_payload(std::string(4096, 'z'));
  EchoResponse resp;
  Status status;
  auto rpc = stub->PrepareAsyncUnary(&ctx, req, &cq_);
  rpc->StartCall();
  rpc->Finish(&resp, &status, Tag(1));
  EXPECT_EQ(NextTag(&cq_), std::make_pair(Tag(1), true));
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(resp.payload(), std::string(4096, 'z'));
  EXPECT_EQ(ctx.GetServerInitialMetadata().count("x-echo-intercepted"), 1u);
  EXPECT_EQ(ctx.response_compression_algorithm(), GRPC_COMPRESS_GZIP);
}

// Four threads on one queue, 2,000 calls with up to 64 in flight, an alarm
// among them: every tag once, every answer its own.
TEST_F(CqTest, SeveralThreadsDrainOneQueue) {
  constexpr int kCalls = 2000;
  struct Call {
    ClientContext ctx;
    EchoRequest req;
    EchoResponse resp;
    Status status;
    std::unique_ptr<ClientAsyncResponseReader<EchoResponse>> rpc;
    std::atomic<int> delivered{0};
  };
  std::vector<std::unique_ptr<Call>> calls(kCalls);
  std::atomic<int> in_flight{0}, done{0}, bad{0};
  Alarm alarm;
  std::atomic<bool> alarm_seen{false};
  alarm.Set(&cq_, system_clock::now() + milliseconds(20), &alarm);
  std::vector<std::thread> drainers;
  for (int d = 0; d < 4; ++d) {
    drainers.emplace_back([&] {
      void* tag;
      bool ok;
      while (cq_.Next(&tag, &ok)) {
        if (tag == &alarm) {
          alarm_seen = ok;
          continue;
        }
        Call* c = static_cast<Call*>(tag);
        if (!ok || c->delivered.fetch_add(1) != 0 || !c->status.ok() ||
            c->resp.payload() != c->req.payload()) {
          bad.fetch_add(1);
        }
        c->rpc.reset();  // the reader goes on a draining thread, as users do
        in_flight.fetch_sub(1);
        done.fetch_add(1);
      }
    });
  }
  for (int i = 0; i < kCalls; ++i) {
    while (in_flight.load() >= 64) std::this_thread::sleep_for(std::chrono::microseconds(200));
    auto c = std::make_unique<Call>();
    c->req.set_payload("call " + std::to_string(i));
    in_flight.fetch_add(1);
    c->rpc = stub_->PrepareAsyncUnary(&c->ctx, c->req, &cq_);
    Call* raw = c.get();
    calls[i] = std::move(c);
    raw->rpc->StartCall();
    raw->rpc->Finish(&raw->resp, &raw->status, raw);
  }
  cq_.Shutdown();
  for (auto& t : drainers) t.join();
  EXPECT_EQ(done.load(), kCalls);
  EXPECT_EQ(bad.load(), 0);
  EXPECT_TRUE(alarm_seen.load());
}

}  // namespace
}  // namespace ringrpc
