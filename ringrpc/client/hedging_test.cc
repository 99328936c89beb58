// gRFC A6 hedging against grpc++ servers, of unary calls: copies sent
// hedgingDelay apart, the first answer wins and the others are cancelled,
// a non-fatal status sends the next copy at once, a fatal one ends the
// call, pushback and throttling stop the copies, TryCancel ends them all;
// and of streams: every copy gets every message written, the caller's
// operations move to the copy that answers, the retry buffer commits.
// And the tail it cuts: a backend that takes 200 ms on 5% of calls (drawn
// at random), p50/p99 with and without hedging (the figures in
// docs/performance.md come from this test's output).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/channel.h"
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

std::string Hedging(int max_attempts, const std::string& delay,
                    const std::string& non_fatal = R"(["UNAVAILABLE"])",
                    const std::string& extra = "") {
  return absl::StrCat(R"({"methodConfig": [{"name": [{"service": "ringrpc.test.TestService"}],
      "hedgingPolicy": {"maxAttempts": )",
                      max_attempts, R"(, "hedgingDelay": ")", delay,
                      R"(", "nonFatalStatusCodes": )", non_fatal, "}}]", extra, "}");
}

std::string Md(const std::multimap<std::string, std::string>& md, const std::string& key) {
  auto it = md.find(key);
  return it == md.end() ? "" : it->second;
}

std::shared_ptr<Channel> Make(const std::string& target, const std::string& config) {
  ChannelArguments args;
  args.SetServiceConfigJSON(config);
  auto ch = CreateCustomChannel(target, InsecureChannelCredentials(), args);
  EXPECT_TRUE(ch->configuration_status().ok()) << ch->configuration_status().error_message();
  return ch;
}

test::StatsResponse Stats(const std::string& address) {
  auto stub = TestService::NewStub(CreateChannel(address, InsecureChannelCredentials()));
  ClientContext ctx;
  test::StatsResponse stats;
  EXPECT_TRUE(stub->Stats(&ctx, test::StatsRequest(), &stats).ok());
  return stats;
}

class HedgingTest : public testing::ServerTest {
 protected:
  // One unary call whose first `fail` attempts fail with `code`.
  Status Call(Channel& ch, int fail, ClientContext* ctx, int code = 14,
              const std::string& pushback = "", int sleep_ms = 0) {
    return testing::EchoFailingFirst(ch, ctx, {absl::StrCat("h", ++key_), fail, code, pushback},
                                     sleep_ms);
  }
  int key_ = 0;
};

TEST_F(HedgingTest, ANonFatalFailureSendsTheNextCopyAtOnce) {
  // A 10 s hedging delay: only the failure can send the second copy soon.
  auto ch = Make(server_->address(), Hedging(3, "10s"));
  ClientContext ctx;
  const auto start = steady_clock::now();
  Status s = Call(*ch, 1, &ctx);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(Md(ctx.GetServerInitialMetadata(), "x-attempt"), "1");
  EXPECT_EQ(Md(ctx.GetServerInitialMetadata(), "x-previous-attempts"), "1");
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_hedged_attempts_total 1\n"));
}

TEST_F(HedgingTest, AFatalStatusEndsTheCallWithoutMoreCopies) {
  auto ch = Make(server_->address(), Hedging(3, "10s"));
  ClientContext ctx;
  Status s = Call(*ch, 1, &ctx, /*INVALID_ARGUMENT*/ 3);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("attempt 0 failed on purpose"));
  EXPECT_EQ(Md(ctx.GetServerTrailingMetadata(), "x-attempt"), "0");
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_hedged_attempts_total 0\n"));
}

TEST_F(HedgingTest, WhenEveryCopyFailsTheLastFailureIsTheCalls) {
  auto ch = Make(server_->address(), Hedging(3, "0.01s"));
  ClientContext ctx;
  Status s = Call(*ch, 5, &ctx);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("failed on purpose"));
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_hedged_attempts_total 2\n"));
  CallMetricsSnapshot m = ch->CallMetrics();
  ASSERT_EQ(m.started.size(), 1u);
  EXPECT_EQ(m.started[0].attempts, 3u);
}

TEST_F(HedgingTest, TheFirstAnswerWinsAndTheOtherCopiesAreCancelled) {
  // Every copy takes 400 ms; copies go 50 ms apart: the first answers first.
  auto ch = Make(server_->address(), Hedging(3, "0.05s"));
  const int64_t cancelled_before = Stats(server_->address()).cancelled();
  ClientContext ctx;
  Status s = Call(*ch, 0, &ctx, 14, "", 400);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(Md(ctx.GetServerInitialMetadata(), "x-attempt"), "0");
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_hedged_attempts_total 2\n"));
  // The two later copies were cancelled (the server saw them go).
  int64_t cancelled = 0;
  for (auto until = steady_clock::now() + std::chrono::seconds(10);
       cancelled < 2 && steady_clock::now() < until;) {
    cancelled = Stats(server_->address()).cancelled() - cancelled_before;
    if (cancelled < 2) std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(cancelled, 2);
}

TEST_F(HedgingTest, NegativePushbackStopsTheCopies) {
  auto ch = Make(server_->address(), Hedging(3, "10s"));
  ClientContext ctx;
  Status s = Call(*ch, 1, &ctx, 14, "-1");
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_hedged_attempts_total 0\n"));
}

TEST_F(HedgingTest, PushbackDelaysTheNextCopy) {
  auto ch = Make(server_->address(), Hedging(2, "10s"));
  ClientContext ctx;
  const auto start = steady_clock::now();
  Status s = Call(*ch, 1, &ctx, 14, "300");
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_GE(steady_clock::now() - start, milliseconds(300));
  EXPECT_EQ(Md(ctx.GetServerInitialMetadata(), "x-attempt"), "1");
}

TEST_F(HedgingTest, ThrottlingStopsTheCopies) {
  // maxTokens 2: one failure leaves 1 token, not above half: no more copies.
  auto ch = Make(server_->address(),
                 Hedging(3, "10s", R"(["UNAVAILABLE"])",
                         R"(, "retryThrottling": {"maxTokens": 2, "tokenRatio": 0.1})"));
  ClientContext ctx;
  Status s = Call(*ch, 1, &ctx);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_hedged_attempts_total 0\n"));
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_retries_throttled_total 1\n"));
}

TEST_F(HedgingTest, TryCancelEndsEveryCopy) {
  auto ch = Make(server_->address(), Hedging(3, "0.05s"));
  ClientContext ctx;
  // Once the server has all three copies (however slow this machine is).
  auto cancel = std::async(std::launch::async, [&] {
    for (auto until = steady_clock::now() + std::chrono::seconds(10);
         Stats(server_->address()).calls() < 3 && steady_clock::now() < until;) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    ctx.TryCancel();
  });
  const auto start = steady_clock::now();
  Status s = Call(*ch, 0, &ctx, 14, "", 10000);
  cancel.get();
  EXPECT_EQ(s.error_code(), StatusCode::CANCELLED);
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(5));
  int64_t cancelled = 0;
  for (auto until = steady_clock::now() + std::chrono::seconds(10);
       cancelled < 3 && steady_clock::now() < until;) {
    cancelled = Stats(server_->address()).cancelled();
    if (cancelled < 3) std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(cancelled, 3);
}

TEST_F(HedgingTest, RetriesOffMeansNoCopies) {
  ChannelArguments args;
  args.SetInt("grpc.enable_retries", 0);
  args.SetServiceConfigJSON(Hedging(3, "0.01s"));
  auto ch = CreateCustomChannel(server_->address(), InsecureChannelCredentials(), args);
  ClientContext ctx;
  Status s = Call(*ch, 1, &ctx);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_hedged_attempts_total 0\n"));
}

// ---- Streams: the same policy on streaming methods (grpc++ has none) ----

// Waits (within 10 s) until the server's `count` (its calls, or the
// cancelled ones) reaches `n`; returns what it counted last.
int64_t AwaitCount(const std::string& address, int64_t (test::StatsResponse::*count)() const,
                   int64_t n) {
  int64_t got = 0;
  for (auto until = steady_clock::now() + std::chrono::seconds(10);
       (got = (Stats(address).*count)()) < n && steady_clock::now() < until;) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  return got;
}
int64_t AwaitCalls(const std::string& address, int64_t n) {
  return AwaitCount(address, &test::StatsResponse::calls, n);
}
int64_t AwaitCancelled(const std::string& address, int64_t n) {
  return AwaitCount(address, &test::StatsResponse::cancelled, n);
}

// The first `stall` copies of the call get no answer (for 10 s, or until
// cancelled); later ones are answered.
void StallFirst(ClientContext* ctx, const std::string& key, int stall) {
  testing::AddFailFirst(ctx, {.key = key, .attempts = 0});
  ctx->AddMetadata("x-stall-attempts", std::to_string(stall));
}

TEST_F(HedgingTest, AClientStreamsCopiesGetEveryMessageAndTheFirstAnswerWins) {
  auto ch = Make(server_->address(), Hedging(2, "0.05s"));
  ClientContext ctx;
  StallFirst(&ctx, "client-stream", 1);
  EchoResponse resp;
  auto writer = TestService::NewStub(ch)->ClientStream(&ctx, &resp);
  EchoRequest req;
  req.set_payload("abc");
  // Written before the second copy goes: replayed on it.
  EXPECT_TRUE(writer->Write(req));
  ASSERT_EQ(AwaitCalls(server_->address(), 2), 2);
  // Written while both copies are open and neither answered: sent on both.
  EXPECT_TRUE(writer->Write(req));
  EXPECT_TRUE(writer->Write(req));
  writer->WritesDone();
  Status s = writer->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.count(), 3);
  EXPECT_EQ(resp.total_bytes(), 9);
  EXPECT_EQ(Md(ctx.GetServerInitialMetadata(), "x-attempt"), "1");
  EXPECT_EQ(Md(ctx.GetServerInitialMetadata(), "x-previous-attempts"), "1");
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_hedged_attempts_total 1\n"));
  // The stalled first copy was cancelled.
  EXPECT_EQ(AwaitCancelled(server_->address(), 1), 1);
}

TEST_F(HedgingTest, ABidiReadWaitingOnTheFirstCopyMovesToTheCopyThatAnswers) {
  auto ch = Make(server_->address(), Hedging(3, "0.05s"));
  ClientContext ctx;
  StallFirst(&ctx, "bidi", 1);
  auto stream = TestService::NewStub(ch)->Bidi(&ctx);
  EchoRequest req;
  EchoResponse r;
  req.set_payload("one");
  EXPECT_TRUE(stream->Write(req));
  // This read waits on the first copy, which never answers; the second
  // answers (with the echo of its replayed message) and takes its place.
  ASSERT_TRUE(stream->Read(&r));
  EXPECT_EQ(r.payload(), "one");
  req.set_payload("two");
  EXPECT_TRUE(stream->Write(req));
  ASSERT_TRUE(stream->Read(&r));
  EXPECT_EQ(r.payload(), "two");
  stream->WritesDone();
  EXPECT_FALSE(stream->Read(&r));
  Status s = stream->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(Md(ctx.GetServerInitialMetadata(), "x-attempt"), "1");
  // The answer came before the third copy's time: it never went.
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_hedged_attempts_total 1\n"));
  EXPECT_EQ(AwaitCancelled(server_->address(), 1), 1);
  EXPECT_EQ(Stats(server_->address()).calls(), 2);
}

// The callback form: its read and its finisher both wait on the first
// copy; both move to the copy that answers.
class EchoOnce final : public ClientBidiReactor<EchoRequest, EchoResponse> {
 public:
  EchoOnce(TestService::Stub* stub, ClientContext* ctx) {
    req_.set_payload("once");
    stub->async()->Bidi(ctx, this);
    StartWrite(&req_);
    StartRead(&resp_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (ok) got_ = resp_.payload();
    StartWritesDone();
  }
  void OnDone(const Status& s) override { done_.set_value(s); }
  Status Wait() { return done_.get_future().get(); }
  const std::string& got() const { return got_; }

 private:
  EchoRequest req_;
  EchoResponse resp_;
  std::string got_;
  std::promise<Status> done_;
};

TEST_F(HedgingTest, ACallbackStreamsReadAndFinisherMoveToTheCopyThatAnswers) {
  auto ch = Make(server_->address(), Hedging(2, "0.05s"));
  auto stub = TestService::NewStub(ch);
  ClientContext ctx;
  StallFirst(&ctx, "callback-bidi", 1);
  EchoOnce reactor(stub.get(), &ctx);
  Status s = reactor.Wait();
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(reactor.got(), "once");
  EXPECT_EQ(Md(ctx.GetServerInitialMetadata(), "x-attempt"), "1");
  EXPECT_EQ(AwaitCancelled(server_->address(), 1), 1);
}

TEST_F(HedgingTest, AStreamsNonFatalEndSendsTheNextCopyAtOnce) {
  auto ch = Make(server_->address(), Hedging(3, "10s"));
  ClientContext ctx;
  testing::AddFailFirst(&ctx, {.key = "server-stream", .attempts = 1});
  EchoRequest req;
  req.set_count(3);
  const auto start = steady_clock::now();
  auto reader = TestService::NewStub(ch)->ServerStream(&ctx, req);
  EchoResponse r;
  int got = 0;
  while (reader->Read(&r)) EXPECT_EQ(r.count(), got++);
  Status s = reader->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(got, 3);
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(5));  // not after 10 s
  EXPECT_EQ(Md(ctx.GetServerInitialMetadata(), "x-attempt"), "1");
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_hedged_attempts_total 1\n"));
}

TEST_F(HedgingTest, AStreamsFatalEndIsTheCallsStatus) {
  auto ch = Make(server_->address(), Hedging(3, "10s"));
  ClientContext ctx;
  testing::AddFailFirst(&ctx, {.key = "fatal-stream", .attempts = 1, .code = 3});
  auto reader = TestService::NewStub(ch)->ServerStream(&ctx, EchoRequest());
  EchoResponse r;
  EXPECT_FALSE(reader->Read(&r));
  Status s = reader->Finish();
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("attempt 0 failed on purpose"));
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_hedged_attempts_total 0\n"));
}

TEST_F(HedgingTest, TryCancelEndsEveryCopyOfAStream) {
  auto ch = Make(server_->address(), Hedging(3, "0.05s"));
  ClientContext ctx;
  StallFirst(&ctx, "cancelled-bidi", 3);
  auto stream = TestService::NewStub(ch)->Bidi(&ctx);
  ASSERT_EQ(AwaitCalls(server_->address(), 3), 3);
  ctx.TryCancel();
  EchoResponse r;
  EXPECT_FALSE(stream->Read(&r));
  Status s = stream->Finish();
  EXPECT_EQ(s.error_code(), StatusCode::CANCELLED);
  EXPECT_EQ(AwaitCancelled(server_->address(), 3), 3);
}

TEST_F(HedgingTest, AHedgedStreamLetGoUnfinishedCancelsItsCopies) {
  auto ch = Make(server_->address(), Hedging(3, "0.05s"));
  {
    ClientContext ctx;
    StallFirst(&ctx, "dropped-bidi", 3);
    auto stream = TestService::NewStub(ch)->Bidi(&ctx);
    ASSERT_EQ(AwaitCalls(server_->address(), 3), 3);
  }  // no Finish
  EXPECT_EQ(AwaitCancelled(server_->address(), 3), 3);
}

TEST_F(HedgingTest, AStreamPastTheRetryBufferCommitsToTheCallersCopy) {
  ChannelArguments args;
  args.SetInt("grpc.per_rpc_retry_buffer_size", 100);
  args.SetServiceConfigJSON(Hedging(3, "0.05s"));
  auto ch = CreateCustomChannel(server_->address(), InsecureChannelCredentials(), args);
  ClientContext ctx;
  testing::AddFailFirst(&ctx, {.key = "big-stream", .attempts = 0});
  EchoResponse resp;
  auto writer = TestService::NewStub(ch)->ClientStream(&ctx, &resp);
  EchoRequest req;
  req.set_payload(std::string(150, 'x'));  // over the buffer at once: no copy goes
  EXPECT_TRUE(writer->Write(req));
  std::this_thread::sleep_for(milliseconds(200));  // past two copies' times
  writer->WritesDone();
  Status s = writer->Finish();
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.count(), 1);
  EXPECT_EQ(Md(ctx.GetServerInitialMetadata(), "x-attempt"), "0");
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_hedged_attempts_total 0\n"));
  EXPECT_EQ(Stats(server_->address()).calls(), 1);
}

// p50 and p99 of `n` sequential calls, in ms.
std::pair<double, double> Latencies(Channel& ch, int n) {
  auto stub = TestService::NewStub(std::shared_ptr<Channel>(&ch, [](Channel*) {}));
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    ClientContext ctx;
    EchoResponse resp;
    const auto start = steady_clock::now();
    Status s = stub->Unary(&ctx, EchoRequest(), &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    ms.push_back(std::chrono::duration<double, std::milli>(steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[n / 2], ms[n * 99 / 100]};
}

TEST(HedgingTail, CutsTheTailOfBackendsThatAreSlowOnFivePercentOfCalls) {
  auto a = testing::ServerProcess::Start("127.0.0.1:0", "tests/server/test_server",
                                         {"--slow_percent=5", "--slow_ms=200"});
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = testing::ServerProcess::Start("127.0.0.1:0", "tests/server/test_server",
                                         {"--slow_percent=5", "--slow_ms=200"});
  ASSERT_TRUE(b.ok()) << b.status();
  const std::string target =
      absl::StrCat("ipv4:127.0.0.1:", (*a)->port(), ",127.0.0.1:", (*b)->port());
  const std::string rr = R"("loadBalancingConfig": [{"round_robin": {}}])";
  constexpr int kCalls = 400;
  auto plain = Make(target, absl::StrCat("{", rr, "}"));
  auto hedged = Make(target, absl::StrCat(R"({"methodConfig": [{"name": [{}],
      "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.02s"}}], )",
                                          rr, "}"));
  const auto [plain_p50, plain_p99] = Latencies(*plain, kCalls);
  const auto [hedged_p50, hedged_p99] = Latencies(*hedged, kCalls);
  std::printf(
      "backends: 2, each 200 ms slower on 5%% of calls; %d sequential calls each\n"
      "no hedging:               p50 %.2f ms, p99 %.2f ms\n"
      "hedging (up to 3 copies, 20 ms apart): p50 %.2f ms, p99 %.2f ms\n",
      kCalls, plain_p50, plain_p99, hedged_p50, hedged_p99);
  EXPECT_GE(plain_p99, 200.0);  // the tail is there without hedging
  // A copy 20 ms later answers long before 200 ms (unless it is slow too: a
  // third copy makes four such calls in 400 about a one in 10^7 event).
  EXPECT_LT(hedged_p99, 150.0);
  EXPECT_THAT(hedged->MetricsText(),
              ::testing::Not(HasSubstr("ringrpc_hedged_attempts_total 0\n")));
}

}  // namespace
}  // namespace ringrpc
