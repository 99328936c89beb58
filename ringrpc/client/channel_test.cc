// The channel end to end against real grpc++ servers (child processes):
// target forms, configuration errors, fail-fast and wait_for_ready with the
// shared backoff, round_robin, a resolver switch under load, cancellation,
// the callback API, connectivity state and Invalidate().
#include "ringrpc/client/channel.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "ringrpc/client/channel/subchannel.h"
#include "ringrpc/client/resolver.h"
#include "ringrpc/client/transport/testing/raw_server.h"
#include "tests/proto/echo_test.pb.h"
#include "tests/testing/loopback.h"
#include "tests/testing/process_stats.h"
#include "tests/testing/server_process.h"

namespace ringrpc {
namespace {

using std::chrono::milliseconds;
using test::EchoRequest;
using test::EchoResponse;
using ::testing::HasSubstr;

constexpr char kUnary[] = "/ringrpc.test.TestService/Unary";
constexpr char kStats[] = "/ringrpc.test.TestService/Stats";

std::unique_ptr<testing::ServerProcess> StartServer(std::string listen = "127.0.0.1:0") {
  auto s = testing::ServerProcess::Start(listen);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

int FreePort() { return testing::UnusedLoopbackPort(); }

Status Echo(Channel& ch, const std::string& payload, std::string* got, ClientContext* ctx = nullptr,
            int sleep_ms = 0) {
  ClientContext local;
  if (ctx == nullptr) ctx = &local;
  EchoRequest req;
  req.set_payload(payload);
  req.set_sleep_ms(sleep_ms);
  std::string reply;
  Status s = ch.BlockingUnaryCall(kUnary, ctx, req.SerializeAsString(), &reply);
  EchoResponse resp;
  if (s.ok() && got != nullptr && resp.ParseFromString(reply)) *got = resp.payload();
  return s;
}

int64_t ServerCalls(const testing::ServerProcess& server) {
  auto ch = CreateChannel(server.address(), InsecureChannelCredentials());
  ClientContext ctx;
  std::string reply;
  Status s = ch->BlockingUnaryCall(kStats, &ctx, "", &reply);
  EXPECT_TRUE(s.ok()) << s.ToString();
  test::StatsResponse stats;
  stats.ParseFromString(reply);
  return stats.calls();
}

TEST(Channel, BlockingUnaryOverEachTargetForm) {
  auto tcp = StartServer();
  // /tmp is shared by parallel test runs; pids are not (PID namespaces).
  std::string sock = absl::StrCat("/tmp/ringrpc-ch-", std::random_device()(), ".sock");
  auto unix_server = StartServer("unix:" + sock);
  for (std::string target : {tcp->address(), absl::StrCat("dns:///", tcp->address()),
                             absl::StrCat("ipv4:", tcp->address()), "unix:" + sock}) {
    auto ch = CreateChannel(target, InsecureChannelCredentials());
    ClientContext ctx;
    std::string got;
    Status s = Echo(*ch, "hi " + target, &got, &ctx);
    ASSERT_TRUE(s.ok()) << target << ": " << s.ToString();
    EXPECT_EQ(got, "hi " + target);
    EXPECT_FALSE(ctx.peer().empty());
  }
}

TEST(Channel, ConfigurationErrorsFailEveryCallNamingTheProblem) {
  auto bad_target = CreateChannel("foo:///nope", InsecureChannelCredentials());
  Status s = Echo(*bad_target, "x", nullptr);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("unknown scheme"));
  // An xds: target in a program that does not link the xDS resolver:
  // said so, not "unknown scheme".
  auto xds = CreateChannel("xds:///nope", InsecureChannelCredentials());
  s = Echo(*xds, "x", nullptr);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("link @ringrpc//client/xds:xds_resolver"));

  ChannelArguments args;
  args.SetInt("grpc.keepalive_timeout_ms", -5);
  EXPECT_EQ(ValidateChannelArguments(args).error_code(), StatusCode::INVALID_ARGUMENT);
  auto bad_args = CreateCustomChannel("127.0.0.1:1", InsecureChannelCredentials(), args);
  s = Echo(*bad_args, "x", nullptr);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("grpc.keepalive_timeout_ms"));
  EXPECT_EQ(bad_args->GetState(true), GRPC_CHANNEL_TRANSIENT_FAILURE);
}

TEST(Channel, FailFastCarriesTheConnectErrorAndThreadsShareOneBackoff) {
  auto ch = CreateChannel(absl::StrCat("127.0.0.1:", FreePort()), InsecureChannelCredentials());
  auto start = std::chrono::steady_clock::now();
  Status first = Echo(*ch, "x", nullptr);
  EXPECT_EQ(first.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(first.error_message(), HasSubstr("Connection refused"));
  // Calls from other threads during the backoff fail at once with the same
  // cause and no new dial.
  std::vector<std::thread> threads;
  std::atomic<int> backing_off{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      Status s = Echo(*ch, "x", nullptr);
      if (s.error_code() == StatusCode::UNAVAILABLE &&
          s.error_message().find("Connection refused") != std::string::npos) {
        ++backing_off;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(backing_off.load(), 4);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(900));
  EXPECT_EQ(ch->Metrics().connect_failures, 1u);  // one dial, not five
  EXPECT_EQ(ch->GetState(false), GRPC_CHANNEL_TRANSIENT_FAILURE);
}

TEST(Channel, WaitForReadyWaitsUntilTheDeadline) {
  auto ch = CreateChannel(absl::StrCat("127.0.0.1:", FreePort()), InsecureChannelCredentials());
  ClientContext ctx;
  ctx.set_wait_for_ready(true);
  ctx.set_deadline(std::chrono::system_clock::now() + milliseconds(300));
  auto start = std::chrono::steady_clock::now();
  Status s = Echo(*ch, "x", nullptr, &ctx);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED) << s.ToString();
  EXPECT_THAT(s.error_message(), HasSubstr("Connection refused"));
  EXPECT_GE(took, milliseconds(295));
  EXPECT_LT(took, milliseconds(300 + 100));
}

TEST(Channel, WaitForReadyCallSucceedsOnceTheServerComesUp) {
  int port = FreePort();
  ChannelArguments args;
  args.SetInt("grpc.initial_reconnect_backoff_ms", 100);
  auto ch =
      CreateCustomChannel(absl::StrCat("127.0.0.1:", port), InsecureChannelCredentials(), args);
  std::future<Status> call = std::async(std::launch::async, [&] {
    ClientContext ctx;
    ctx.set_wait_for_ready(true);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    std::string got;
    return Echo(*ch, "late", &got, &ctx);
  });
  std::this_thread::sleep_for(milliseconds(400));
  auto server = StartServer(absl::StrCat("127.0.0.1:", port));
  Status s = call.get();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_GE(ch->Metrics().connect_failures, 1u);
}

// `n` servers and a round_robin channel over them (an ipv4: target).
std::shared_ptr<Channel> RoundRobinOver(
    int n, std::vector<std::unique_ptr<testing::ServerProcess>>* servers) {
  std::string target = "ipv4:";
  for (int i = 0; i < n; ++i) {
    servers->push_back(StartServer());
    absl::StrAppend(&target, i ? "," : "", servers->back()->address());
  }
  ChannelArguments args;
  args.SetLoadBalancingPolicyName("round_robin");
  return CreateCustomChannel(target, InsecureChannelCredentials(), args);
}

TEST(Channel, RoundRobinSpreadsCallsEvenly) {
  std::vector<std::unique_ptr<testing::ServerProcess>> servers;
  auto ch = RoundRobinOver(3, &servers);
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(Echo(*ch, "rr", nullptr).ok());
  for (auto& s : servers) {
    int64_t n = ServerCalls(*s);
    EXPECT_GE(n, 90) << s->address();
    EXPECT_LE(n, 110) << s->address();
  }
}

// A backend dies under load: the calls that were on it may fail
// UNAVAILABLE (they were sent); every other call, and every wait_for_ready
// call started after the kill, succeeds on the others.
TEST(Channel, BackendKilledUnderLoadOnlyInFlightCallsFail) {
  std::vector<std::unique_ptr<testing::ServerProcess>> servers;
  auto ch = RoundRobinOver(3, &servers);
  std::atomic<bool> stop{false}, killed{false};
  std::atomic<int> wfr_failures{0}, failures{0}, after_kill_ok{0};
  std::string killed_addr = servers[1]->address();
  std::vector<std::thread> load;
  for (int t = 0; t < 4; ++t) {
    load.emplace_back([&, t] {
      while (!stop) {
        ClientContext ctx;
        bool wfr = t % 2 == 0;
        bool started_after_kill = killed.load();
        ctx.set_wait_for_ready(wfr);
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
        Status s = Echo(*ch, "x", nullptr, &ctx, /*sleep_ms=*/5);
        if (!s.ok()) {
          ++failures;
          if (wfr && started_after_kill) ++wfr_failures;
          // Only a call that was on the killed backend may fail.
          EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE) << s.ToString();
          EXPECT_EQ(ctx.peer(), killed_addr) << s.ToString();
        } else if (started_after_kill) {
          ++after_kill_ok;
          EXPECT_NE(ctx.peer(), killed_addr);  // a dead backend serves nothing new
        }
      }
    });
  }
  std::this_thread::sleep_for(milliseconds(300));
  servers[1]->Kill();  // SIGKILL and reaped: it is gone before `killed`
  // "After the kill" means after the client could know: a call that starts
  // in the same loop turn as the one that reads the connections' EOF may
  // still go out on them (a CI run saw one such wait_for_ready call fail).
  std::this_thread::sleep_for(milliseconds(100));
  killed = true;
  std::this_thread::sleep_for(milliseconds(500));
  stop = true;
  for (auto& t : load) t.join();
  EXPECT_EQ(wfr_failures.load(), 0);  // wait_for_ready calls started after the kill
  EXPECT_LE(failures.load(), 4);      // at most the calls in flight on it (4 threads)
  EXPECT_GT(after_kill_ok.load(), 20);
}

Task<void> StreamAll(Channel* ch, int count, std::vector<int>* seen, Status* status,
                     std::promise<void>* done) {
  ClientContext ctx;
  std::unique_ptr<ClientCall> call =
      co_await ch->Open("/ringrpc.test.TestService/ServerStream", &ctx, status);
  if (call) {
    EchoRequest req;
    req.set_count(count);
    req.set_response_size(8);
    co_await call->Write(req.SerializeAsString());
    call->WritesDone();
    while (std::optional<std::string> m = co_await call->Read()) {
      EchoResponse r;
      r.ParseFromString(*m);
      seen->push_back(r.count());
    }
    *status = co_await call->Finish();
  }
  done->set_value();
}

TEST(Channel, ServerStreamingThroughTheCoroutineApi) {
  auto server = StartServer();
  auto ch = CreateChannel(server->address(), InsecureChannelCredentials());
  std::vector<int> seen;
  Status status;
  std::promise<void> done;
  ch->Spawn(StreamAll(ch.get(), 500, &seen, &status, &done));
  done.get_future().get();
  EXPECT_TRUE(status.ok()) << status.ToString();
  ASSERT_EQ(seen.size(), 500u);
  for (int i = 0; i < 500; ++i) ASSERT_EQ(seen[i], i);
}

TEST(Channel, CoroutineApiOffACqThreadIsRefusedClearly) {
  auto server = StartServer();
  auto ch = CreateChannel(server->address(), InsecureChannelCredentials());
  ClientContext ctx;
  std::string reply;
  Task<Status> t = ch->Unary(kUnary, &ctx, "", &reply);
  t.handle().resume();
  ASSERT_TRUE(t.done());
  EXPECT_EQ(t.result().error_code(), StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(t.result().error_message(), HasSubstr("CQ threads"));
}

// A call from BlockingOpen let go on the caller's thread, unfinished, is
// released on its own CQ thread before the destructor returns: its
// ClientContext may go right after, and its connection's one stream slot
// is free again for the next call.
TEST(Channel, ACallFromBlockingOpenMayBeDroppedOnTheCallersThread) {
  auto server = StartServer();
  ChannelArguments args;
  args.SetInt("ringrpc.cq_threads", 1);
  args.SetInt("ringrpc.connections_per_thread", 1);
  args.SetInt("ringrpc.max_concurrent_streams", 1);
  auto ch = CreateCustomChannel(server->address(), InsecureChannelCredentials(), args);
  for (int i = 0; i < 20; ++i) {
    auto ctx = std::make_unique<ClientContext>();
    Status open;
    std::unique_ptr<ClientCall> call =
        ch->BlockingOpen("/ringrpc.test.TestService/Bidi", ctx.get(), &open);
    ASSERT_NE(call, nullptr) << open.ToString();
    call.reset();
    ctx.reset();
  }
  ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  std::string reply;
  Status s = ch->BlockingUnaryCall(kUnary, &ctx, "", &reply);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(Channel, PickFirstSendsEverythingToTheFirstAddress) {
  auto a = StartServer();
  auto b = StartServer();
  auto ch = CreateChannel(absl::StrCat("ipv4:", a->address(), ",", b->address()),
                          InsecureChannelCredentials());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(Echo(*ch, "pf", nullptr).ok());
  EXPECT_EQ(ServerCalls(*a), 20);
  EXPECT_EQ(ServerCalls(*b), 0);
}

TEST(Channel, ResolverSwitchUnderLoadLosesNoCallAndMovesEveryNewCall) {
  auto a = StartServer();
  auto b = StartServer();
  auto resolver = std::make_shared<ManualResolver>();
  resolver->Push(AddressList{*transport::Address::Parse(a->address())});
  auto ch = CreateChannelWithResolver("test", resolver, ChannelArguments());
  std::atomic<bool> switched{false}, stop{false};
  std::atomic<int> failures{0}, after_switch{0}, after_switch_on_a{0}, on_a{0};
  std::vector<std::thread> load;
  for (int t = 0; t < 3; ++t) {
    load.emplace_back([&] {
      while (!stop) {
        bool started_after = switched.load();
        ClientContext ctx;
        Status s = Echo(*ch, "load", nullptr, &ctx);
        if (!s.ok()) ++failures;
        bool to_a = ctx.peer() == a->address();
        on_a += to_a;
        if (started_after) {
          ++after_switch;
          after_switch_on_a += to_a;
        }
      }
    });
  }
  std::this_thread::sleep_for(milliseconds(300));
  resolver->Push(AddressList{*transport::Address::Parse(b->address())});
  switched = true;
  std::this_thread::sleep_for(milliseconds(300));
  stop = true;
  for (auto& t : load) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(after_switch.load(), 10);
  EXPECT_EQ(after_switch_on_a.load(), 0);
  EXPECT_EQ(ServerCalls(*a), on_a.load());
  // A's connections were closed once their calls ended.
  pool::PoolMetrics m = ch->Metrics();
  EXPECT_GE(m.retired[size_t(pool::RetireReason::kPoolClosed)], 1u) << m.ToString();
}

// Calls made before the resolver's first answer wait for it (as gRPC queues
// them) and start when it comes, woken by the answer itself: with no timer
// to look again, a lost wake-up would wait out the 30 s deadline.
TEST(Channel, CallsWaitingForTheFirstResolutionStartWhenItComes) {
  auto server = StartServer();
  auto resolver = std::make_shared<ManualResolver>();
  ChannelArguments args;
  args.SetInt("ringrpc.cq_threads", 3);
  auto ch = CreateChannelWithResolver("test", resolver, args);
  std::vector<std::future<Status>> calls;
  for (int i = 0; i < 6; ++i) {
    calls.push_back(std::async(std::launch::async, [&] {
      ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      return Echo(*ch, "first", nullptr, &ctx);
    }));
  }
  std::this_thread::sleep_for(milliseconds(200));
  for (auto& c : calls) EXPECT_EQ(c.wait_for(milliseconds(0)), std::future_status::timeout);
  resolver->Push(AddressList{*transport::Address::Parse(server->address())});
  for (auto& c : calls) {
    Status s = c.get();
    EXPECT_TRUE(s.ok()) << s.error_message();
  }
  EXPECT_EQ(ServerCalls(*server), 6);
}

// After a resolver error a fail-fast call fails with it, and a
// wait_for_ready call waits for the next answer (as gRPC queues
// wait_for_ready calls), woken by it.
TEST(Channel, AWaitForReadyCallAfterAResolverErrorStartsOnTheNextAnswer) {
  auto server = StartServer();
  auto resolver = std::make_shared<ManualResolver>();
  auto ch = CreateChannelWithResolver("test", resolver, ChannelArguments());
  resolver->Push(absl::UnavailableError("the name service is down"));
  {
    ClientContext ctx;
    Status s = Echo(*ch, "fast", nullptr, &ctx);
    EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
    EXPECT_TRUE(absl::StrContains(s.error_message(), "the name service is down"))
        << s.error_message();
  }
  std::future<Status> waiting = std::async(std::launch::async, [&] {
    ClientContext ctx;
    ctx.set_wait_for_ready(true);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return Echo(*ch, "patient", nullptr, &ctx);
  });
  EXPECT_EQ(waiting.wait_for(milliseconds(200)), std::future_status::timeout);
  resolver->Push(AddressList{*transport::Address::Parse(server->address())});
  Status s = waiting.get();
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST(Channel, TryCancelFromAnotherThreadEndsTheCallCancelled) {
  auto server = StartServer();
  auto ch = CreateChannel(server->address(), InsecureChannelCredentials());
  ClientContext ctx;
  std::future<Status> call =
      std::async(std::launch::async, [&] { return Echo(*ch, "slow", nullptr, &ctx, 5000); });
  std::this_thread::sleep_for(milliseconds(200));
  auto start = std::chrono::steady_clock::now();
  ctx.TryCancel();
  Status s = call.get();
  EXPECT_EQ(s.error_code(), StatusCode::CANCELLED) << s.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(500));
}

TEST(Channel, CallbackApiRunsDoneOnceOnACqThread) {
  auto server = StartServer();
  auto ch = CreateChannel(server->address(), InsecureChannelCredentials());
  ClientContext ctx;
  EchoRequest req;
  req.set_payload("callback");
  std::string reply;
  std::promise<Status> done;
  std::atomic<int> calls{0};
  ch->UnaryCallAsync(kUnary, &ctx, req.SerializeAsString(), &reply, [&](Status s) {
    ++calls;
    done.set_value(s);
  });
  Status s = done.get_future().get();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EchoResponse resp;
  ASSERT_TRUE(resp.ParseFromString(reply));
  EXPECT_EQ(resp.payload(), "callback");
  EXPECT_EQ(calls.load(), 1);
}

struct EventLog : SubchannelEventListener {
  std::mutex mu;
  std::vector<std::string> events;
  void OnSubchannelEvent(const SubchannelEvent& e) override {
    std::lock_guard<std::mutex> lock(mu);
    events.push_back(
        absl::StrCat(SubchannelEventKindName(e.kind), e.reason.empty() ? "" : ":", e.reason));
  }
  std::vector<std::string> Take() {
    std::lock_guard<std::mutex> lock(mu);
    return std::exchange(events, {});
  }
};

TEST(Channel, ChannelsWithTheSameTargetAndArgumentsShareOneSubchannelPool) {
  auto server = StartServer();
  auto log = std::make_shared<EventLog>();
  ChannelArguments args;
  args.SetSubchannelEventListener(log);
  size_t before = channel::SubchannelRegistry::Global().shared_count();
  auto a = CreateCustomChannel(server->address(), InsecureChannelCredentials(), args);
  auto b = CreateCustomChannel(server->address(), InsecureChannelCredentials(), args);
  ASSERT_TRUE(Echo(*a, "a", nullptr).ok());
  ASSERT_TRUE(Echo(*b, "b", nullptr).ok());
  EXPECT_EQ(channel::SubchannelRegistry::Global().shared_count(), before + 1);
  // One pool: the counters both channels report are the same.
  EXPECT_EQ(a->Metrics().acquires, 2u);
  EXPECT_EQ(b->Metrics().acquires, 2u);
  // Different connection arguments: a pool of its own; so is a local one.
  ChannelArguments other;
  other.SetInt("grpc.keepalive_time_ms", 60000);
  auto c = CreateCustomChannel(server->address(), InsecureChannelCredentials(), other);
  ChannelArguments local;
  local.SetInt("grpc.use_local_subchannel_pool", 1);
  auto d = CreateCustomChannel(server->address(), InsecureChannelCredentials(), local);
  ASSERT_TRUE(Echo(*c, "c", nullptr).ok());
  ASSERT_TRUE(Echo(*d, "d", nullptr).ok());
  EXPECT_EQ(c->Metrics().acquires, 1u);
  EXPECT_EQ(d->Metrics().acquires, 1u);
  EXPECT_EQ(channel::SubchannelRegistry::Global().shared_count(), before + 2);
  c.reset();
  d.reset();
  a.reset();
  b.reset();  // the last attachment: the pool closes
  // A channel's state outlives the Channel by as long as a task still holds
  // it (the resolver's hand-off to CQ thread 0, a call's frame being
  // destroyed): under load that is milliseconds, so wait for it, bounded.
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (channel::SubchannelRegistry::Global().shared_count() != before &&
         std::chrono::steady_clock::now() < limit) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_EQ(channel::SubchannelRegistry::Global().shared_count(), before);
  std::vector<std::string> events = log->Take();
  // Connection events interleave on CQ threads (how many connections depends
  // on which threads ran the calls); the lifecycle events keep their order.
  std::vector<std::string> lifecycle;
  for (const std::string& e : events) {
    if (e == "init" || e == "attach" || e == "detach" || e == "close") lifecycle.push_back(e);
  }
  EXPECT_EQ(lifecycle,
            (std::vector<std::string>{"init", "attach", "attach", "detach", "detach", "close"}));
  EXPECT_THAT(events, ::testing::Contains("connect"));
}

TEST(Channel, MetricsTextIsPrometheusExposition) {
  auto server = StartServer();
  auto ch = CreateChannel(server->address(), InsecureChannelCredentials());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Echo(*ch, "m", nullptr).ok());
  ch->Invalidate();
  std::this_thread::sleep_for(milliseconds(50));
  std::string text = ch->MetricsText();
  std::string a = absl::StrCat("{address=\"", server->address(), "\"}");
  EXPECT_THAT(text, HasSubstr("# TYPE ringrpc_connections_created_total counter\n"));
  EXPECT_THAT(text, HasSubstr("ringrpc_stream_leases_total" + a + " 3\n"));
  EXPECT_THAT(text, HasSubstr("ringrpc_streams_active" + a + " 0\n"));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("ringrpc_connections_retired_total{address=\"",
                                           server->address(), "\",reason=\"generation\"} ")));
  EXPECT_THAT(text, HasSubstr("\nringrpc_transparent_retries_total 0\n"));
  // Every sample line is "name{labels} value" or "name value".
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (line[0] == '#') continue;
    std::vector<absl::string_view> parts =
        absl::StrSplit(line, absl::MaxSplits(line.find('{') == line.npos ? ' ' : '}', 1));
    ASSERT_EQ(parts.size(), 2u) << line;
    EXPECT_FALSE(absl::StrContains(parts[0], ' ')) << line;
  }
}

TEST(Channel, WaitForConnectedRightAfterCreationConnects) {
  auto server = StartServer();
  auto ch = CreateChannel(server->address(), InsecureChannelCredentials());
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(ch->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(ch->GetState(false), GRPC_CHANNEL_READY);
}

TEST(Channel, TheLibraryIsTheVersionItsHeaderSays) {
  EXPECT_STREQ(Version(), RINGRPC_VERSION);
  EXPECT_EQ(std::string(RINGRPC_VERSION), std::to_string(RINGRPC_VERSION_MAJOR) + "." +
                                              std::to_string(RINGRPC_VERSION_MINOR) + "." +
                                              std::to_string(RINGRPC_VERSION_PATCH));
}

TEST(Channel, StateGoesFromIdleToReady) {
  auto server = StartServer();
  auto ch = CreateChannel(server->address(), InsecureChannelCredentials());
  std::this_thread::sleep_for(milliseconds(50));  // the resolver has run
  EXPECT_EQ(ch->GetState(false), GRPC_CHANNEL_IDLE);
  EXPECT_TRUE(ch->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5)));
  EXPECT_EQ(ch->GetState(false), GRPC_CHANNEL_READY);
}

// The server dies with the channel's connection idle in its pool: the
// channel leaves READY at once (the pool would find the connection dead
// only at its next checkout).
TEST(Channel, StateLeavesReadyWhenTheServerDies) {
  auto server = StartServer();
  auto ch = CreateChannel(server->address(), InsecureChannelCredentials());
  ASSERT_TRUE(ch->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5)));
  server->Kill();
  EXPECT_TRUE(ch->WaitForStateChange(GRPC_CHANNEL_READY,
                                     std::chrono::system_clock::now() + std::chrono::seconds(10)));
  EXPECT_EQ(ch->GetState(false), GRPC_CHANNEL_IDLE);
}

TEST(Channel, StateGoesBackToIdleWhenEveryConnectionHasClosed) {
  auto server = StartServer();
  ChannelArguments args;
  args.SetInt("ringrpc.idle_timeout_ms", 200);  // the pool closes idle connections
  args.SetInt("ringrpc.reap_interval_ms", 50);
  auto ch = CreateCustomChannel(server->address(), InsecureChannelCredentials(), args);
  ASSERT_TRUE(Echo(*ch, "x", nullptr).ok());
  ASSERT_EQ(ch->GetState(false), GRPC_CHANNEL_READY);
  // Woken by the connection's retirement, not by a deadline.
  EXPECT_TRUE(ch->WaitForStateChange(GRPC_CHANNEL_READY,
                                     std::chrono::system_clock::now() + std::chrono::seconds(10)));
  EXPECT_EQ(ch->GetState(false), GRPC_CHANNEL_IDLE);
  EXPECT_EQ(ch->Metrics().live, 0u);
  ASSERT_TRUE(Echo(*ch, "y", nullptr).ok());  // and connects again when asked
  EXPECT_EQ(ch->GetState(false), GRPC_CHANNEL_READY);
}

TEST(Channel, ClientIdleTimeoutClosesTheChannelsConnectionsUntilTheNextCall) {
  auto server = StartServer();
  ChannelArguments args;
  args.SetInt("grpc.client_idle_timeout_ms", 300);
  args.SetInt("ringrpc.cq_threads", 2);
  auto ch = CreateCustomChannel(server->address(), InsecureChannelCredentials(), args);
  // Busy for longer than the timeout: calls keep it out of idle mode.
  for (auto end = std::chrono::steady_clock::now() + milliseconds(600);
       std::chrono::steady_clock::now() < end;) {
    ASSERT_TRUE(Echo(*ch, "x", nullptr).ok());
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_channel_idle_entries_total 0\n"));
  EXPECT_EQ(ch->GetState(false), GRPC_CHANNEL_READY);
  // Then quiet: idle mode within 1.25 timeouts (and some room).
  EXPECT_TRUE(ch->WaitForStateChange(GRPC_CHANNEL_READY,
                                     std::chrono::system_clock::now() + std::chrono::seconds(10)));
  EXPECT_EQ(ch->GetState(false), GRPC_CHANNEL_IDLE);
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_channel_idle_entries_total 1\n"));
  for (int i = 0; i < 100 && ch->Metrics().live != 0; ++i)
    std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(ch->Metrics().live, 0u);
  ASSERT_TRUE(Echo(*ch, "y", nullptr).ok());  // the next call leaves idle mode
  EXPECT_EQ(ch->GetState(false), GRPC_CHANNEL_READY);
}

TEST(Channel, MaxConnectionAgeRetiresRealConnectionsWithoutFailingCalls) {
  auto server = StartServer();
  ChannelArguments args;
  args.SetInt("ringrpc.max_connection_age_ms", 200);
  args.SetInt("ringrpc.reap_interval_ms", 50);
  args.SetInt("ringrpc.cq_threads", 1);
  auto ch = CreateCustomChannel(server->address(), InsecureChannelCredentials(), args);
  int calls = 0;
  for (auto end = std::chrono::steady_clock::now() + milliseconds(1200);
       std::chrono::steady_clock::now() < end; ++calls) {
    Status s = Echo(*ch, "x", nullptr);
    ASSERT_TRUE(s.ok()) << s.error_message();
    std::this_thread::sleep_for(milliseconds(5));
  }
  pool::PoolMetrics m = ch->Metrics();
  EXPECT_GE(m.created, 3u) << calls << " calls";
  EXPECT_GE(m.retired[size_t(pool::RetireReason::kMaxLifetime)], 2u);
  EXPECT_LE(m.live, 2u);
}

TEST(Channel, MinIdlePerThreadKeepsRealConnectionsDialled) {
  auto server = StartServer();
  ChannelArguments args;
  args.SetInt("ringrpc.min_idle_per_thread", 2);
  args.SetInt("ringrpc.reap_interval_ms", 50);
  args.SetInt("ringrpc.cq_threads", 1);
  auto ch = CreateCustomChannel(server->address(), InsecureChannelCredentials(), args);
  ASSERT_TRUE(Echo(*ch, "x", nullptr).ok());
  for (int i = 0; i < 200 && ch->Metrics().live < 2; ++i)
    std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(ch->Metrics().live, 2u);  // dialled ahead of need, and no more
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(ch->Metrics().live, 2u);
  EXPECT_EQ(ch->Metrics().created, 2u);
}

// Issue 15: channels share a CQ thread set made once (as a grpc
// EventEngine is shared): their calls run on its threads only, channels
// with equal targets and arguments share connections there, and the
// threads outlive the set's handle while a channel uses them.
TEST(Channel, ChannelsShareACqThreadSetTheUserMade) {
  auto server = StartServer();
  const long threads_before = testing::ThreadCount();
  Status error;
  auto set = CqThreadSet::Create({.threads = 2}, &error);
  ASSERT_NE(set, nullptr) << error.error_message();
  EXPECT_EQ(set->size(), 2u);
  EXPECT_EQ(testing::ThreadCount(), threads_before + 2);
  ChannelArguments args;
  args.SetCqThreadSet(set);
  // ipv4: targets (a DNS target would add its resolver's thread).
  const std::string target = "ipv4:" + server->address();
  auto a = CreateCustomChannel(target, InsecureChannelCredentials(), args);
  auto b = CreateCustomChannel(target, InsecureChannelCredentials(), args);
  EXPECT_EQ(a->cq_thread_count(), 2u);
  std::mutex mu;
  std::set<std::thread::id> ran_on;
  for (auto* ch : {a.get(), b.get()}) {
    for (int i = 0; i < 8; ++i) {
      std::promise<void> done;
      ClientContext ctx;
      std::string reply;
      ch->UnaryCallAsync(kUnary, &ctx, EchoRequest().SerializeAsString(), &reply, [&](Status s) {
        EXPECT_TRUE(s.ok()) << s.error_message();
        std::lock_guard<std::mutex> lock(mu);
        ran_on.insert(std::this_thread::get_id());
        done.set_value();
      });
      done.get_future().wait();
    }
  }
  EXPECT_LE(ran_on.size(), 2u) << "callbacks ran on threads outside the set";
  EXPECT_EQ(testing::ThreadCount(), threads_before + 2) << "no other CQ threads were started";
  // Equal target and arguments on one set: one subchannel, one connection.
  EXPECT_EQ(a->Metrics().created, b->Metrics().created);
  set.reset();  // the channels keep the threads
  EXPECT_TRUE(Echo(*a, "still", nullptr).ok());
  // A set and ringrpc.cq_threads together: the channel's error.
  ChannelArguments both = args;
  both.SetCqThreadSet(CqThreadSet::Create({.threads = 1}));
  both.SetInt("ringrpc.cq_threads", 3);
  auto bad = CreateCustomChannel(server->address(), InsecureChannelCredentials(), both);
  EXPECT_EQ(bad->configuration_status().error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad->configuration_status().error_message(), HasSubstr("SetCqThreadSet"));
  EXPECT_EQ(CqThreadSet::Create({.poller = "kqueue"}, &error), nullptr);
  EXPECT_THAT(error.error_message(), HasSubstr("kqueue"));
}

TEST(Channel, InvalidateRetiresConnectionsAndCallsGoOn) {
  auto server = StartServer();
  auto ch = CreateChannel(server->address(), InsecureChannelCredentials());
  ASSERT_TRUE(Echo(*ch, "before", nullptr).ok());
  uint64_t created = ch->Metrics().created;
  ch->Invalidate();
  std::this_thread::sleep_for(milliseconds(50));  // each CQ thread reaps
  EXPECT_GE(ch->Metrics().retired[size_t(pool::RetireReason::kGeneration)], 1u);
  ASSERT_TRUE(Echo(*ch, "after", nullptr).ok());
  EXPECT_GT(ch->Metrics().created, created);  // a fresh connection
}

// Calls made on one CQ thread: the server's view of each call's connection.
struct PeerCalls {
  std::atomic<int> done{0};
  std::mutex mu;
  std::set<std::string> peers;
  std::vector<std::string> errors;
};

Task<void> PeerCall(Channel* ch, int sleep_ms, PeerCalls* out) {
  ClientContext ctx;
  EchoRequest req;
  req.set_want_peer(true);
  req.set_sleep_ms(sleep_ms);
  std::string reply;
  Status s = co_await ch->Unary(kUnary, &ctx, req.SerializeAsString(), &reply);
  EchoResponse resp;
  {
    std::lock_guard<std::mutex> lock(out->mu);
    if (s.ok() && resp.ParseFromString(reply)) {
      out->peers.insert(resp.peer());
    } else {
      out->errors.push_back(s.ToString());
    }
  }
  out->done.fetch_add(1);
}

// `n` concurrent calls on CQ thread `cq`, each holding its connection for
// `sleep_ms`; waits for all.
void CallsOnThread(Channel& ch, size_t cq, int n, int sleep_ms, PeerCalls* out) {
  for (int i = 0; i < n; ++i) ASSERT_TRUE(ch.SpawnOn(cq, PeerCall(&ch, sleep_ms, out)).ok());
  for (int i = 0; i < 500 && out->done.load() < n; ++i)
    std::this_thread::sleep_for(milliseconds(10));
  ASSERT_EQ(out->done.load(), n);
  EXPECT_THAT(out->errors, ::testing::IsEmpty());
}

template <typename F>
bool WaitFor(F condition, milliseconds limit = milliseconds(5000)) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

TEST(Channel, ReservoirLendsAQuietThreadsConnectionsToABusyOne) {
  auto server = StartServer();
  ChannelArguments args;
  args.SetInt("ringrpc.cq_threads", 2);
  args.SetInt("ringrpc.reservoir_capacity", 8);
  args.SetInt("ringrpc.reap_interval_ms", 20);
  args.SetInt("ringrpc.max_concurrent_streams", 1);  // a connection per call
  args.SetInt("ringrpc.connections_per_thread", 4);
  auto ch = CreateCustomChannel(server->address(), InsecureChannelCredentials(), args);
  ASSERT_EQ(ch->cq_thread_count(), 2u);

  PeerCalls first;  // thread 0 warms 4 connections
  CallsOnThread(*ch, 0, 4, 200, &first);
  ASSERT_EQ(first.peers.size(), 4u);
  EXPECT_EQ(ch->Metrics().created, 4u);
  // Thread 0 goes quiet: its idle connections park.
  ASSERT_TRUE(WaitFor([&] { return ch->Metrics().parked == 4; })) << ch->MetricsText();
  EXPECT_EQ(ch->Metrics().parks, 4u);

  PeerCalls second;  // thread 1 gets busy
  CallsOnThread(*ch, 1, 4, 100, &second);
  EXPECT_EQ(second.peers, first.peers) << "the parked connections, no new handshake";
  pool::PoolMetrics m = ch->Metrics();
  EXPECT_EQ(m.created, 4u) << "no dial on thread 1";
  EXPECT_EQ(m.unparked, 4u);
  EXPECT_TRUE(m.Conserved()) << ch->MetricsText();
  EXPECT_EQ(ch->SpawnOn(2, PeerCall(ch.get(), 0, &second)).error_code(),
            StatusCode::INVALID_ARGUMENT);
}

// WaitForConnected means a call from this thread goes out at once: the CQ
// thread its blocking calls use is the one connected.
TEST(Channel, WaitForConnectedConnectsTheCallersOwnCqThread) {
  auto server = StartServer();
  ChannelArguments args;
  args.SetInt("ringrpc.cq_threads", 4);
  auto ch = CreateCustomChannel(server->address(), InsecureChannelCredentials(), args);
  ASSERT_TRUE(ch->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10)));
  EXPECT_EQ(ch->GetState(false), GRPC_CHANNEL_READY);
  EXPECT_EQ(ch->Metrics().created, 1u);
  for (int i = 0; i < 3; ++i) {
    std::string got;
    ASSERT_TRUE(Echo(*ch, "after", &got).ok());
  }
  EXPECT_EQ(ch->Metrics().created, 1u)
      << "the blocking calls had to dial: another thread was connected";
  // Nothing to connect to: false at the deadline.
  auto dead = CreateChannel(absl::StrCat("127.0.0.1:", FreePort()), InsecureChannelCredentials());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(dead->WaitForConnected(std::chrono::system_clock::now() + milliseconds(300)));
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(290));
}

// Issue 15: one application thread's async calls spread over the CQ
// threads (each has its own connection: the server sees one peer per CQ
// thread); its blocking calls keep to one.
TEST(Channel, OneThreadsAsyncCallsSpreadOverTheCqThreadsAndItsBlockingCallsDoNot) {
  auto server = StartServer();
  ChannelArguments args;
  args.SetInt("ringrpc.cq_threads", 2);
  auto ch = CreateCustomChannel(server->address(), InsecureChannelCredentials(), args);
  constexpr int kInFlight = 128;
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  std::set<std::string> peers;
  std::vector<std::string> errors;
  std::vector<std::unique_ptr<ClientContext>> contexts;
  std::vector<std::string> replies(kInFlight);
  EchoRequest req;
  req.set_want_peer(true);
  req.set_sleep_ms(20);  // all 128 in flight at once
  for (int i = 0; i < kInFlight; ++i) {
    contexts.push_back(std::make_unique<ClientContext>());
    ch->UnaryCallAsync(kUnary, contexts.back().get(), req.SerializeAsString(), &replies[i],
                       [&, i](Status s) {
                         EchoResponse resp;
                         std::lock_guard<std::mutex> lock(mu);
                         if (s.ok() && resp.ParseFromString(replies[i])) {
                           peers.insert(resp.peer());
                         } else {
                           errors.push_back(s.ToString());
                         }
                         ++done;
                         cv.notify_all();
                       });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return done == kInFlight; }));
  }
  EXPECT_THAT(errors, ::testing::IsEmpty());
  EXPECT_EQ(peers.size(), 2u) << "both CQ threads carried calls";
  const uint64_t created = ch->Metrics().created;
  // Blocking calls from this thread: one CQ thread, so no new connection
  // and one peer.
  std::set<std::string> blocking_peers;
  for (int i = 0; i < 10; ++i) {
    ClientContext ctx;
    std::string reply;
    EchoRequest one;
    one.set_want_peer(true);
    ASSERT_TRUE(ch->BlockingUnaryCall(kUnary, &ctx, one.SerializeAsString(), &reply).ok());
    EchoResponse resp;
    ASSERT_TRUE(resp.ParseFromString(reply));
    blocking_peers.insert(resp.peer());
  }
  EXPECT_EQ(blocking_peers.size(), 1u);
  EXPECT_EQ(ch->Metrics().created, created);
}

TEST(Channel, WithoutAReservoirEachThreadDialsItsOwn) {
  auto server = StartServer();
  ChannelArguments args;
  args.SetInt("ringrpc.cq_threads", 2);
  args.SetInt("ringrpc.reap_interval_ms", 20);
  args.SetInt("ringrpc.max_concurrent_streams", 1);
  args.SetInt("ringrpc.connections_per_thread", 4);
  auto ch = CreateCustomChannel(server->address(), InsecureChannelCredentials(), args);
  PeerCalls first, second;
  CallsOnThread(*ch, 0, 4, 100, &first);
  std::this_thread::sleep_for(milliseconds(100));
  CallsOnThread(*ch, 1, 4, 100, &second);
  EXPECT_EQ(second.peers.size(), 4u);
  for (const std::string& p : second.peers) EXPECT_EQ(first.peers.count(p), 0u) << p;
  EXPECT_EQ(ch->Metrics().created, 8u);
  EXPECT_EQ(ch->Metrics().parks, 0u);
}

TEST(Channel, AUnaryCallTheServerNeverProcessedIsSentAgainOnlyOnce) {
  auto refusing = transport::testing::RefusingServer();
  auto ch = CreateChannel(refusing->address(), InsecureChannelCredentials());
  ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  Status s = Echo(*ch, "x", nullptr, &ctx);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE) << s.ToString();
  EXPECT_EQ(refusing->accepts(), 2u) << "one transparent retry, on a new connection";
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_transparent_retries_total 1\n"));
}

TEST(Channel, RetriesDisabledMeansNotEvenTheTransparentOne) {
  auto refusing = transport::testing::RefusingServer();
  ChannelArguments args;
  args.SetInt("grpc.enable_retries", 0);
  auto ch = CreateCustomChannel(refusing->address(), InsecureChannelCredentials(), args);
  ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  Status s = Echo(*ch, "x", nullptr, &ctx);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE) << s.ToString();
  EXPECT_THAT(s.error_message(), HasSubstr("safe to retry"));
  EXPECT_EQ(refusing->accepts(), 1u);
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_transparent_retries_total 0\n"));
}

// A server that lowers SETTINGS_MAX_CONCURRENT_STREAMS on a live connection
// (to 1, while one call is open on it): the next call goes to another
// connection, not RESOURCE_EXHAUSTED from a capacity fixed at connect time.
TEST(Channel, ServerLoweringMaxConcurrentStreamsLiveSendsTheNextCallElsewhere) {
  // SETTINGS_MAX_CONCURRENT_STREAMS (0x3) = 1, 300 ms after the call opened.
  const std::string lower = transport::testing::Frame(transport::testing::kSettings, 0, 0,
                                                      std::string("\x00\x03\x00\x00\x00\x01", 6));
  transport::testing::RawServer server(transport::testing::ServerSettings(), lower, 300);
  ChannelArguments args;
  args.SetInt("ringrpc.cq_threads", 1);  // both calls on one CQ thread's pool
  auto ch = CreateCustomChannel(server.address(), InsecureChannelCredentials(), args);
  std::thread first([&] {
    ClientContext ctx;  // never answered: ends at its deadline
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    Status s = Echo(*ch, "x", nullptr, &ctx);
    EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED) << s.ToString();
  });
  for (int i = 0; i < 200 && server.accepts() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(900));  // the limit is lowered
  ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(800));
  Status s = Echo(*ch, "y", nullptr, &ctx);
  EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED) << s.ToString();
  EXPECT_EQ(server.accepts(), 2u) << "the second call should have had a connection of its own";
  first.join();
}

// A server stream of `count` messages opened on a CQ thread: its status,
// and the messages read.
Status ServerStream(Channel& ch, int count, int* read) {
  std::promise<Status> done;
  ch.Spawn([](Channel* ch, int count, int* read, std::promise<Status>* done) -> Task<void> {
    ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    Status s;
    std::unique_ptr<ClientCall> call =
        co_await ch->Open("/ringrpc.test.TestService/ServerStream", &ctx, &s);
    if (call == nullptr) {
      done->set_value(s);
      co_return;
    }
    EchoRequest req;
    req.set_count(count);
    (void)co_await call->Write(req.SerializeAsString());
    call->WritesDone();
    for (;;) {
      std::optional<std::string> m = co_await call->Read();
      if (!m) break;
      ++*read;
    }
    done->set_value(co_await call->Finish());
  }(&ch, count, read, &done));
  return done.get_future().get();
}

TEST(Channel, AStreamTheServerNeverProcessedIsSentAgainOnlyOnce) {
  auto refusing = transport::testing::RefusingServer();
  auto ch = CreateChannel(refusing->address(), InsecureChannelCredentials());
  int read = 0;
  Status s = ServerStream(*ch, 2, &read);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE) << s.ToString();
  EXPECT_EQ(read, 0);
  EXPECT_EQ(refusing->accepts(), 2u) << "one transparent retry, on a new connection";
  EXPECT_THAT(ch->MetricsText(), HasSubstr("ringrpc_transparent_retries_total 1\n"));
}

TEST(Channel, StreamsRefusedByOneBackendSucceedOnAnother) {
  auto refusing = transport::testing::RefusingServer();
  auto good = StartServer();
  ChannelArguments args;
  args.SetLoadBalancingPolicyName("round_robin");
  auto ch = CreateCustomChannel(absl::StrCat("ipv4:", refusing->address(), ",", good->address()),
                                InsecureChannelCredentials(), args);
  for (int i = 0; i < 4; ++i) {
    int read = 0;
    Status s = ServerStream(*ch, 3, &read);
    ASSERT_TRUE(s.ok()) << i << ": " << s.ToString();
    EXPECT_EQ(read, 3);
  }
  EXPECT_GE(refusing->accepts(), 1u);
  EXPECT_EQ(ServerCalls(*good), 4);
  EXPECT_THAT(ch->MetricsText(),
              ::testing::Not(HasSubstr("ringrpc_transparent_retries_total 0\n")));
}

TEST(Channel, CallsRefusedByOneBackendSucceedOnAnother) {
  auto refusing = transport::testing::RefusingServer();
  auto good = StartServer();
  ChannelArguments args;
  args.SetLoadBalancingPolicyName("round_robin");
  auto ch = CreateCustomChannel(absl::StrCat("ipv4:", refusing->address(), ",", good->address()),
                                InsecureChannelCredentials(), args);
  for (int i = 0; i < 4; ++i) {
    std::string got;
    Status s = Echo(*ch, absl::StrCat("call ", i), &got);
    ASSERT_TRUE(s.ok()) << i << ": " << s.ToString();
    EXPECT_EQ(got, absl::StrCat("call ", i));
  }
  EXPECT_GE(refusing->accepts(), 1u);
  EXPECT_EQ(ServerCalls(*good), 4);
  EXPECT_THAT(ch->MetricsText(),
              ::testing::Not(HasSubstr("ringrpc_transparent_retries_total 0\n")));
}

}  // namespace
}  // namespace ringrpc
