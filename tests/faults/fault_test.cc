// The fault suite: each scenario runs a closed-loop load of callback-API
// unary calls through a channel while something goes wrong, then checks
// what every scenario must keep: every call ended exactly once with a
// status; no call ended later than its deadline by more than 20 ms; the
// pool's conservation identity holds; once the channel is gone, the
// process has no more sockets open than before it.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/channel.h"
#include "ringrpc/client/resolver.h"
#include "ringrpc/client/transport/testing/raw_server.h"
#include "tests/faults/load.h"
#include "tests/proto/echo_test.pb.h"
#include "tests/testing/loopback.h"
#include "tests/testing/server_process.h"

namespace ringrpc {
namespace {

using testing::Load;
using testing::OpenSockets;

using std::chrono::milliseconds;
using Clock = std::chrono::system_clock;
using test::EchoRequest;

// What every scenario checks at its end.
void ExpectInvariants(Load& load, Channel& channel) {
  load.Stop();
  Load::Report r = load.Summary();
  EXPECT_EQ(r.outstanding, 0) << "calls still running after 15 s";
  EXPECT_EQ(r.not_ended, 0u);
  EXPECT_EQ(r.ended_more, 0u) << "a call ended more than once";
  EXPECT_EQ(r.ended_once, r.issued);
  EXPECT_LE(r.worst_overrun_ms, 20.0) << "a call outlived its deadline";
  pool::PoolMetrics m = channel.Metrics();
  EXPECT_TRUE(m.Conserved()) << m.ToString();
}

// After the channel is gone its sockets close (on their CQ threads).
void ExpectSocketsBackTo(int baseline) {
  int now = OpenSockets();
  for (int i = 0; i < 300 && now > baseline; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
    now = OpenSockets();
  }
  if (now > baseline) {  // say which: the socket table shows their states
    std::ifstream tcp("/proc/net/tcp");
    std::string line, all;
    while (std::getline(tcp, line)) all += line + "\n";
    ADD_FAILURE() << "sockets leaked: " << now << " open, " << baseline << " before\n" << all;
  }
}

std::unique_ptr<testing::ServerProcess> Server(std::string listen = "127.0.0.1:0") {
  auto s = testing::ServerProcess::Start(listen);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

TEST(Faults, ServerKilledUnderLoadThenRestartedOnTheSamePort) {
  auto server = Server();
  const int port = server->port();
  const int sockets = OpenSockets();
  {
    ChannelArguments args;
    args.SetInt("grpc.initial_reconnect_backoff_ms", 50);
    args.SetInt("grpc.min_reconnect_backoff_ms", 50);
    args.SetInt("grpc.max_reconnect_backoff_ms", 100);
    auto channel = CreateCustomChannel(server->address(), InsecureChannelCredentials(), args);
    Load load(channel.get(), 8, milliseconds(1000), /*sleep_ms=*/2);
    load.Start();
    std::this_thread::sleep_for(milliseconds(300));
    server->Kill();
    std::this_thread::sleep_for(milliseconds(300));
    size_t ok_before = load.ok_count();
    server = Server(absl::StrCat("127.0.0.1:", port));
    ASSERT_NE(server, nullptr);
    std::this_thread::sleep_for(milliseconds(800));
    EXPECT_GT(load.ok_count(), ok_before + 50) << "calls did not recover after the restart";
    ExpectInvariants(load, *channel);
    Load::Report r = load.Summary();
    EXPECT_GT(r.count(StatusCode::UNAVAILABLE), 0) << "the kill was not seen";
    for (auto [code, n] : r.codes) {
      EXPECT_TRUE(code == StatusCode::OK || code == StatusCode::UNAVAILABLE ||
                  code == StatusCode::DEADLINE_EXCEEDED)
          << StatusCodeName(code) << " x" << n;
    }
  }
  ExpectSocketsBackTo(sockets);
}

TEST(Faults, AServerThatAcceptsAndNeverAnswersEndsEveryCallAtItsDeadline) {
  transport::testing::RawServer silent("");  // takes bytes, says nothing
  const int sockets = OpenSockets();
  {
    auto channel = CreateChannel(silent.address(), InsecureChannelCredentials());
    Load load(channel.get(), 4, milliseconds(150));
    load.Start();
    std::this_thread::sleep_for(milliseconds(700));
    ExpectInvariants(load, *channel);
    Load::Report r = load.Summary();
    EXPECT_GE(r.issued, 12u);
    EXPECT_EQ(r.count(StatusCode::DEADLINE_EXCEEDED), static_cast<int>(r.issued)) << r.first_error;
  }
  ExpectSocketsBackTo(sockets);
}

TEST(Faults, GoawayWithALowLastStreamIdWhileManyStreamsAreOpen) {
  using namespace transport::testing;  // NOLINT: frame builders
  // GOAWAY(last stream 1) 150 ms after the first bytes: stream 1 was
  // "processed" (and never answered), every later stream was not.
  std::string goaway = Frame(kGoaway, 0, 0, std::string("\0\0\0\x01\0\0\0\0", 8));
  RawServer server(ServerSettings(), goaway, 150);
  const int sockets = OpenSockets();
  {
    auto channel = CreateChannel(server.address(), InsecureChannelCredentials());
    // Each connection takes ~350 ms to reach its GOAWAY (the raw server
    // answers the preface after 200 ms): a deadline that outlives one
    // transparent retry, so the retried calls end UNAVAILABLE.
    Load load(channel.get(), 16, milliseconds(1500));
    load.Start();
    std::this_thread::sleep_for(milliseconds(1200));
    ExpectInvariants(load, *channel);
    Load::Report r = load.Summary();
    EXPECT_GT(r.count(StatusCode::UNAVAILABLE), 0) << "refused streams are UNAVAILABLE";
    EXPECT_GT(r.count(StatusCode::DEADLINE_EXCEEDED), 0) << "stream 1 waits for its deadline";
    EXPECT_EQ(r.count(StatusCode::UNAVAILABLE) + r.count(StatusCode::DEADLINE_EXCEEDED),
              static_cast<int>(r.issued));
  }
  ExpectSocketsBackTo(sockets);
}

TEST(Faults, ConnectionsResetByThePeerEndCallsUnavailableNamingIt) {
  using namespace transport::testing;  // NOLINT: frame builders
  // Every connection: SETTINGS, then an RST 100 ms later, calls in flight.
  RawServer server(ServerSettings(), "", 100, /*reset=*/true);
  const int sockets = OpenSockets();
  {
    auto channel = CreateChannel(server.address(), InsecureChannelCredentials());
    Load load(channel.get(), 8, milliseconds(1000));
    load.Start();
    std::this_thread::sleep_for(milliseconds(800));
    ExpectInvariants(load, *channel);
    Load::Report r = load.Summary();
    EXPECT_GT(r.count(StatusCode::UNAVAILABLE), 0);
    EXPECT_THAT(r.first_error, ::testing::HasSubstr("reset by peer")) << r.first_error;
    EXPECT_EQ(r.count(StatusCode::UNAVAILABLE) + r.count(StatusCode::DEADLINE_EXCEEDED),
              static_cast<int>(r.issued));
  }
  ExpectSocketsBackTo(sockets);
}

TEST(Faults, InvalidateStormsAndResolverFlappingUnderLoadLoseNoCall) {
  auto a = Server();
  auto b = Server();
  auto addr = [](const testing::ServerProcess& s) {
    return *transport::Address::Parse(s.address());
  };
  const int sockets = OpenSockets();
  {
    auto resolver = std::make_shared<ManualResolver>();
    resolver->Push(AddressList{addr(*a)});
    ChannelArguments args;
    args.SetLoadBalancingPolicyName("round_robin");
    auto ch = CreateChannelWithResolver("test", resolver, args);
    Load load(ch.get(), 8, milliseconds(2000));
    load.Start();
    auto until = std::chrono::steady_clock::now() + milliseconds(1000);
    for (int i = 0; std::chrono::steady_clock::now() < until; ++i) {
      if (i % 2 == 0) {
        resolver->Push(AddressList{addr(*a), addr(*b)});
      } else {
        resolver->Push(AddressList{addr(*b)});
      }
      ch->Invalidate();
      std::this_thread::sleep_for(milliseconds(3));
    }
    ExpectInvariants(load, *ch);
    Load::Report r = load.Summary();
    EXPECT_EQ(r.count(StatusCode::OK), static_cast<int>(r.issued)) << r.first_error;
    EXPECT_GT(r.issued, 100u);
    EXPECT_GT(ch->Metrics().retired[size_t(pool::RetireReason::kGeneration)], 10u);
  }
  ExpectSocketsBackTo(sockets);
}

TEST(Faults, AStoppedServerIsDeclaredDeadByKeepalive) {
  auto server = Server();
  const int sockets = OpenSockets();
  {
    ChannelArguments args;
    args.SetInt("grpc.keepalive_time_ms", 200);
    args.SetInt("grpc.keepalive_timeout_ms", 200);
    auto channel = CreateCustomChannel(server->address(), InsecureChannelCredentials(), args);
    Load load(channel.get(), 4, milliseconds(3000), /*sleep_ms=*/1);
    load.Start();
    std::this_thread::sleep_for(milliseconds(200));
    server->Signal(SIGSTOP);  // black hole: the socket stays open, nothing answers
    auto stopped = std::chrono::steady_clock::now();
    // Within keepalive time + timeout (+ slack) the calls in flight fail.
    std::this_thread::sleep_for(milliseconds(700));
    Load::Report mid = load.Summary();
    EXPECT_GT(mid.count(StatusCode::UNAVAILABLE), 0)
        << "no keepalive failure "
        << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - stopped)
               .count()
        << " ms after the stop; first error: " << mid.first_error;
    server->Signal(SIGCONT);
    ExpectInvariants(load, *channel);
    Load::Report r = load.Summary();
    bool keepalive_named = r.first_error.find("keepalive") != std::string::npos;
    EXPECT_TRUE(keepalive_named) << r.first_error;
  }
  ExpectSocketsBackTo(sockets);
}

// A loopback TCP proxy the test controls: forwards both ways until told
// to black-hole, then keeps reading and drops everything (the client's
// sends succeed; nothing comes back), as a dead network path would.
class BlackHoleProxy {
 public:
  explicit BlackHoleProxy(int upstream_port) : upstream_port_(upstream_port) {
    sockaddr_in a{};
    listen_fd_ = testing::ListenLoopback(8, &a);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { Accept(); });
  }
  ~BlackHoleProxy() {
    stop_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    acceptor_.join();
    for (std::thread& t : pumps_) t.join();
    ::close(listen_fd_);
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  void BlackHole() { black_hole_ = true; }

 private:
  void Accept() {
    for (;;) {
      int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) return;
      int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(upstream_port_);
      ::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof a);
      pumps_.emplace_back([this, client, server] { Pump(client, server); });
    }
  }
  // Copies bytes both ways (poll with a short timeout so it can stop).
  void Pump(int client, int server) {
    char buf[16384];
    pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
    while (!stop_) {
      if (::poll(fds, 2, 20) <= 0) continue;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].revents == 0) continue;
        ssize_t n = ::recv(fds[i].fd, buf, sizeof buf, 0);
        if (n <= 0) {
          CloseBoth(client, server);
          return;
        }
        if (black_hole_) continue;  // swallowed
        int to = i == 0 ? server : client;
        if (::send(to, buf, n, MSG_NOSIGNAL) != n) {
          CloseBoth(client, server);
          return;
        }
      }
    }
    CloseBoth(client, server);
  }
  static void CloseBoth(int a, int b) {
    ::close(a);
    ::close(b);
  }

  int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> black_hole_{false};
  std::thread acceptor_;
  std::vector<std::thread> pumps_;  // the acceptor's only, until joined
};

TEST(Faults, APathThatBlackHolesTrafficIsDeclaredDeadByKeepalive) {
  auto server = Server();
  BlackHoleProxy proxy(server->port());
  ChannelArguments args;
  args.SetInt("grpc.keepalive_time_ms", 200);
  args.SetInt("grpc.keepalive_timeout_ms", 200);
  auto channel = CreateCustomChannel(proxy.address(), InsecureChannelCredentials(), args);
  Load load(channel.get(), 4, milliseconds(3000), /*sleep_ms=*/1);
  load.Start();
  std::this_thread::sleep_for(milliseconds(300));
  ASSERT_GT(load.ok_count(), 10u) << "calls flow through the proxy first";
  proxy.BlackHole();
  auto holed = std::chrono::steady_clock::now();
  // keepalive time + timeout (+ slack): the calls in flight end UNAVAILABLE.
  for (int i = 0; i < 100 && load.Summary().count(StatusCode::UNAVAILABLE) == 0; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  auto noticed = std::chrono::steady_clock::now() - holed;
  EXPECT_LT(noticed, milliseconds(700));
  Load::Report r = load.Summary();
  EXPECT_GT(r.count(StatusCode::UNAVAILABLE), 0);
  EXPECT_THAT(r.first_error, ::testing::HasSubstr("keepalive")) << r.first_error;
  ExpectInvariants(load, *channel);
}

TEST(Faults, ClientStreamAgainstAServerThatStopsReadingEndsAtItsDeadline) {
  auto server = Server();
  auto channel = CreateChannel(server->address(), InsecureChannelCredentials());
  Status open;
  ClientContext ctx;
  ASSERT_TRUE(channel->WaitForConnected(Clock::now() + std::chrono::seconds(5)));
  server->Signal(SIGSTOP);  // it reads nothing more: flow control fills up
  ctx.set_deadline(Clock::now() + milliseconds(500));
  Clock::time_point deadline = *ctx.deadline();
  std::unique_ptr<ClientCall> call =
      channel->BlockingOpen("/ringrpc.test.TestService/ClientStream", &ctx, &open);
  ASSERT_NE(call, nullptr) << open.ToString();
  std::promise<Status> done;
  call->Run([](ClientCall* call, std::promise<Status>* done) -> Task<void> {
    EchoRequest req;
    req.set_payload(std::string(1 << 20, 'x'));
    std::string bytes = req.SerializeAsString();
    for (int i = 0; i < 256; ++i) {  // 256 MiB: far beyond any window
      if (!(co_await call->Write(bytes)).ok()) break;
    }
    done->set_value(co_await call->Finish());
  }(call.get(), &done));
  auto f = done.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready) << "hung";
  Status s = f.get();
  double over = std::chrono::duration<double, std::milli>(Clock::now() - deadline).count();
  EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED) << s.ToString();
  EXPECT_LE(over, 20.0);
  server->Signal(SIGCONT);
  call->Run([](std::unique_ptr<ClientCall> c) -> Task<void> { co_return; }(std::move(call)));
}

TEST(Faults, RunningOutOfFileDescriptorsIsAClearErrorAndTheClientRecovers) {
  auto server = Server();
  ChannelArguments args;
  args.SetInt("ringrpc.cq_threads", 1);  // its threads and rings exist before the limit
  args.SetInt("ringrpc.max_concurrent_streams", 1);
  args.SetInt("ringrpc.connections_per_thread", 64);
  args.SetInt("grpc.initial_reconnect_backoff_ms", 20);
  args.SetInt("grpc.min_reconnect_backoff_ms", 20);
  args.SetInt("grpc.max_reconnect_backoff_ms", 40);
  auto channel = CreateCustomChannel(server->address(), InsecureChannelCredentials(), args);
  ASSERT_TRUE(channel->WaitForConnected(Clock::now() + std::chrono::seconds(5)));
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &old), 0);
  // Room for only a few more descriptors.
  int open_now = 0;
  for (int fd = 0; fd < 4096; ++fd) open_now += fcntl(fd, F_GETFD) != -1;
  rlimit low = old;
  low.rlim_cur = open_now + 4;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  Load load(channel.get(), 16, milliseconds(1000), /*sleep_ms=*/20);
  load.Start();
  std::this_thread::sleep_for(milliseconds(400));
  Load::Report starved = load.Summary();
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &old), 0);
  size_t ok_at_restore = load.ok_count();
  std::this_thread::sleep_for(milliseconds(800));
  EXPECT_GT(load.ok_count(), ok_at_restore + 20) << "no recovery once descriptors were back";
  ExpectInvariants(load, *channel);
  EXPECT_GT(starved.count(StatusCode::OK), 0) << "the connections already open kept working";
  EXPECT_GT(starved.count(StatusCode::UNAVAILABLE), 0) << "no call saw the exhaustion";
  // Some call says why; not necessarily the first: under a sanitizer on a
  // loaded machine a handshake may time out before a socket() is refused.
  EXPECT_THAT(starved.errors, ::testing::Contains(::testing::HasSubstr("Too many open files")))
      << "first error: " << starved.first_error;
}

}  // namespace
}  // namespace ringrpc
