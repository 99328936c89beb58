// gRFC A6 retries of unary calls (issue 13, part 3) against a grpc++
// server that fails the first attempts of a call on purpose (keyed by
// x-call-key; tests/server/test_server.cc): retryable and not, attempts
// running out, server pushback, the deadline bounding the backoff,
// throttling that stops retries after a burst of failures and recovers,
// and grpc.enable_retries=0. Then streams: server, client and bidi streams
// retried with their messages replayed (blocking and callback forms), and
// committed by the server's headers or by the retry buffer's limit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "ringrpc/client/channel.h"
#include "ringrpc/client/transport/testing/raw_server.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/fail_on_purpose.h"
#include "tests/testing/server_fixture.h"

namespace ringrpc {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using test::EchoRequest;
using test::EchoResponse;
using test::ring::TestService;
using ::testing::HasSubstr;

std::string Policy(int max_attempts, const std::string& codes = "[\"UNAVAILABLE\"]",
                   const std::string& extra = "") {
  return absl::StrCat(R"({"methodConfig": [{"name": [{"service": "ringrpc.test.TestService"}],
      "retryPolicy": {"maxAttempts": )",
                      max_attempts, R"(, "initialBackoff": "0.01s", "maxBackoff": "0.05s",
      "backoffMultiplier": 2, "retryableStatusCodes": )",
                      codes, "}}]", extra, "}");
}

std::string Md(const std::multimap<std::string, std::string>& md, const std::string& key) {
  auto it = md.find(key);
  return it == md.end() ? "" : it->second;
}

class RetryTest : public testing::ServerTest {
 protected:
  std::shared_ptr<Channel> Make(const std::string& config, ChannelArguments args = {}) {
    args.SetServiceConfigJSON(config);
    auto ch = CreateCustomChannel(server_->address(), InsecureChannelCredentials(), args);
    EXPECT_TRUE(ch->configuration_status().ok()) << ch->configuration_status().error_message();
    return ch;
  }
  // One unary call whose first `fail` attempts fail with `code`.
  Status Call(Channel& ch, int fail, ClientContext* ctx, int code = 14,
              const std::string& pushback = "") {
    return testing::EchoFailingFirst(ch, ctx, {absl::StrCat("k", ++key_), fail, code, pushback});
  }
  int key_ = 0;
};

TEST_F(RetryTest, RetryableFailuresAreRetriedWithThePreviousAttemptsHeader) {
  auto ch = Make(Policy(4));
  ClientContext ctx;
  Status s = Call(*ch, 2, &ctx);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(Md(ctx.GetServerInitialMetadata(), "x-attempt"), "2");  // the third attempt answered
  EXPECT_EQ(Md(ctx.GetServerInitialMetadata(), "x-previous-attempts"), "2");
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_retries_total 2\n"));
  CallMetricsSnapshot m = ch->CallMetrics();
  ASSERT_FALSE(m.started.empty());
  EXPECT_EQ(m.started[0].attempts, 3u);  // A66: three attempts, one call
}

TEST_F(RetryTest, ANonRetryableCodeAndRunningOutOfAttemptsEndTheCall) {
  auto ch = Make(Policy(3));
  {
    ClientContext ctx;
    Status s = Call(*ch, 1, &ctx, /*INTERNAL*/ 13);
    EXPECT_EQ(s.error_code(), StatusCode::INTERNAL);
    EXPECT_EQ(Md(ctx.GetServerTrailingMetadata(), "x-attempt"), "0");
  }
  {
    ClientContext ctx;
    Status s = Call(*ch, 10, &ctx);
    EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
    EXPECT_THAT(s.error_message(), HasSubstr("attempt 2 failed on purpose"));  // three in all
  }
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_retries_total 2\n"));
}

TEST_F(RetryTest, MaxAttemptsAboveFiveIsCappedAtFive) {
  auto ch = Make(Policy(9));
  ClientContext ctx;
  Status s = Call(*ch, 100, &ctx);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("attempt 4 failed on purpose"));
}

TEST_F(RetryTest, ServerPushbackSetsTheDelayOrStopsRetrying) {
  auto ch = Make(Policy(3));
  {
    ClientContext ctx;
    const auto start = steady_clock::now();
    ASSERT_TRUE(Call(*ch, 1, &ctx, 14, "300").ok());
    EXPECT_GE(steady_clock::now() - start, milliseconds(300));
  }
  {
    ClientContext ctx;  // a negative pushback: do not retry
    Status s = Call(*ch, 1, &ctx, 14, "-1");
    EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
    EXPECT_THAT(s.error_message(), HasSubstr("attempt 0"));
  }
}

TEST_F(RetryTest, TheDeadlineBoundsTheWholeCallBackoffIncluded) {
  auto ch = Make(Policy(5));
  ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + milliseconds(200));
  const auto start = steady_clock::now();
  Status s = Call(*ch, 1, &ctx, 14, "5000");  // pushback past the deadline
  EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  EXPECT_LT(steady_clock::now() - start, milliseconds(3000));
}

TEST_F(RetryTest, ExtremeBackoffsAndTimeoutsStayWithinTheDeadline) {
  // The largest durations a config may hold: backoffs and a timeout of
  // 10,000 years (past what a nanosecond clock holds) must neither
  // overflow nor outlast the call's own deadline.
  auto ch = Make(R"({"methodConfig": [{"name": [{}], "timeout": "315576000000s",
      "retryPolicy": {"maxAttempts": 5, "initialBackoff": "315576000000s",
                      "maxBackoff": "315576000000s", "backoffMultiplier": 1e300,
                      "retryableStatusCodes": ["UNAVAILABLE"]}}]})");
  ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + milliseconds(200));
  const auto start = steady_clock::now();
  Status s = Call(*ch, 10, &ctx);
  EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  EXPECT_LT(steady_clock::now() - start, milliseconds(5000));
}

TEST_F(RetryTest, TryCancelDuringTheBackoffEndsTheCallCancelled) {
  auto ch = Make(Policy(3));
  ClientContext ctx;
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(150));
    ctx.TryCancel();
  });
  Status s = Call(*ch, 1, &ctx, 14, "5000");
  canceller.join();
  EXPECT_EQ(s.error_code(), StatusCode::CANCELLED) << s.error_message();
}

TEST_F(RetryTest, ThrottlingStopsRetriesAfterABurstOfFailuresAndRecovers) {
  // 10 tokens, 1 back per success; retries stop at 5 or fewer.
  auto ch = Make(
      Policy(2, "[\"UNAVAILABLE\"]", R"(, "retryThrottling": {"maxTokens": 10, "tokenRatio": 1})"));
  for (int i = 0; i < 4; ++i) {  // each failed attempt takes a token
    ClientContext ctx;
    EXPECT_EQ(Call(*ch, 100, &ctx).error_code(), StatusCode::UNAVAILABLE);
  }
  const std::string text = ch->MetricsText();
  EXPECT_THAT(text, HasSubstr("ringrpc_retries_total 2\n"));  // calls 1 and 2 only
  EXPECT_THAT(text, HasSubstr("ringrpc_retries_throttled_total 2\n"));
  {
    ClientContext ctx;  // throttled: one failure ends it
    EXPECT_EQ(Call(*ch, 1, &ctx).error_code(), StatusCode::UNAVAILABLE);
  }
  for (int i = 0; i < 6; ++i) {  // successes refill the bucket
    ClientContext ctx;
    ASSERT_TRUE(Call(*ch, 0, &ctx).ok());
  }
  ClientContext ctx;
  EXPECT_TRUE(Call(*ch, 1, &ctx).ok()) << "retries are allowed again";
}

TEST_F(RetryTest, ARequestOverTheRetryBufferIsNotRetried) {
  ChannelArguments args;
  args.SetInt("grpc.per_rpc_retry_buffer_size", 100);
  auto ch = Make(Policy(3), args);
  ClientContext small_ctx;
  EXPECT_TRUE(Call(*ch, 1, &small_ctx).ok());  // "p": fits, retried
  ClientContext big_ctx;
  big_ctx.AddMetadata("x-call-key", "big");
  big_ctx.AddMetadata("x-fail-attempts", "1");
  EchoRequest big;
  big.set_payload(std::string(200, 'b'));
  EchoResponse resp;
  Status s = TestService::NewStub(ch)->Unary(&big_ctx, big, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE) << "committed: no retry";
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_retries_total 1\n"));
}

TEST_F(RetryTest, RetriesOffMeansTheFirstFailureEndsTheCall) {
  ChannelArguments args;
  args.SetInt("grpc.enable_retries", 0);
  auto ch = Make(Policy(3), args);
  ClientContext ctx;
  EXPECT_EQ(Call(*ch, 1, &ctx).error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_retries_total 0\n"));
}

// ---- streams ---------------------------------------------------------------------------

void FailFirst(ClientContext* ctx, const std::string& key, int fail) {
  testing::AddFailFirst(ctx, {key, fail});
}

std::string RecvTimeoutPolicy(const std::string& codes = "[\"UNAVAILABLE\"]") {
  return absl::StrCat(R"({"methodConfig": [{"name": [{"service": "ringrpc.test.TestService"}],
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.05s",
      "backoffMultiplier": 2, "perAttemptRecvTimeout": "0.2s", "retryableStatusCodes": )",
                      codes, "}}]}");
}

TEST_F(RetryTest, AUnaryAttemptTheServerDoesNotAnswerInTimeIsRetried) {
  auto ch = Make(RecvTimeoutPolicy("[]"));  // no codes: only timed-out attempts
  ClientContext ctx;
  ctx.AddMetadata("x-stall-attempts", "1");
  const auto start = steady_clock::now();
  Status s = Call(*ch, 0, &ctx);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(5));  // not the 10 s stall
  EXPECT_EQ(Md(ctx.GetServerInitialMetadata(), "x-attempt"), "1");
  EXPECT_EQ(Md(ctx.GetServerInitialMetadata(), "x-previous-attempts"), "1");
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_retries_total 1\n"));
}

TEST_F(RetryTest, AttemptsThatAllTimeOutEndDeadlineExceededNamingPerAttemptRecvTimeout) {
  auto ch = Make(RecvTimeoutPolicy());
  ClientContext ctx;
  ctx.AddMetadata("x-stall-attempts", "5");
  Status s = Call(*ch, 0, &ctx);
  EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(s.error_message(), HasSubstr("perAttemptRecvTimeout (200 ms)"));
  CallMetricsSnapshot m = ch->CallMetrics();
  ASSERT_EQ(m.started.size(), 1u);
  EXPECT_EQ(m.started[0].attempts, 3u);
  // An attempt the server answers in time goes through on the first try.
  ClientContext slow;
  EXPECT_TRUE(testing::EchoFailingFirst(*ch, &slow, {"slow-but-answered", 0}).ok());
}

TEST_F(RetryTest, AStreamAttemptTheServerDoesNotAnswerInTimeIsRetried) {
  auto ch = Make(RecvTimeoutPolicy());
  ClientContext ctx;
  testing::AddFailFirst(&ctx, {"stalled-stream", 0});
  ctx.AddMetadata("x-stall-attempts", "2");
  EchoRequest req;
  req.set_count(2);
  req.set_response_size(3);
  auto reader = TestService::NewStub(ch)->ServerStream(&ctx, req);
  EchoResponse r;
  int n = 0;
  while (reader->Read(&r)) ++n;
  Status s = reader->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(n, 2);
  EXPECT_EQ(Md(ctx.GetServerInitialMetadata(), "x-attempt"), "2");
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_retries_total 2\n"));
  // Every attempt stalled: the stream ends DEADLINE_EXCEEDED, naming it.
  ClientContext all;
  testing::AddFailFirst(&all, {"stalled-stream-2", 0});
  all.AddMetadata("x-stall-attempts", "5");
  auto stalled = TestService::NewStub(ch)->ServerStream(&all, req);
  while (stalled->Read(&r)) {
  }
  s = stalled->Finish();
  EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED);
  EXPECT_THAT(s.error_message(), HasSubstr("perAttemptRecvTimeout"));
}

TEST_F(RetryTest, AServerStreamIsRetriedAndItsMessagesArriveOnce) {
  auto ch = Make(Policy(3));
  ClientContext ctx;
  FailFirst(&ctx, "server-stream", 2);
  EchoRequest req;
  req.set_count(3);
  req.set_response_size(4);
  auto reader = TestService::NewStub(ch)->ServerStream(&ctx, req);
  EchoResponse r;
  int n = 0;
  while (reader->Read(&r)) {
    EXPECT_EQ(r.payload(), "ssss");
    EXPECT_EQ(r.count(), n);
    ++n;
  }
  Status s = reader->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(n, 3);
  EXPECT_EQ(Md(ctx.GetServerInitialMetadata(), "x-attempt"), "2");
  EXPECT_EQ(Md(ctx.GetServerInitialMetadata(), "x-previous-attempts"), "2");
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_retries_total 2\n"));
  CallMetricsSnapshot m = ch->CallMetrics();
  ASSERT_EQ(m.started.size(), 1u);
  EXPECT_EQ(m.started[0].attempts, 3u);
  uint64_t calls = 0;
  for (const auto& e : m.ended) calls += e.call_duration_seconds.count;
  EXPECT_EQ(calls, 1u) << "three attempts, one call";
}

TEST_F(RetryTest, AClientStreamIsReplayedWholeOnTheNextAttempt) {
  auto ch = Make(Policy(3));
  ClientContext ctx;
  FailFirst(&ctx, "client-stream", 1);
  EchoResponse resp;
  auto writer = TestService::NewStub(ch)->ClientStream(&ctx, &resp);
  EchoRequest req;
  req.set_payload("abc");
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(writer->Write(req));
  writer->WritesDone();
  Status s = writer->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.count(), 3);
  EXPECT_EQ(resp.total_bytes(), 9);
  EXPECT_EQ(Md(ctx.GetServerInitialMetadata(), "x-previous-attempts"), "1");
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_retries_total 1\n"));
}

TEST_F(RetryTest, AClientStreamLargerThanTheRetryBufferIsCommitted) {
  ChannelArguments args;
  args.SetInt("grpc.per_rpc_retry_buffer_size", 100);
  auto ch = Make(Policy(3), args);
  ClientContext ctx;
  FailFirst(&ctx, "big-client-stream", 1);
  EchoResponse resp;
  auto writer = TestService::NewStub(ch)->ClientStream(&ctx, &resp);
  // The first message alone passes the limit: committed before the server
  // can fail it (a failure seen after a smaller first write would rightly
  // be retried).
  EchoRequest req;
  req.set_payload(std::string(150, 'x'));
  for (int i = 0; i < 2; ++i) (void)writer->Write(req);  // the call may end meanwhile
  writer->WritesDone();
  Status s = writer->Finish();
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("attempt 0 failed on purpose"));
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_retries_total 0\n"));
}

TEST_F(RetryTest, AStreamWhoseServerSentHeadersIsCommitted) {
  auto ch = Make(Policy(3));
  ClientContext ctx;
  ctx.AddMetadata("x-fail-after-headers", "1");
  EchoRequest req;
  req.set_count(1);
  auto reader = TestService::NewStub(ch)->ServerStream(&ctx, req);
  EchoResponse r;
  EXPECT_FALSE(reader->Read(&r));
  Status s = reader->Finish();
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("failed after sending headers"));
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_retries_total 0\n"));
}

TEST_F(RetryTest, ABidiStreamIsRetriedBeforeTheServerAnswers) {
  auto ch = Make(Policy(2));
  ClientContext ctx;
  FailFirst(&ctx, "bidi", 1);
  auto stream = TestService::NewStub(ch)->Bidi(&ctx);
  EchoRequest req;
  for (const char* p : {"one", "two"}) {
    req.set_payload(p);
    (void)stream->Write(req);
  }
  stream->WritesDone();
  std::vector<std::string> got;
  EchoResponse r;
  while (stream->Read(&r)) got.push_back(r.payload());
  Status s = stream->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(got, (std::vector<std::string>{"one", "two"}));
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_retries_total 1\n"));
}

// The callback form: reads, writes and the finisher wait on the attempt
// at the same time; all of them move to the next one.
class BidiPair final : public ClientBidiReactor<EchoRequest, EchoResponse> {
 public:
  BidiPair(TestService::Stub* stub, ClientContext* ctx) {
    first_.set_payload("first");
    second_.set_payload("second");
    stub->async()->Bidi(ctx, this);
    StartRead(&resp_);
    StartWrite(&first_);
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (ok && ++writes_ == 1) StartWriteLast(&second_, WriteOptions());
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    got_.push_back(resp_.payload());
    StartRead(&resp_);
  }
  void OnDone(const Status& s) override { done_.set_value(s); }
  Status Wait() { return done_.get_future().get(); }
  const std::vector<std::string>& got() const { return got_; }

 private:
  EchoRequest first_, second_;
  EchoResponse resp_;
  int writes_ = 0;
  std::vector<std::string> got_;
  std::promise<Status> done_;
};

TEST_F(RetryTest, ACallbackBidiStreamIsRetried) {
  auto ch = Make(Policy(3));
  auto stub = TestService::NewStub(ch);
  ClientContext ctx;
  FailFirst(&ctx, "callback-bidi", 2);
  BidiPair reactor(stub.get(), &ctx);
  Status s = reactor.Wait();
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(reactor.got(), (std::vector<std::string>{"first", "second"}));
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_retries_total 2\n"));
}

// The transparent retry moves a reactor's read, write and finisher, all
// waiting on the refused attempt, to the next one at once (no backoff),
// onto a connection this thread already has: the refused attempt must
// outlive every operation still waking up inside it.
TEST_F(RetryTest, ACallbackStreamRefusedUnprocessedMovesToAnotherBackendAtOnce) {
  auto refusing = transport::testing::RefusingServer();
  ChannelArguments args;
  args.SetInt("ringrpc.cq_threads", 1);
  args.SetLoadBalancingPolicyName("round_robin");
  auto ch = CreateCustomChannel(absl::StrCat("ipv4:", server_->address(), ",", refusing->address()),
                                InsecureChannelCredentials(), args);
  auto stub = TestService::NewStub(ch);
  for (int i = 0; i < 6; ++i) {
    ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    BidiPair reactor(stub.get(), &ctx);
    Status s = reactor.Wait();
    ASSERT_TRUE(s.ok()) << i << ": " << s.error_message();
    EXPECT_EQ(reactor.got(), (std::vector<std::string>{"first", "second"}));
  }
  EXPECT_GE(refusing->accepts(), 1u);
  EXPECT_THAT(ch->MetricsText(),
              ::testing::Not(HasSubstr("ringrpc_transparent_retries_total 0\n")));
}

TEST_F(RetryTest, TryCancelDuringAStreamsBackoffEndsItCancelled) {
  auto ch = Make(R"({"methodConfig": [{"name": [{"service": "ringrpc.test.TestService"}],
      "retryPolicy": {"maxAttempts": 3, "initialBackoff": "5s", "maxBackoff": "5s",
      "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]})");
  ClientContext ctx;
  FailFirst(&ctx, "cancel-stream", 1);
  ctx.AddMetadata("x-pushback-ms", "5000");  // not a jittered backoff: exactly 5 s
  EchoRequest req;
  req.set_count(1);
  auto reader = TestService::NewStub(ch)->ServerStream(&ctx, req);
  auto cancel = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(milliseconds(200));
    ctx.TryCancel();
  });
  const auto start = steady_clock::now();
  EchoResponse r;
  EXPECT_FALSE(reader->Read(&r));
  Status s = reader->Finish();
  cancel.get();
  EXPECT_EQ(s.error_code(), StatusCode::CANCELLED) << s.error_message();
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(4));
}

}  // namespace
}  // namespace ringrpc
