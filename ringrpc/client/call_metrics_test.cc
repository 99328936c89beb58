// Per-call telemetry (issue 14, part 4) against a grpc++ server: what
// Channel::CallMetrics(), MetricsText() and a recorder report is what the
// calls did -- per method and status, bytes as sent and received, attempts
// of calls that never reached a stream -- merged over CQ threads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ringrpc/base/mutex.h"
#include "ringrpc/client/blocking_stream.h"
#include "ringrpc/client/channel.h"
#include "ringrpc/client/generic_stub.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/loopback.h"
#include "tests/testing/server_fixture.h"

namespace ringrpc {
namespace {

using test::EchoRequest;
using test::EchoResponse;
using test::ring::TestService;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kUnary[] = "ringrpc.test.TestService/Unary";
constexpr char kClientStream[] = "ringrpc.test.TestService/ClientStream";

const CallMetricsSnapshot::Ended* Find(const CallMetricsSnapshot& s, const std::string& method,
                                       StatusCode code) {
  for (const auto& e : s.ended) {
    if (e.method == method && e.status == code) return &e;
  }
  return nullptr;
}

uint64_t Started(const CallMetricsSnapshot& s, const std::string& method) {
  for (const auto& st : s.started) {
    if (st.method == method) return st.attempts;
  }
  return 0;
}

// Hears every event; thread-safe as a recorder must be.
struct Heard : CallMetricsRecorder {
  Mutex mu;
  std::map<std::string, int> started ABSL_GUARDED_BY(mu);
  std::vector<std::string> attempt_methods ABSL_GUARDED_BY(mu);  // copied: views die with the call
  std::vector<std::string> targets ABSL_GUARDED_BY(mu);
  int calls ABSL_GUARDED_BY(mu) = 0;
  void OnAttemptStarted(std::string_view method, std::string_view target) override {
    MutexLock lock(&mu);
    ++started[std::string(method)];
    targets.emplace_back(target);
  }
  void OnAttemptEnded(const CallAttemptEnd& e) override {
    MutexLock lock(&mu);
    attempt_methods.emplace_back(e.method);
  }
  void OnCallEnded(const CallEnd&) override {
    MutexLock lock(&mu);
    ++calls;
  }
};

class CallMetricsTest : public testing::ServerTest {};

TEST_F(CallMetricsTest, UnaryStreamsAndFailuresAreCountedByMethodStatusAndBytes) {
  auto heard = std::make_shared<Heard>();
  ChannelArguments args;
  args.SetCallMetricsRecorder(heard);
  auto channel = CreateCustomChannel(server_->address(), InsecureChannelCredentials(), args);
  auto stub = TestService::NewStub(channel);

  // Three OK unary calls whose request sizes are known.
  uint64_t sent = 0, rcvd = 0;
  for (int i = 0; i < 3; ++i) {
    ClientContext ctx;
    EchoRequest req;
    req.set_payload(std::string(100 * (i + 1), 'p'));
    EchoResponse resp;
    ASSERT_TRUE(stub->Unary(&ctx, req, &resp).ok());
    sent += req.ByteSizeLong();
    rcvd += resp.ByteSizeLong();
  }
  // One past its deadline (the server sleeps).
  {
    ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(50));
    EchoRequest req;
    req.set_sleep_ms(2000);
    EchoResponse resp;
    EXPECT_EQ(stub->Unary(&ctx, req, &resp).error_code(), StatusCode::DEADLINE_EXCEEDED);
  }
  // A client stream of four messages.
  uint64_t stream_sent = 0;
  {
    ClientContext ctx;
    EchoResponse summary;
    auto writer = stub->ClientStream(&ctx, &summary);
    for (int i = 0; i < 4; ++i) {
      EchoRequest req;
      req.set_payload(std::string(1000, 'w'));
      stream_sent += req.ByteSizeLong();
      ASSERT_TRUE(writer->Write(req));
    }
    ASSERT_TRUE(writer->WritesDone());
    ASSERT_TRUE(writer->Finish().ok());
  }
  // A method the server does not have.
  {
    GenericStub generic(channel);
    ClientContext ctx;
    std::string reply;
    EXPECT_EQ(generic.UnaryCall(&ctx, "/ringrpc.test.TestService/Nope", "", &reply).error_code(),
              StatusCode::UNIMPLEMENTED);
  }

  CallMetricsSnapshot s = channel->CallMetrics();
  EXPECT_EQ(s.target, "dns:///" + server_->address());
  EXPECT_EQ(Started(s, kUnary), 4u);
  EXPECT_EQ(Started(s, kClientStream), 1u);
  EXPECT_EQ(Started(s, "ringrpc.test.TestService/Nope"), 1u);

  const auto* ok = Find(s, kUnary, StatusCode::OK);
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->attempt_duration_seconds.count, 3u);
  EXPECT_EQ(ok->call_duration_seconds.count, 3u);
  EXPECT_EQ(ok->attempt_sent_compressed_bytes.sum, double(sent));
  EXPECT_EQ(ok->attempt_rcvd_compressed_bytes.sum, double(rcvd));
  EXPECT_GT(ok->attempt_duration_seconds.sum, 0.0);
  EXPECT_LE(ok->attempt_duration_seconds.sum, ok->call_duration_seconds.sum + 1e-3);

  const auto* late = Find(s, kUnary, StatusCode::DEADLINE_EXCEEDED);
  ASSERT_NE(late, nullptr);
  EXPECT_EQ(late->call_duration_seconds.count, 1u);
  EXPECT_GE(late->call_duration_seconds.sum, 0.04);  // it waited for its deadline
  EXPECT_EQ(late->attempt_rcvd_compressed_bytes.sum, 0.0);

  const auto* stream = Find(s, kClientStream, StatusCode::OK);
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(stream->call_duration_seconds.count, 1u);  // a stream: its one attempt is the call
  EXPECT_EQ(stream->attempt_sent_compressed_bytes.sum, double(stream_sent));
  EXPECT_NE(Find(s, "ringrpc.test.TestService/Nope", StatusCode::UNIMPLEMENTED), nullptr);

  {
    MutexLock lock(&heard->mu);
    EXPECT_EQ(heard->started[kUnary], 4);
    EXPECT_EQ(heard->attempt_methods.size(), 6u);
    EXPECT_EQ(heard->calls, 6);
    for (const std::string& t : heard->targets) EXPECT_EQ(t, s.target);
  }

  const std::string text = channel->MetricsText();
  EXPECT_THAT(text, HasSubstr("ringrpc_connections_created_total"));  // the pool's, still there
  EXPECT_THAT(text, HasSubstr(absl::StrCat("grpc_client_attempt_started_total{grpc_method=\"",
                                           kUnary, "\",grpc_target=\"", s.target, "\"} 4\n")));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("grpc_client_call_duration_seconds_count{grpc_method=\"",
                                           kUnary, "\",grpc_target=\"", s.target,
                                           "\",grpc_status=\"DEADLINE_EXCEEDED\"} 1\n")));
}

TEST_F(CallMetricsTest, AnAttemptThatNeverReachesAStreamIsCountedWithNoBytes) {
  // A port nothing listens on: the call fails UNAVAILABLE before a stream.
  const std::string nowhere = absl::StrCat("127.0.0.1:", testing::UnusedLoopbackPort());
  auto channel = CreateChannel(nowhere, InsecureChannelCredentials());
  auto stub = TestService::NewStub(channel);
  ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  EchoResponse resp;
  EXPECT_EQ(stub->Unary(&ctx, EchoRequest(), &resp).error_code(), StatusCode::UNAVAILABLE);
  CallMetricsSnapshot s = channel->CallMetrics();
  EXPECT_EQ(Started(s, kUnary), 1u);
  const auto* failed = Find(s, kUnary, StatusCode::UNAVAILABLE);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->attempt_duration_seconds.count, 1u);
  EXPECT_EQ(failed->call_duration_seconds.count, 1u);
  EXPECT_EQ(failed->attempt_sent_compressed_bytes.sum, 0.0);
}

TEST_F(CallMetricsTest, CallsOnSeveralCqThreadsMergeAndTurningItOffKeepsNothing) {
  ChannelArguments args;
  args.SetInt("ringrpc.cq_threads", 2);
  auto channel = CreateCustomChannel(server_->address(), InsecureChannelCredentials(), args);
  auto stub = TestService::NewStub(channel);
  constexpr int kThreads = 4, kCalls = 50;
  std::atomic<int> failures{0};
  std::vector<std::thread> users;
  for (int t = 0; t < kThreads; ++t) {
    users.emplace_back([&] {
      for (int i = 0; i < kCalls; ++i) {
        ClientContext ctx;
        EchoRequest req;
        req.set_payload("x");
        EchoResponse resp;
        if (!stub->Unary(&ctx, req, &resp).ok()) ++failures;
        if (i % 10 == 0) (void)channel->CallMetrics();  // read while others record
      }
    });
  }
  for (auto& u : users) u.join();
  EXPECT_EQ(failures.load(), 0);
  CallMetricsSnapshot s = channel->CallMetrics();
  EXPECT_EQ(Started(s, kUnary), uint64_t(kThreads * kCalls));
  const auto* ok = Find(s, kUnary, StatusCode::OK);
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->call_duration_seconds.count, uint64_t(kThreads * kCalls));

  ChannelArguments off;
  off.SetInt("ringrpc.call_metrics", 0);
  auto heard = std::make_shared<Heard>();
  off.SetCallMetricsRecorder(heard);
  auto quiet = CreateCustomChannel(server_->address(), InsecureChannelCredentials(), off);
  ClientContext ctx;
  EchoResponse resp;
  ASSERT_TRUE(TestService::NewStub(quiet)->Unary(&ctx, EchoRequest(), &resp).ok());
  EXPECT_TRUE(quiet->CallMetrics().started.empty());
  EXPECT_THAT(quiet->MetricsText(), Not(HasSubstr("grpc_client_attempt_duration_seconds_bucket{")));
  MutexLock lock(&heard->mu);
  EXPECT_EQ(heard->calls, 1);  // the recorder still hears it
}

}  // namespace
}  // namespace ringrpc
