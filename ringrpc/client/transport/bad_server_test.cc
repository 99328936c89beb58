// Bad input from the server: each gives the call a clear status, retires
// the connection where the server broke the protocol, and never crashes or
// hangs (run under ASAN+UBSAN too).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <fstream>
#include <memory>

#include "ringrpc/client/runtime/testing/run_to_completion.h"
#include "ringrpc/client/transport/http2_connection.h"
#include "ringrpc/client/transport/testing/raw_server.h"
#include "tests/testing/process_stats.h"

namespace ringrpc::transport {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;
using namespace testing;  // NOLINT: frame builders

class BadServerTest : public ::testing::Test {
 protected:
  void SetUp() override { loop_ = *EventLoop::Create(); }

  template <typename T>
  T Run(Task<T> task) {
    return runtime::testing::RunToCompletion(*loop_, std::move(task));
  }

  // Connects a plain socket to `server` and adopts it, skipping the wait
  // for SETTINGS, so the scripted bytes answer the call's stream 1.
  std::shared_ptr<Http2Connection> Adopt(const RawServer& server, ConnectionOptions o = {}) {
    int fd = ConnectNonBlocking(server.port());
    EXPECT_GE(fd, 0);
    auto conn = Http2Connection::Adopt(*loop_, fd, *Address::Parse(server.address()), o);
    EXPECT_TRUE(conn.ok()) << conn.status();
    return *conn;
  }

  struct Outcome {
    absl::Status status;
    int messages = 0;
  };
  static Task<Outcome> OneCall(std::shared_ptr<Http2Connection> conn) {
    Outcome out;
    auto call = conn->StartCall({.path = "/x.Y/Z"});
    if (!call.ok()) {
      out.status = call.status();
      co_return out;
    }
    (void)co_await (*call)->Write("request");  // Finish has the status
    (*call)->WritesDone();
    while (co_await (*call)->Read()) ++out.messages;
    out.status = co_await (*call)->Finish();
    co_return out;
  }

  Outcome Scripted(std::string script, bool expect_retired, ConnectionOptions o = {}) {
    RawServer server(std::move(script));
    auto conn = Adopt(server, o);
    Outcome out = Run(OneCall(conn));
    if (expect_retired) {
      EXPECT_FALSE(conn->accepting_streams()) << "connection not retired after: " << out.status;
    }
    return out;
  }

  std::unique_ptr<EventLoop> loop_;
};

TEST_F(BadServerTest, NotHttp2AtAllFailsTheConnect) {
  RawServer server("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
  ConnectionOptions o;
  o.connect_timeout = std::chrono::seconds(3);
  auto t = Http2Connection::Connect(*loop_, *Address::Parse(server.address()), o);
  absl::StatusOr<std::shared_ptr<Http2Connection>> c = Run(std::move(t));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("protocol error"));
}

TEST_F(BadServerTest, MalformedSettingsFailsTheConnect) {
  RawServer server(Frame(kSettings, 0, 0, "12345"));  // not a multiple of 6
  auto t = Http2Connection::Connect(*loop_, *Address::Parse(server.address()), {});
  absl::StatusOr<std::shared_ptr<Http2Connection>> c = Run(std::move(t));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(BadServerTest, SilentServerTimesOutTheConnectWithTheReason) {
  RawServer server("");  // accepts, never speaks
  ConnectionOptions o;
  o.connect_timeout = milliseconds(300);
  auto t = Http2Connection::Connect(*loop_, *Address::Parse(server.address()), o);
  absl::StatusOr<std::shared_ptr<Http2Connection>> c = Run(std::move(t));
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("no HTTP/2 SETTINGS"));
}

TEST_F(BadServerTest, InvalidHpackIsAConnectionError) {
  Outcome o =
      Scripted(ServerSettings() + Frame(kHeaders, kEndHeaders, 1, "\xff\xff\xff\xff\xff"), true);
  EXPECT_EQ(o.status.code(), absl::StatusCode::kUnavailable) << o.status;
  EXPECT_THAT(std::string(o.status.message()), HasSubstr("protocol error"));
}

TEST_F(BadServerTest, LengthPrefixLargerThanTheDataIsInternal) {
  Outcome o = Scripted(
      ServerSettings() + ResponseHeaders(1) + Data(1, GrpcMessage("abc", 0, 16)) + Trailers(1, "0"),
      true);
  EXPECT_EQ(o.status.code(), absl::StatusCode::kInternal) << o.status;
  EXPECT_THAT(std::string(o.status.message()), HasSubstr("middle of a message"));
}

TEST_F(BadServerTest, LengthPrefixOverTheLimitIsResourceExhausted) {
  ConnectionOptions opts;
  opts.max_receive_message_size = 1024;
  Outcome o = Scripted(
      ServerSettings() + ResponseHeaders(1) + Data(1, GrpcMessage("", 0, 0x7fffffff)), false, opts);
  EXPECT_EQ(o.status.code(), absl::StatusCode::kResourceExhausted) << o.status;
}

// The call fails, even though the trailers said OK; the connection (whose
// framing was fine) keeps serving.
TEST_F(BadServerTest, CompressedFlagWithoutEncodingIsInternal) {
  Outcome o = Scripted(
      ServerSettings() + ResponseHeaders(1) + Data(1, GrpcMessage("zz", 1)) + Trailers(1, "0"),
      false);
  EXPECT_EQ(o.status.code(), absl::StatusCode::kInternal) << o.status;
  EXPECT_THAT(std::string(o.status.message()),
              HasSubstr("compressed message without naming its grpc-encoding"));
}

TEST_F(BadServerTest, MissingGrpcStatusIsInternal) {
  Outcome o = Scripted(ServerSettings() + ResponseHeaders(1) + Data(1, GrpcMessage("m")) +
                           Headers(1, true, {{"x-other", "1"}}),
                       true);
  EXPECT_EQ(o.status.code(), absl::StatusCode::kInternal) << o.status;
  EXPECT_THAT(std::string(o.status.message()), HasSubstr("without grpc-status"));
  EXPECT_EQ(o.messages, 0);  // an errored call yields no messages
}

TEST_F(BadServerTest, DataEndingTheStreamWithoutTrailersIsInternal) {
  Outcome o =
      Scripted(ServerSettings() + ResponseHeaders(1) + Data(1, GrpcMessage("m"), true), true);
  EXPECT_EQ(o.status.code(), absl::StatusCode::kInternal) << o.status;
}

TEST_F(BadServerTest, NonNumericGrpcStatusIsInternal) {
  Outcome o = Scripted(ServerSettings() + ResponseHeaders(1) + Trailers(1, "abc"), true);
  EXPECT_EQ(o.status.code(), absl::StatusCode::kInternal) << o.status;
  EXPECT_THAT(std::string(o.status.message()), HasSubstr("malformed grpc-status"));
}

TEST_F(BadServerTest, OutOfRangeGrpcStatusIsUnknown) {
  Outcome o = Scripted(ServerSettings() + ResponseHeaders(1) + Trailers(1, "99", "odd"), false);
  EXPECT_EQ(o.status.code(), absl::StatusCode::kUnknown) << o.status;
  EXPECT_EQ(o.status.message(), "odd");
}

TEST_F(BadServerTest, HttpErrorWithoutGrpcStatusIsMapped) {
  Outcome o = Scripted(ServerSettings() + Headers(1, true, {{":status", "503"}}), false);
  EXPECT_EQ(o.status.code(), absl::StatusCode::kUnavailable) << o.status;
  EXPECT_THAT(std::string(o.status.message()), HasSubstr("503"));
}

TEST_F(BadServerTest, DataAfterTrailersKeepsTheFirstStatus) {
  Outcome o = Scripted(ServerSettings() + ResponseHeaders(1) + Data(1, GrpcMessage("m")) +
                           Trailers(1, "0") + Data(1, GrpcMessage("late")),
                       false);
  EXPECT_TRUE(o.status.ok()) << o.status;
  EXPECT_EQ(o.messages, 1);
}

TEST_F(BadServerTest, FloodOfTinyFramesEndsBoundedly) {
  std::string flood = ServerSettings() + ResponseHeaders(1);
  for (int i = 0; i < 50000; ++i) flood += Frame(kPing, 0, 0, "12345678");
  flood += Data(1, GrpcMessage("m")) + Trailers(1, "0");
  RawServer server(flood);
  auto conn = Adopt(server);
  auto start = Clock::now();
  Outcome o = Run(OneCall(conn));
  // nghttp2 answers PINGs; past its outbound-queue limit it treats the
  // peer as flooding and ends the session. Either way: a status, promptly.
  EXPECT_TRUE(o.status.ok() || o.status.code() == absl::StatusCode::kUnavailable) << o.status;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

TEST_F(BadServerTest, MetadataOverTheLimitIsResourceExhausted) {
  ConnectionOptions opts;
  opts.max_metadata_size = 4096;
  Outcome o =
      Scripted(ServerSettings() +
                   Headers(1, false, {{":status", "200"}, {"x-big", std::string(5000, 'v')}}) +
                   Trailers(1, "0"),
               false, opts);
  EXPECT_EQ(o.status.code(), absl::StatusCode::kResourceExhausted) << o.status;
  EXPECT_THAT(std::string(o.status.message()), HasSubstr("metadata larger than the limit"));
}

TEST_F(BadServerTest, GoawayBelowAnOpenStreamFailsItAsNeverSent) {
  RawServer server(ServerSettings() + Frame(kGoaway, 0, 0, std::string(8, '\0')));
  auto conn = Adopt(server);
  auto call = conn->StartCall({.path = "/x.Y/Z"});
  ASSERT_TRUE(call.ok());
  auto finish = [](Call* c) -> Task<absl::Status> { co_return co_await c->Finish(); };
  absl::Status s = Run(finish(call->get()));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_TRUE((*call)->never_sent());
  EXPECT_FALSE(conn->accepting_streams());
  EXPECT_EQ(conn->StartCall({.path = "/x.Y/Z"}).status().code(), absl::StatusCode::kUnavailable);
}

TEST_F(BadServerTest, PeerMaxConcurrentStreamsIsHonouredAndReported) {
  // SETTINGS_MAX_CONCURRENT_STREAMS (0x3) = 1.
  RawServer server(Frame(kSettings, 0, 0, std::string("\x00\x03\x00\x00\x00\x01", 6)));
  auto t = Http2Connection::Connect(*loop_, *Address::Parse(server.address()), {});
  absl::StatusOr<std::shared_ptr<Http2Connection>> c = Run(std::move(t));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->max_concurrent_streams(), 1u);
  auto first = (*c)->StartCall({.path = "/x.Y/Z"});
  ASSERT_TRUE(first.ok());
  auto second = (*c)->StartCall({.path = "/x.Y/Z"});
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(BadServerTest, StatusDetailsBinAreDecoded) {
  Outcome o;
  RawServer server(ServerSettings() + ResponseHeaders(1) +
                   Headers(1, true,
                           {{"grpc-status", "3"},
                            {"grpc-message", "bad%20arg"},
                            {"grpc-status-details-bin", "AAEC/w=="}}));
  auto conn = Adopt(server);
  auto call = *conn->StartCall({.path = "/x.Y/Z"});
  call->WritesDone();
  auto finish = [](Call* c) -> Task<absl::Status> { co_return co_await c->Finish(); };
  absl::Status s = Run(finish(call.get()));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "bad arg");
  ASSERT_TRUE(call->status_details().has_value());
  EXPECT_EQ(*call->status_details(), std::string("\x00\x01\x02\xff", 4));
}

TEST_F(BadServerTest, ServerClosingMidResponseIsUnavailable) {
  RawServer server(ServerSettings() + ResponseHeaders(1) + Data(1, GrpcMessage("partial", 0, 100)));
  auto conn = Adopt(server);
  auto t = OneCall(conn);
  t.handle().resume();
  for (int i = 0; i < 40; ++i) loop_->RunOnce(milliseconds(10));
  EXPECT_FALSE(t.done());  // waiting for the rest of the message
  conn->Close(absl::UnavailableError("test closes it"));
  while (!t.done()) loop_->RunOnce(milliseconds(10));
  EXPECT_EQ(t.result().status.code(), absl::StatusCode::kUnavailable);
}

TEST_F(BadServerTest, GoawayWhileParkedMeansTheConnectionIsDestroyedNotUsed) {
  RawServer server(ServerSettings(), Frame(kGoaway, 0, 0, std::string(8, '\0')), 300);
  auto conn = Adopt(server);
  bool quiet = false;
  for (int i = 0; i < 200 && !(quiet = conn->TryQuiesce()); ++i) {
    loop_->RunOnce(milliseconds(5));
  }
  ASSERT_TRUE(quiet);
  absl::StatusOr<DetachedConnection> d = Http2Connection::Detach(std::move(conn));
  ASSERT_TRUE(d.ok()) << d.status();
  std::this_thread::sleep_for(milliseconds(600));  // the GOAWAY arrives meanwhile
  absl::StatusOr<std::shared_ptr<Http2Connection>> back =
      Http2Connection::Attach(*loop_, std::move(*d));
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(back.status().message(), HasSubstr("GOAWAY while parked"));
}

// ---- hostile servers: each gets a bounded answer --------------------------------

// Under ASAN freed memory sits in quarantine, so RSS says little there.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kRssMeaningful = false;
#else
constexpr bool kRssMeaningful = true;
#endif

TEST_F(BadServerTest, ContinuationFloodIsCutOffAndRetiresTheConnection) {
  std::string flood = ServerSettings() + Frame(kHeaders, 0, 1, HeaderBlock({{":status", "200"}}));
  std::string junk = HeaderBlock({{"x-junk", std::string(1000, 'j')}});
  for (int i = 0; i < 20000; ++i) flood += Frame(kContinuation, 0, 1, junk);  // 20 MB
  RawServer server(flood);
  auto conn = Adopt(server);
  long rss = ::ringrpc::testing::RssKiB();
  auto start = Clock::now();
  Outcome o = Run(OneCall(conn));
  EXPECT_EQ(o.status.code(), absl::StatusCode::kUnavailable) << o.status;
  EXPECT_THAT(std::string(o.status.message()), HasSubstr("CONTINUATION"));
  EXPECT_FALSE(conn->accepting_streams());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  if (kRssMeaningful) {
    EXPECT_LT(::ringrpc::testing::RssKiB() - rss, 8 * 1024) << "KiB grown";
  }
}

TEST_F(BadServerTest, SettingsFloodEndsBoundedly) {
  std::string flood = ServerSettings();
  for (int i = 0; i < 200000; ++i) flood += Frame(kSettings, 0, 0, "");  // each wants an ACK
  RawServer server(flood);
  auto conn = Adopt(server);
  long rss = ::ringrpc::testing::RssKiB();
  auto start = Clock::now();
  Outcome o = Run(OneCall(conn));
  // nghttp2 caps queued ACKs and ends the session as flooded; never a hang.
  EXPECT_EQ(o.status.code(), absl::StatusCode::kUnavailable) << o.status;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  if (kRssMeaningful) {
    EXPECT_LT(::ringrpc::testing::RssKiB() - rss, 16 * 1024) << "KiB grown";
  }
}

TEST_F(BadServerTest, WindowUpdateOverflowIsAConnectionError) {
  std::string overflow = ServerSettings();
  std::string inc("\x7f\xff\xff\xff", 4);  // 2^31 - 1, twice: past the maximum window
  overflow += Frame(kWindowUpdate, 0, 0, inc) + Frame(kWindowUpdate, 0, 0, inc);
  Outcome o = Scripted(overflow, /*expect_retired=*/true);
  EXPECT_EQ(o.status.code(), absl::StatusCode::kUnavailable) << o.status;
}

TEST_F(BadServerTest, AServerIgnoringFlowControlHasItsStreamReset) {
  // 64 MiB of messages blasted past the 4 MiB stream window to a reader
  // that takes nothing: the stream is reset, nothing beyond the window is
  // buffered. (A server that respects the window is held back instead:
  // http2_connection_test's SlowReaderHoldsTheServerBack.)
  std::string endless = ServerSettings() + ResponseHeaders(1);
  std::string chunk = Data(1, GrpcMessage(std::string(16379, 'd')));  // one 16 KiB frame
  for (int i = 0; i < 4096; ++i) endless += chunk;
  RawServer server(endless);
  auto conn = Adopt(server);
  long rss = ::ringrpc::testing::RssKiB();
  auto call = conn->StartCall({.path = "/x.Y/Z"});
  ASSERT_TRUE(call.ok());
  (void)(*call)->Enqueue("request");
  (*call)->WritesDone();
  absl::Status s = Run((*call)->Finish());
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("FLOW_CONTROL_ERROR"));
  if (kRssMeaningful) {
    EXPECT_LT(::ringrpc::testing::RssKiB() - rss, 12 * 1024) << "KiB buffered";
  }
}

// A server trickling a large message a few KiB per receive must not make
// each few KiB hold a 64 KiB receive block (a 16x memory amplification):
// such bytes are copied, and the message comes up as one string of its own.
TEST_F(BadServerTest, ATrickledLargeMessageHoldsNoReceiveBlock) {
  const std::string message = GrpcMessage(std::string(10000, 'x'));
  RawServer server(ServerSettings() + ResponseHeaders(1) + Data(1, message.substr(0, 6000)),
                   Data(1, message.substr(6000)) + Trailers(1, "0"), /*delay_ms=*/200);
  auto conn = Adopt(server);
  struct Got {
    std::optional<ByteBuffer> message;
    absl::Status status;
  };
  Got got = Run([](std::shared_ptr<Http2Connection> conn) -> Task<Got> {
    Got out;
    auto call = conn->StartCall({.path = "/x.Y/Z"});
    if (!call.ok()) {
      out.status = call.status();
      co_return out;
    }
    (void)co_await (*call)->Write("request");
    (*call)->WritesDone();
    out.message = co_await (*call)->ReadBuffer();
    out.status = co_await (*call)->Finish();
    co_return out;
  }(conn));
  ASSERT_TRUE(got.status.ok()) << got.status;
  ASSERT_TRUE(got.message.has_value());
  EXPECT_EQ(got.message->size(), 10000u);
  EXPECT_TRUE(got.message->flat()) << "a trickled message kept slices of receive blocks";
}

}  // namespace
}  // namespace ringrpc::transport
