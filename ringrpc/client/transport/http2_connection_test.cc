// The HTTP/2 transport against a real grpc++ 1.51 server (a child process),
// over TCP on 127.0.0.1 and over a unix socket, on both loop backends.
#include "ringrpc/client/transport/http2_connection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include "ringrpc/client/runtime/testing/run_to_completion.h"
#include "tests/proto/echo_test.pb.h"
#include "tests/testing/process_stats.h"
#include "tests/testing/server_process.h"

namespace ringrpc::transport {
namespace {

using ringrpc::test::EchoRequest;
using ringrpc::test::EchoResponse;
using runtime::Backend;
using std::chrono::milliseconds;
using ::testing::HasSubstr;
using ConnPtr = std::shared_ptr<Http2Connection>;

constexpr char kUnary[] = "/ringrpc.test.TestService/Unary";
constexpr char kServerStream[] = "/ringrpc.test.TestService/ServerStream";
constexpr char kClientStream[] = "/ringrpc.test.TestService/ClientStream";
constexpr char kBidi[] = "/ringrpc.test.TestService/Bidi";
constexpr char kStats[] = "/ringrpc.test.TestService/Stats";

struct Param {
  Backend backend;
  bool unix_socket;
};

std::string Name(const Param& p) {
  return absl::StrCat(runtime::BackendName(p.backend), p.unix_socket ? "_unix" : "_tcp");
}

class TransportTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    auto loop = EventLoop::Create(GetParam().backend);
    if (!loop.ok()) GTEST_SKIP() << loop.status();
    loop_ = std::move(*loop);
    std::string listen = "127.0.0.1:0";
    if (GetParam().unix_socket) {
      // /tmp, not TempDir(): a unix socket path must fit in 108 bytes.
      listen = absl::StrCat("unix:/tmp/ringrpc-", std::random_device()(), "-", counter_++, ".sock");
    }
    auto server = testing::ServerProcess::Start(listen);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  void TearDown() override {
    conn_.reset();
    server_.reset();
    loop_.reset();
  }

  // Runs `task` on the loop until it finishes (at most `limit`).
  template <typename T>
  T Run(Task<T> task) {
    return runtime::testing::RunToCompletion(*loop_, std::move(task));
  }

  ConnPtr Connect(ConnectionOptions options = {}) {
    auto addr = Address::Parse(server_->address());
    EXPECT_TRUE(addr.ok()) << addr.status();
    absl::StatusOr<ConnPtr> c = Run(Http2Connection::Connect(*loop_, *addr, options));
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : nullptr;
  }

  static std::string Req(const EchoRequest& r) { return r.SerializeAsString(); }

  struct Reply {
    absl::Status status;
    std::vector<EchoResponse> messages;
    Metadata initial, trailing;
  };

  // One call: writes `requests`, half-closes, reads everything, finishes.
  static Task<Reply> DoCall(ConnPtr conn, std::string path, std::vector<EchoRequest> requests,
                            Http2Connection::CallOptions options = {}) {
    options.path = path;
    Reply reply;
    absl::StatusOr<std::unique_ptr<Call>> call = conn->StartCall(std::move(options));
    if (!call.ok()) {
      reply.status = call.status();
      co_return reply;
    }
    for (const EchoRequest& r : requests) {
      absl::Status s = co_await (*call)->Write(r.SerializeAsString());
      if (!s.ok()) break;
    }
    (*call)->WritesDone();
    while (std::optional<std::string> m = co_await (*call)->Read()) {
      EchoResponse resp;
      EXPECT_TRUE(resp.ParseFromString(*m));
      reply.messages.push_back(std::move(resp));
    }
    reply.status = co_await (*call)->Finish();
    reply.initial = (*call)->initial_metadata();
    reply.trailing = (*call)->trailing_metadata();
    co_return reply;
  }

  Reply Call1(ConnPtr conn, std::string path, EchoRequest req,
              Http2Connection::CallOptions options = {}) {
    return Run(DoCall(conn, path, {req}, std::move(options)));
  }

  int64_t ServerCancelledCount(ConnPtr conn) {
    Reply r = Run(DoCall(conn, kStats, {EchoRequest()}));
    if (!r.status.ok() || r.messages.empty()) return -1;
    test::StatsResponse stats;
    // Stats replies with StatsResponse; reparse the raw payload.
    stats.ParseFromString(r.messages[0].SerializeAsString());
    return stats.cancelled();
  }

  static inline int counter_ = 0;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<testing::ServerProcess> server_;
  ConnPtr conn_;
};

TEST_P(TransportTest, UnaryEcho) {
  ConnPtr c = Connect();
  ASSERT_NE(c, nullptr);
  EchoRequest req;
  req.set_payload("hello ringrpc");
  Reply r = Call1(c, kUnary, req);
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].payload(), "hello ringrpc");
  // grpc++ sends no MAX_CONCURRENT_STREAMS: our cap bounds the connection.
  EXPECT_EQ(c->max_concurrent_streams(), 1000u);  // our default cap: grpc++ sets no limit
  EXPECT_EQ(c->active_calls(), 0u);
}

TEST_P(TransportTest, EmptyMessagesBothWays) {
  ConnPtr c = Connect();
  Reply r = Call1(c, kUnary, EchoRequest());
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].ByteSizeLong(), 0u);
}

TEST_P(TransportTest, ServerStreamingTenThousandMessages) {
  ConnPtr c = Connect();
  EchoRequest req;
  req.set_count(10000);
  req.set_response_size(10);
  Reply r = Call1(c, kServerStream, req);
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.messages.size(), 10000u);
  for (int i = 0; i < 10000; ++i) ASSERT_EQ(r.messages[i].count(), i);
}

TEST_P(TransportTest, ClientStreaming) {
  ConnPtr c = Connect();
  std::vector<EchoRequest> reqs(500);
  for (size_t i = 0; i < reqs.size(); ++i) reqs[i].set_payload(std::string(i % 50, 'p'));
  Reply r = Run(DoCall(c, kClientStream, reqs));
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].count(), 500);
  int64_t bytes = 0;
  for (size_t i = 0; i < reqs.size(); ++i) bytes += i % 50;
  EXPECT_EQ(r.messages[0].total_bytes(), bytes);
}

Task<absl::Status> PingPong(ConnPtr conn, int rounds, int* matched) {
  absl::StatusOr<std::unique_ptr<Call>> call = conn->StartCall({.path = kBidi});
  if (!call.ok()) co_return call.status();
  for (int i = 0; i < rounds; ++i) {
    EchoRequest req;
    req.set_payload(absl::StrCat("ping ", i));
    absl::Status s = co_await (*call)->Write(req.SerializeAsString());
    if (!s.ok()) co_return s;
    std::optional<std::string> m = co_await (*call)->Read();
    if (!m) break;
    EchoResponse resp;
    resp.ParseFromString(*m);
    if (resp.payload() == req.payload() && resp.count() == i) ++*matched;
  }
  (*call)->WritesDone();
  while (co_await (*call)->Read()) {
  }
  co_return co_await (*call)->Finish();
}

TEST_P(TransportTest, BidiPingPongThousandRoundTrips) {
  ConnPtr c = Connect();
  int matched = 0;
  absl::Status s = Run(PingPong(c, 1000, &matched));
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(matched, 1000);
}

TEST_P(TransportTest, SixteenMiBMessagesWithRaisedLimits) {
  ConnectionOptions o;
  o.max_receive_message_size = 64 << 20;
  ConnPtr c = Connect(o);
  EchoRequest req;
  req.set_payload(std::string(16 << 20, 'b'));
  Reply r = Call1(c, kUnary, req);
  ASSERT_TRUE(r.status.ok()) << r.status;
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].payload().size(), size_t{16 << 20});
  EXPECT_EQ(r.messages[0].payload(), req.payload());
}

TEST_P(TransportTest, OverTheReceiveLimitIsResourceExhausted) {
  ConnPtr c = Connect();  // default: 4 MiB
  EchoRequest req;
  req.set_response_size(5 << 20);
  Reply r = Call1(c, kUnary, req);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kResourceExhausted) << r.status;
  EXPECT_THAT(std::string(r.status.message()), HasSubstr("larger than max"));
  // The connection is fine for the next call.
  Reply ok = Call1(c, kUnary, EchoRequest());
  EXPECT_TRUE(ok.status.ok()) << ok.status;
}

TEST_P(TransportTest, OverTheSendLimitIsResourceExhausted) {
  ConnectionOptions o;
  o.max_send_message_size = 1024;
  ConnPtr c = Connect(o);
  EchoRequest req;
  req.set_payload(std::string(2000, 'z'));
  Reply r = Call1(c, kUnary, req);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kResourceExhausted) << r.status;
  EXPECT_THAT(std::string(r.status.message()), HasSubstr("sent message larger than max"));
}

TEST_P(TransportTest, DeadlineEndsTheCallOnTimeAndTheServerSeesIt) {
  ConnPtr c = Connect();
  EchoRequest req;
  req.set_sleep_ms(3000);
  loop_->RunOnce(Duration::zero());
  TimePoint start = loop_->Now();
  Reply r = Call1(c, kUnary, req, {.deadline = start + milliseconds(150)});
  Duration took = Clock::now() - start;
  EXPECT_EQ(r.status.code(), absl::StatusCode::kDeadlineExceeded) << r.status;
  // Whichever side's timer fires first ends it; grpc++ measures the
  // deadline from its own cached clock and can answer a fraction of a
  // millisecond before 150 ms of ours ("Deadline Exceeded", seen here).
  EXPECT_GE(took, milliseconds(145)) << r.status;
  EXPECT_LT(took, milliseconds(150 + 20));
}

TEST_P(TransportTest, CancelMidStreamEndsCancelledAndTheServerSeesIt) {
  ConnPtr c = Connect();
  int64_t before = ServerCancelledCount(c);
  auto cancel_after = [](ConnPtr conn, int n) -> Task<absl::Status> {
    EchoRequest req;
    req.set_count(1000);
    req.set_interval_ms(5);
    auto call = conn->StartCall({.path = kServerStream});
    (void)co_await (*call)->Write(req.SerializeAsString());  // Finish has the status
    (*call)->WritesDone();
    for (int i = 0; i < n; ++i) co_await (*call)->Read();
    (*call)->Cancel();
    co_return co_await (*call)->Finish();
  };
  absl::Status s = Run(cancel_after(c, 3));
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  int64_t after = before;
  for (int i = 0; i < 100 && after == before; ++i) {
    ::usleep(20000);
    after = ServerCancelledCount(c);
  }
  EXPECT_EQ(after, before + 1);
}

TEST_P(TransportTest, ErrorStatusMessageWithNonAsciiAndPercent) {
  ConnPtr c = Connect();
  EchoRequest req;
  req.set_status_code(9);
  req.set_status_message("100% broken: ünïcødé ✓ \"quoted\"");
  Reply r = Call1(c, kUnary, req);
  EXPECT_EQ(r.status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status.message(), req.status_message());
  EXPECT_TRUE(r.messages.empty());
}

TEST_P(TransportTest, MetadataRoundTripAsciiAndBinaryInitialAndTrailing) {
  ConnPtr c = Connect();
  std::string binary("\x00\x01\x7f\x80\xff", 5);
  Reply r = Call1(c, kUnary, EchoRequest(),
                  {.metadata = {{"x-echo-plain", "value 1"},
                                {"x-echo-blob-bin", binary},
                                {"x-trailer-t", "at the end"}}});
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_THAT(r.initial,
              ::testing::Contains(std::pair<std::string, std::string>("x-echo-plain", "value 1")));
  EXPECT_THAT(r.initial,
              ::testing::Contains(std::pair<std::string, std::string>("x-echo-blob-bin", binary)));
  EXPECT_THAT(r.trailing, ::testing::Contains(
                              std::pair<std::string, std::string>("x-trailer-t", "at the end")));
}

TEST_P(TransportTest, BadMetadataIsRejectedBeforeAnythingIsSent) {
  ConnPtr c = Connect();
  auto bad = c->StartCall({.path = kUnary, .metadata = {{"X-Upper", "v"}}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  auto reserved = c->StartCall({.path = kUnary, .metadata = {{"grpc-timeout", "1S"}}});
  EXPECT_EQ(reserved.status().code(), absl::StatusCode::kInvalidArgument);
  auto nonascii = c->StartCall({.path = kUnary, .metadata = {{"x-a", "caf\xc3\xa9"}}});
  EXPECT_EQ(nonascii.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c->stats().streams_started, 0u);
}

TEST_P(TransportTest, UnknownMethodIsUnimplemented) {
  ConnPtr c = Connect();
  Reply r = Call1(c, "/ringrpc.test.TestService/NoSuchMethod", EchoRequest());
  EXPECT_EQ(r.status.code(), absl::StatusCode::kUnimplemented) << r.status;
}

TEST_P(TransportTest, ServerKilledMidCallIsUnavailablePromptly) {
  ConnPtr c = Connect();
  EchoRequest req;
  req.set_sleep_ms(5000);
  auto call = c->StartCall({.path = kUnary});
  ASSERT_TRUE(call.ok());
  auto run = [](Call* call, EchoRequest req) -> Task<absl::Status> {
    (void)co_await call->Write(req.SerializeAsString());  // Finish has the status
    call->WritesDone();
    co_return co_await call->Finish();
  };
  Task<absl::Status> t = run(call->get(), req);
  t.handle().resume();
  for (int i = 0; i < 5; ++i) loop_->RunOnce(milliseconds(20));
  TimePoint killed = Clock::now();
  server_->Kill();
  while (!t.done()) loop_->RunOnce(milliseconds(20));
  EXPECT_EQ(t.result().code(), absl::StatusCode::kUnavailable) << t.result();
  EXPECT_LT(Clock::now() - killed, milliseconds(500));
  EXPECT_FALSE(c->accepting_streams());
  EXPECT_EQ(c->StartCall({.path = kUnary}).status().code(), absl::StatusCode::kUnavailable);
}

TEST_P(TransportTest, GracefulShutdownFinishesInFlightCallsAndRefusesNewOnes) {
  ConnPtr c = Connect();
  EchoRequest req;
  req.set_sleep_ms(400);
  req.set_payload("finish me");
  Task<Reply> t = DoCall(c, kUnary, {req});
  t.handle().resume();
  for (int i = 0; i < 5; ++i) loop_->RunOnce(milliseconds(10));
  server_->Signal(SIGTERM);  // GOAWAY, then drain
  while (!t.done()) loop_->RunOnce(milliseconds(20));
  ASSERT_TRUE(t.result().status.ok()) << t.result().status;
  EXPECT_EQ(t.result().messages.at(0).payload(), "finish me");
  for (int i = 0; i < 50 && c->accepting_streams(); ++i) loop_->RunOnce(milliseconds(20));
  EXPECT_FALSE(c->accepting_streams());
  auto refused = c->StartCall({.path = kUnary});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
}

TEST_P(TransportTest, KeepaliveDeclaresAStoppedServerDead) {
  ConnectionOptions o;
  o.keepalive_time = milliseconds(200);
  o.keepalive_timeout = milliseconds(300);
  ConnPtr c = Connect(o);
  EchoRequest req;
  req.set_sleep_ms(60000);
  Task<Reply> t = DoCall(c, kUnary, {req});
  t.handle().resume();
  loop_->RunOnce(milliseconds(10));
  server_->Signal(SIGSTOP);
  TimePoint stopped = Clock::now();
  while (!t.done() && Clock::now() - stopped < std::chrono::seconds(5)) {
    loop_->RunOnce(milliseconds(20));
  }
  server_->Signal(SIGCONT);
  ASSERT_TRUE(t.done());
  EXPECT_EQ(t.result().status.code(), absl::StatusCode::kUnavailable) << t.result().status;
  EXPECT_THAT(std::string(t.result().status.message()), HasSubstr("keepalive"));
  EXPECT_LT(Clock::now() - stopped, milliseconds(200 + 300 + 1000));
  EXPECT_GE(c->stats().pings_sent, 1u);
}

TEST_P(TransportTest, NoKeepalivePingsOnAnIdleConnectionUnlessPermitted) {
  ConnectionOptions o;
  o.keepalive_time = milliseconds(50);
  ConnPtr c = Connect(o);
  for (int i = 0; i < 20; ++i) loop_->RunOnce(milliseconds(20));
  EXPECT_EQ(c->stats().pings_sent, 0u);
  ConnectionOptions p = o;
  p.keepalive_permit_without_calls = true;
  ConnPtr d = Connect(p);
  for (int i = 0; i < 20; ++i) loop_->RunOnce(milliseconds(20));
  EXPECT_GE(d->stats().pings_sent, 1u);
  EXPECT_LE(d->stats().pings_sent, 2u);  // max_pings_without_data
}

TEST_P(TransportTest, ManyConcurrentCallsOnOneConnection) {
  ConnPtr c = Connect();
  std::vector<Task<Reply>> calls;
  for (int i = 0; i < 64; ++i) {
    EchoRequest req;
    req.set_payload(absl::StrCat("call ", i));
    calls.push_back(DoCall(c, kUnary, {req}));
    calls.back().handle().resume();
  }
  auto end = Clock::now() + std::chrono::seconds(10);
  auto all_done = [&] {
    for (auto& t : calls)
      if (!t.done()) return false;
    return true;
  };
  while (!all_done() && Clock::now() < end) loop_->RunOnce(milliseconds(20));
  ASSERT_TRUE(all_done());
  for (int i = 0; i < 64; ++i) {
    ASSERT_TRUE(calls[i].result().status.ok()) << calls[i].result().status;
    EXPECT_EQ(calls[i].result().messages.at(0).payload(), absl::StrCat("call ", i));
  }
}

// Issue 11, bug 1: a call that ends before nghttp2 has written its HEADERS
// (cancelled, destroyed, or over the send limit in the same turn as its
// start) must leave nothing behind in nghttp2: no pointer to the freed Call
// (ReadData would read its buffer; a new Call at the same address would
// get that stream's response) and no RST_STREAM for a stream the server
// never saw (a connection error). Calls started in the same turn, before
// and after, each get their own response.
TEST_P(TransportTest, CallsEndedBeforeTheirHeadersWentOutLeaveNothingBehind) {
  ConnectionOptions o;
  o.max_send_message_size = 4096;
  ConnPtr c = Connect(o);
  for (int round = 0; round < 20; ++round) {
    std::vector<Task<Reply>> kept;
    for (int i = 0; i < 24; ++i) {
      auto call = c->StartCall({.path = kUnary});
      ASSERT_TRUE(call.ok()) << call.status();
      EchoRequest req;
      req.set_payload(std::string(100, 'x'));
      ASSERT_TRUE((*call)->Enqueue(req.SerializeAsString()).ok());
      switch (i % 3) {
        case 0:
          break;  // destroyed with its DATA queued
        case 1:
          (*call)->Cancel();
          break;  // cancelled, then destroyed
        case 2:   // over the send limit in the turn it started
          EXPECT_EQ((*call)->Enqueue(std::string(5000, 'y')).code(),
                    absl::StatusCode::kResourceExhausted);
          break;
      }
      call->reset();
      // A new call, likely at the freed Call's address.
      EchoRequest mine;
      mine.set_payload(absl::StrCat("round ", round, " call ", i));
      kept.push_back(DoCall(c, kUnary, {mine}));
      kept.back().handle().resume();
    }
    auto end = Clock::now() + std::chrono::seconds(20);
    auto all_done = [&] {
      for (auto& t : kept)
        if (!t.done()) return false;
      return true;
    };
    while (!all_done() && Clock::now() < end) loop_->RunOnce(milliseconds(20));
    ASSERT_TRUE(all_done());
    for (int i = 0; i < 24; ++i) {
      const Reply& r = kept[i].result();
      ASSERT_TRUE(r.status.ok()) << r.status;
      ASSERT_EQ(r.messages.size(), 1u);
      EXPECT_EQ(r.messages[0].payload(), absl::StrCat("round ", round, " call ", i));
    }
  }
  EXPECT_TRUE(c->accepting_streams()) << c->close_reason();
  EXPECT_EQ(c->active_calls(), 0u);
}

// Every frame pending after a loop pass goes out in one send.
TEST_P(TransportTest, CallsStartedInOneTurnGoOutInOneSend) {
  ConnPtr c = Connect();
  for (int i = 0; i < 5; ++i) loop_->RunOnce(milliseconds(5));  // settle
  uint64_t sends = c->stats().sends_with_headers;
  std::vector<Task<Reply>> calls;
  for (int i = 0; i < 10; ++i) {
    EchoRequest req;
    req.set_payload(absl::StrCat("batched ", i));
    calls.push_back(DoCall(c, kUnary, {req}));
    calls.back().handle().resume();  // headers, message and half-close queued
  }
  for (int i = 0; i < 3; ++i) loop_->RunOnce(Duration::zero());
  // All ten calls' HEADERS (and messages) went out in one socket write.
  EXPECT_EQ(c->stats().sends_with_headers - sends, 1u);
  for (auto& t : calls) {
    while (!t.done()) loop_->RunOnce(milliseconds(10));
    EXPECT_TRUE(t.result().status.ok()) << t.result().status;
  }
}

INSTANTIATE_TEST_SUITE_P(All, TransportTest,
                         ::testing::Values(Param{Backend::kIoUring, false},
                                           Param{Backend::kIoUring, true},
                                           Param{Backend::kEpoll, false},
                                           Param{Backend::kEpoll, true}),
                         [](const auto& info) { return Name(info.param); });

// Quiesces `c` (its reader gives up its receive), running `loop`.
bool Quiesce(EventLoop& loop, Http2Connection& c) {
  for (int i = 0; i < 200; ++i) {
    if (c.TryQuiesce()) return true;
    loop.RunOnce(milliseconds(5));
  }
  return false;
}

TEST_P(TransportTest, AQuietConnectionStillServesCalls) {
  ConnPtr c = Connect();
  ASSERT_TRUE(Quiesce(*loop_, *c));
  EXPECT_TRUE(c->Quiescent());
  EchoRequest req;
  req.set_payload("after quiet");
  Reply r = Call1(c, kUnary, req);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.messages.at(0).payload(), "after quiet");
  EXPECT_FALSE(c->Quiescent()) << "a call brings the receive back";
  EXPECT_TRUE(Call1(c, kUnary, req).status.ok());
}

TEST_P(TransportTest, DetachedConnectionWorksOnAnotherLoopWithoutANewHandshake) {
  ConnPtr c = Connect();
  EchoRequest req;
  req.set_payload("before");
  req.set_want_peer(true);
  Reply first = Call1(c, kUnary, req);
  ASSERT_TRUE(first.status.ok()) << first.status;
  const std::string peer = first.messages.at(0).peer();
  ASSERT_FALSE(peer.empty());
  ASSERT_TRUE(Quiesce(*loop_, *c));
  absl::StatusOr<DetachedConnection> d = Http2Connection::Detach(std::move(c));
  ASSERT_TRUE(d.ok()) << d.status();
  for (int i = 0; i < 3; ++i) loop_->RunOnce(milliseconds(5));  // old loop lets go
  auto other = EventLoop::Create(GetParam().backend);
  ASSERT_TRUE(other.ok());
  absl::StatusOr<ConnPtr> moved = Http2Connection::Attach(**other, std::move(*d));
  ASSERT_TRUE(moved.ok()) << moved.status();
  req.set_payload("after");
  Reply second = runtime::testing::RunToCompletion(**other, DoCall(*moved, kUnary, {req}));
  ASSERT_TRUE(second.status.ok()) << second.status;
  EXPECT_EQ(second.messages.at(0).payload(), "after");
  EXPECT_EQ(second.messages.at(0).peer(), peer) << "same TCP connection";
  moved->reset();
  other->reset();
}

TEST_P(TransportTest, OnlyAQuiescentConnectionDetaches) {
  ConnPtr c = Connect();
  EchoRequest req;
  req.set_sleep_ms(300);
  Task<Reply> t = DoCall(c, kUnary, {req});
  t.handle().resume();
  loop_->RunOnce(milliseconds(5));
  EXPECT_FALSE(c->TryQuiesce()) << "a call is in flight";
  ConnPtr second_ref = c;
  absl::StatusOr<DetachedConnection> d = Http2Connection::Detach(std::move(second_ref));
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(d.status().message(), HasSubstr("not quiescent"));
  while (!t.done()) loop_->RunOnce(milliseconds(10));
  EXPECT_TRUE(t.result().status.ok()) << t.result().status;
}

TEST_P(TransportTest, AttachFailsWhenTheServerLeftWhileParked) {
  ConnPtr c = Connect();
  ASSERT_TRUE(Quiesce(*loop_, *c));
  absl::StatusOr<DetachedConnection> d = Http2Connection::Detach(std::move(c));
  ASSERT_TRUE(d.ok()) << d.status();
  server_->Signal(SIGTERM);  // graceful: GOAWAY, then close
  server_.reset();           // waits for the process to exit
  absl::StatusOr<ConnPtr> moved = Http2Connection::Attach(*loop_, std::move(*d));
  ASSERT_FALSE(moved.ok());
  EXPECT_EQ(moved.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(moved.status().message(),
              ::testing::AnyOf(HasSubstr("GOAWAY while parked"), HasSubstr("closed by the server"),
                               HasSubstr("Connection reset")));
}

TEST_P(TransportTest, SlowReaderHoldsTheServerBack) {
  // 2000 messages of 64 KiB (125 MiB) that the reader does not take for a
  // while: flow control follows the reader, so at most the stream window
  // (4 MiB) waits in the client, and then every message arrives.
  ConnPtr c = Connect();
  EchoRequest req;
  req.set_count(2000);
  req.set_response_size(64 << 10);
  auto call = c->StartCall({.path = kServerStream});
  ASSERT_TRUE(call.ok());
  (void)(*call)->Enqueue(req.SerializeAsString());
  (*call)->WritesDone();
  [[maybe_unused]] long rss = ::ringrpc::testing::RssKiB();
  for (int i = 0; i < 30; ++i) loop_->RunOnce(milliseconds(10));
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(::ringrpc::testing::RssKiB() - rss, 16 * 1024)
      << "KiB buffered for a reader that took nothing";
#endif
  auto read_all = [](Call* call) -> Task<int> {
    int n = 0;
    while (std::optional<std::string> m = co_await call->Read()) ++n;
    co_return n;
  };
  EXPECT_EQ(Run(read_all(call->get())), 2000);
  EXPECT_TRUE(Run((*call)->Finish()).ok());
}

TEST(TransportConnect, RefusedIsUnavailableWithTheCause) {
  auto loop = *EventLoop::Create();
  auto addr = *Address::Parse("127.0.0.1:1");
  Task<absl::StatusOr<ConnPtr>> t = Http2Connection::Connect(*loop, addr, {});
  t.handle().resume();
  while (!t.done()) loop->RunOnce(milliseconds(20));
  EXPECT_EQ(t.result().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(t.result().status().message()), HasSubstr("Connection refused"));
}

}  // namespace
}  // namespace ringrpc::transport
