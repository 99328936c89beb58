// Issue 11: what a hostile *caller* does, through the public API only, one
// named test per bug found (each failed before its fix): TryCancel racing
// completion, channels destroyed with calls queued, deadlines at the ends of
// time, blocking on CQ threads, leaks once the channel is gone, and the
// smaller clear-error cases. Real grpc++ server processes, and the raw fake
// server for what a real server would never send.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/blocking_stream.h"
#include "ringrpc/client/callback_reactor.h"
#include "ringrpc/client/channel.h"
#include "ringrpc/client/transport/testing/raw_server.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/loopback.h"
#include "tests/testing/process_stats.h"
#include "tests/testing/server_process.h"

namespace ringrpc {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using test::EchoRequest;
using test::EchoResponse;
using test::ring::TestService;
using ::testing::HasSubstr;
using ::testing::Not;
using SysClock = std::chrono::system_clock;

using testing::kSanitized;

std::unique_ptr<testing::ServerProcess> StartServer() {
  auto s = testing::ServerProcess::Start();
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

std::shared_ptr<Channel> OwnThreadsChannel(const std::string& target, int threads = 1) {
  ChannelArguments args;
  args.SetInt("ringrpc.cq_threads", threads);
  return CreateCustomChannel(target, InsecureChannelCredentials(), args);
}

// Waits (polling) until `pred` holds or `limit` passes.
template <typename Pred>
bool Eventually(Pred pred, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

// One async call's context, request, response and outcome.
struct Slot {
  ClientContext ctx;
  EchoRequest req;
  EchoResponse resp;
  Status status;
};

// Counts each call's completions: every call must end exactly once.
struct Ledger {
  explicit Ledger(size_t n) : ends(n) {
    for (auto& e : ends) e.store(0);
  }
  std::vector<std::atomic<int>> ends;
  std::atomic<size_t> total{0};
  void End(size_t i) {
    ends[i].fetch_add(1);
    total.fetch_add(1);
  }
  bool AllOnce() const {
    for (auto& e : ends) {
      if (e.load() != 1) return false;
    }
    return true;
  }
};

// ---- 1. TryCancel racing completion ------------------------------------------------

TEST(CallerSafety, TryCancelRacingAsyncCompletionNeverCorruptsOrSwapsResponses) {
  auto server = StartServer();
  auto channel = CreateChannel(server->address(), InsecureChannelCredentials());
  auto stub = TestService::NewStub(channel);
  constexpr size_t kCalls = 3000;
  std::vector<std::unique_ptr<Slot>> slots(kCalls);
  Ledger ledger(kCalls);
  std::atomic<size_t> started{0};
  std::thread canceller([&] {
    std::mt19937 rng(11);
    for (size_t i = 0; i < kCalls; ++i) {
      while (started.load() <= i) std::this_thread::yield();
      if (rng() % 4 != 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 200));
        slots[i]->ctx.TryCancel();
      }
    }
  });
  for (size_t i = 0; i < kCalls; ++i) {
    slots[i] = std::make_unique<Slot>();
    slots[i]->req.set_payload(absl::StrCat("call ", i, " ", std::string(i % 300, 'p')));
    Slot* s = slots[i].get();
    stub->async()->Unary(&s->ctx, &s->req, &s->resp, [s, i, &ledger](Status st) {
      s->status = st;
      ledger.End(i);
    });
    started.fetch_add(1);
    if (i % 64 == 63) std::this_thread::sleep_for(milliseconds(1));
  }
  canceller.join();
  ASSERT_TRUE(Eventually([&] { return ledger.total.load() >= kCalls; }, seconds(60)))
      << ledger.total.load() << " of " << kCalls << " ended";
  EXPECT_TRUE(ledger.AllOnce());
  size_t ok = 0, cancelled = 0;
  for (size_t i = 0; i < kCalls; ++i) {
    const Slot& s = *slots[i];
    if (s.status.ok()) {
      ++ok;
      ASSERT_EQ(s.resp.payload(), s.req.payload()) << "call " << i << " got another's answer";
    } else {
      ++cancelled;
      EXPECT_EQ(s.status.error_code(), StatusCode::CANCELLED) << i << ": " << s.status.ToString();
    }
  }
  EXPECT_GT(cancelled, 0u);
  EXPECT_GT(ok, 0u);
}

TEST(CallerSafety, BlockingCallsCancelledFromAnotherThreadEachEndOnce) {
  auto server = StartServer();
  auto channel = CreateChannel(server->address(), InsecureChannelCredentials());
  auto stub = TestService::NewStub(channel);
  std::mutex mu;
  ClientContext* current = nullptr;
  std::atomic<bool> stop{false};
  std::thread canceller([&] {
    std::mt19937 rng(12);
    while (!stop) {
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
      std::lock_guard<std::mutex> lock(mu);
      if (current != nullptr) current->TryCancel();
    }
  });
  int ok = 0, cancelled = 0;
  for (int i = 0; i < 1000; ++i) {
    ClientContext ctx;
    EchoRequest req;
    req.set_payload(absl::StrCat("blocking ", i));
    EchoResponse resp;
    {
      std::lock_guard<std::mutex> lock(mu);
      current = &ctx;
    }
    Status s = stub->Unary(&ctx, req, &resp);
    {
      std::lock_guard<std::mutex> lock(mu);
      current = nullptr;
    }
    if (s.ok()) {
      ++ok;
      ASSERT_EQ(resp.payload(), req.payload());
    } else {
      ++cancelled;
      ASSERT_EQ(s.error_code(), StatusCode::CANCELLED) << s.ToString();
    }
  }
  stop = true;
  canceller.join();
  EXPECT_EQ(ok + cancelled, 1000);
  EXPECT_GT(cancelled, 0);
}

TEST(CallerSafety, RequestOverTheSendLimitFailsAndTheNextCallIsServed) {
  auto server = StartServer();
  ChannelArguments args;
  args.SetInt("grpc.max_send_message_length", 4 << 20);
  auto channel = CreateCustomChannel(server->address(), InsecureChannelCredentials(), args);
  auto stub = TestService::NewStub(channel);
  for (int i = 0; i < 3; ++i) {
    ClientContext ctx;
    EchoRequest req;
    req.set_payload(std::string(64 << 20, 'b'));
    EchoResponse resp;
    Status s = stub->Unary(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED) << s.ToString();
    EXPECT_THAT(s.error_message(), HasSubstr("larger than max"));
    ClientContext ctx2;
    EchoRequest small;
    small.set_payload(absl::StrCat("after ", i));
    Status s2 = stub->Unary(&ctx2, small, &resp);
    ASSERT_TRUE(s2.ok()) << s2.ToString();
    EXPECT_EQ(resp.payload(), small.payload());
  }
}

// ---- 2. the channel destroyed with calls queued --------------------------------------

void DestroyWithQueuedCalls(const std::string& target, bool expect_ok) {
  constexpr size_t kCalls = 1000;
  std::vector<std::unique_ptr<Slot>> slots(kCalls);
  Ledger ledger(kCalls);
  {
    auto channel = CreateChannel(target, InsecureChannelCredentials());
    auto stub = TestService::NewStub(channel);
    for (size_t i = 0; i < kCalls; ++i) {
      slots[i] = std::make_unique<Slot>();
      Slot* s = slots[i].get();
      s->req.set_payload(absl::StrCat("queued ", i));
      s->ctx.set_deadline(SysClock::now() + seconds(30));
      stub->async()->Unary(&s->ctx, &s->req, &s->resp, [s, i, &ledger](Status st) {
        s->status = st;
        ledger.End(i);
      });
    }
  }  // the user's last references to the channel and the stub go here
  ASSERT_TRUE(Eventually([&] { return ledger.total.load() >= kCalls; }, seconds(60)))
      << ledger.total.load() << " of " << kCalls << " callbacks ran";
  std::this_thread::sleep_for(milliseconds(50));  // no second ending may follow
  EXPECT_TRUE(ledger.AllOnce());
  for (size_t i = 0; i < kCalls; ++i) {
    if (expect_ok) {
      ASSERT_TRUE(slots[i]->status.ok()) << i << ": " << slots[i]->status.ToString();
      ASSERT_EQ(slots[i]->resp.payload(), slots[i]->req.payload());
    } else {
      ASSERT_EQ(slots[i]->status.error_code(), StatusCode::UNAVAILABLE)
          << slots[i]->status.ToString();
    }
  }
}

TEST(CallerSafety, ChannelDestroyedWithCallsQueuedRunsEveryCallbackOnce) {
  auto server = StartServer();
  DestroyWithQueuedCalls(server->address(), /*expect_ok=*/true);
}

TEST(CallerSafety, ChannelDestroyedWithCallsQueuedToADeadTargetFailsEachOnce) {
  // A port nothing listens on: every call fails fast, once.
  int port;
  {
    transport::testing::RawServer probe("");
    port = probe.port();
  }
  DestroyWithQueuedCalls(absl::StrCat("127.0.0.1:", port), /*expect_ok=*/false);
}

// ---- 3. deadlines at the ends of time ----------------------------------------------

TEST(CallerSafety, DeadlinesInThePastEndDeadlineExceededAtOnceAndMaxMeansNone) {
  auto server = StartServer();
  auto channel = CreateChannel(server->address(), InsecureChannelCredentials());
  auto stub = TestService::NewStub(channel);
  EchoRequest req;
  req.set_payload("t");
  for (SysClock::time_point d :
       {SysClock::time_point::min(), SysClock::time_point(), SysClock::now() - seconds(1)}) {
    ClientContext ctx;
    ctx.set_deadline(d);
    EchoResponse resp;
    auto start = std::chrono::steady_clock::now();
    Status s = stub->Unary(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED) << s.ToString();
    EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(2));
    // The async form and a stream the same.
    ClientContext actx;
    actx.set_deadline(d);
    std::promise<Status> p;
    stub->async()->Unary(&actx, &req, &resp, [&p](Status st) { p.set_value(st); });
    EXPECT_EQ(p.get_future().get().error_code(), StatusCode::DEADLINE_EXCEEDED);
    ClientContext sctx;
    sctx.set_deadline(d);
    auto reader = stub->ServerStream(&sctx, req);
    EXPECT_FALSE(reader->Read(&resp));
    EXPECT_EQ(reader->Finish().error_code(), StatusCode::DEADLINE_EXCEEDED);
  }
  ClientContext ctx;
  ctx.set_deadline(SysClock::time_point::max());
  EchoResponse resp;
  Status s = stub->Unary(&ctx, req, &resp);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(resp.payload(), "t");
  EXPECT_FALSE(channel->WaitForStateChange(GRPC_CHANNEL_READY, SysClock::time_point::min()));
}

// ---- 4. blocking on CQ threads ------------------------------------------------------

// Runs `fn` inside a unary call's callback (on a CQ thread of `channel`) and
// waits for it: false if it did not return within `limit`.
bool InCallback(TestService::Stub* stub, std::function<void()> fn,
                std::chrono::milliseconds limit = milliseconds(10000)) {
  auto ctx = std::make_shared<ClientContext>();
  auto req = std::make_shared<EchoRequest>();
  auto resp = std::make_shared<EchoResponse>();
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> f = done->get_future();
  stub->async()->Unary(ctx.get(), req.get(), resp.get(),
                       [ctx, req, resp, done, fn = std::move(fn)](Status) {
                         fn();
                         done->set_value();
                       });
  return f.wait_for(limit) == std::future_status::ready;
}

TEST(CallerSafety, BlockingStreamOpsInsideACallbackOnItsThreadFailAtOnce) {
  auto server = StartServer();
  auto channel = OwnThreadsChannel(server->address(), 1);  // the stream's thread is the callback's
  auto stub = TestService::NewStub(channel);
  ClientContext ctx;
  EchoRequest req;
  req.set_count(3);
  auto reader = stub->ServerStream(&ctx, req);
  bool read = true;
  Status finish;
  ASSERT_TRUE(InCallback(stub.get(), [&] {
    EchoResponse m;
    read = reader->Read(&m);
    finish = reader->Finish();
  }));
  EXPECT_FALSE(read);
  EXPECT_EQ(finish.error_code(), StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(finish.error_message(), HasSubstr("CQ threads"));
  // The same reader still works from this thread.
  EchoResponse m;
  int n = 0;
  while (reader->Read(&m)) ++n;
  EXPECT_EQ(n, 3);
  EXPECT_TRUE(reader->Finish().ok());
  // Destroying it (finished) inside a callback returns.
  ASSERT_TRUE(InCallback(stub.get(), [&] { reader.reset(); }));
  // And one not finished: the call is cancelled, nothing waits.
  ClientContext ctx2;
  auto unfinished = stub->ServerStream(&ctx2, req);
  ASSERT_TRUE(InCallback(stub.get(), [&] { unfinished.reset(); }));
  // A blocking unary and a new stream inside a callback are refused too.
  Status unary, stream;
  ASSERT_TRUE(InCallback(stub.get(), [&] {
    ClientContext c;
    EchoResponse r;
    unary = stub->Unary(&c, req, &r);
    ClientContext c2;
    auto rd = stub->ServerStream(&c2, req);
    stream = rd->Finish();
  }));
  EXPECT_EQ(unary.error_code(), StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(stream.error_code(), StatusCode::FAILED_PRECONDITION);
}

TEST(CallerSafety, BlockingCallFromOneChannelsCqThreadToAnotherChannelWorks) {
  auto server = StartServer();
  struct Case {
    int a_threads, b_threads;  // 0: the process-wide CQ threads
  };
  for (Case c : {Case{1, 1}, Case{0, 1}, Case{1, 0}}) {
    auto a = c.a_threads ? OwnThreadsChannel(server->address(), c.a_threads)
                         : CreateChannel(server->address(), InsecureChannelCredentials());
    auto b = c.b_threads ? OwnThreadsChannel(server->address(), c.b_threads)
                         : CreateChannel(server->address(), InsecureChannelCredentials());
    auto stub_a = TestService::NewStub(a);
    auto stub_b = TestService::NewStub(b);
    Status got;
    EchoResponse resp;
    auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(InCallback(stub_a.get(),
                           [&] {
                             ClientContext ctx;
                             ctx.set_deadline(SysClock::now() + seconds(5));
                             EchoRequest req;
                             req.set_payload("across");
                             got = stub_b->Unary(&ctx, req, &resp);
                           }))
        << c.a_threads << "/" << c.b_threads << ": hung";
    EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));
    if (c.a_threads == 0 && c.b_threads == 0) continue;
    EXPECT_TRUE(got.ok()) << c.a_threads << "/" << c.b_threads << ": " << got.ToString();
    EXPECT_EQ(resp.payload(), "across");
    // Nothing stuck behind it: 8 calls on a brand-new channel.
    auto fresh =
        TestService::NewStub(CreateChannel(server->address(), InsecureChannelCredentials()));
    for (int i = 0; i < 8; ++i) {
      ClientContext ctx;
      ctx.set_deadline(SysClock::now() + seconds(5));
      EchoRequest req;
      req.set_payload(absl::StrCat("fresh ", i));
      ASSERT_TRUE(fresh->Unary(&ctx, req, &resp).ok());
    }
  }
}

TEST(CallerSafety, WaitForConnectedInsideACallbackDoesNotBlockItsThread) {
  int port;
  {
    transport::testing::RawServer probe("");
    port = probe.port();
  }
  auto dead = CreateChannel(absl::StrCat("127.0.0.1:", port), InsecureChannelCredentials());
  auto server = StartServer();
  auto live = CreateChannel(server->address(), InsecureChannelCredentials());
  auto stub = TestService::NewStub(live);
  bool connected = true, changed = true;
  auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(InCallback(stub.get(), [&] {
    // The callback runs on a process-wide CQ thread, which `dead` shares.
    connected = dead->WaitForConnected(SysClock::now() + seconds(30));
    changed = dead->WaitForStateChange(dead->GetState(false), SysClock::now() + seconds(30));
  }));
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(3));
  EXPECT_FALSE(connected);
  EXPECT_FALSE(changed);
}

// ---- 6. nothing left once the channel is gone -----------------------------------------

class BidiOnce final : public ClientBidiReactor<EchoRequest, EchoResponse> {
 public:
  explicit BidiOnce(TestService::Stub* stub) {
    req_.set_payload("bidi");
    stub->async()->Bidi(&ctx_, this);
    StartRead(&resp_);
    StartWriteLast(&req_, WriteOptions());
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (ok) StartRead(&resp_);
  }
  void OnDone(const Status& s) override { done_.set_value(s); }
  Status Wait() { return done_.get_future().get(); }

 private:
  ClientContext ctx_;
  EchoRequest req_;
  EchoResponse resp_;
  std::promise<Status> done_;
};

TEST(CallerSafety, NoDescriptorOrThreadLeftOnceTheLastChannelIsGone) {
  auto server = StartServer();
  // Settle: whatever earlier tests left must be gone first.
  const int fds = testing::OpenFds();
  const long threads = testing::ThreadCount();
  {
    auto channel = CreateChannel(server->address(), InsecureChannelCredentials());
    auto stub = TestService::NewStub(channel);
    auto r = std::make_unique<BidiOnce>(stub.get());
    EXPECT_TRUE(r->Wait().ok());
  }
  EXPECT_TRUE(Eventually([&] { return testing::OpenFds() <= fds; }, seconds(10)))
      << testing::OpenFds() << " fds, " << fds << " before";
  {
    int port;
    {
      transport::testing::RawServer probe("");
      port = probe.port();
    }
    auto dead = CreateChannel(absl::StrCat("127.0.0.1:", port), InsecureChannelCredentials());
    dead->GetState(true);
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_TRUE(Eventually([&] { return testing::OpenFds() <= fds; }, seconds(10)))
      << testing::OpenFds() << " fds, " << fds << " before";
  EXPECT_TRUE(Eventually([&] { return testing::ThreadCount() <= threads; }, seconds(10)))
      << testing::ThreadCount() << " threads, " << threads << " before";
}

// ---- 7. the smaller cases: each a clear error -------------------------------------------

TEST(CallerSafety, ConnectTimeoutBoundsEveryAttemptAgainstASilentServer) {
  transport::testing::RawServer silent("");  // accepts, never speaks
  ChannelArguments args;
  args.SetInt("ringrpc.connect_timeout_ms", 300);
  auto channel = CreateCustomChannel(silent.address(), InsecureChannelCredentials(), args);
  auto stub = TestService::NewStub(channel);
  ClientContext ctx;
  ctx.set_deadline(SysClock::now() + seconds(20));
  EchoRequest req;
  EchoResponse resp;
  auto start = std::chrono::steady_clock::now();
  Status s = stub->Unary(&ctx, req, &resp);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE) << s.ToString();
  EXPECT_LT(took, seconds(5)) << s.ToString();
  EXPECT_GE(took, milliseconds(250));
}

// TryCancel ends a wait_for_ready call that is waiting out an address's
// reconnect backoff at once, not when the backoff is over (grpc++ ends it
// at once too). Every form shares the wait: the blocking one is checked.
TEST(CallerSafety, TryCancelEndsAWaitForReadyCallInItsBackoffAtOnce) {
  ChannelArguments args;
  args.SetInt("grpc.initial_reconnect_backoff_ms", 10000);  // refused: 10 s of backoff
  auto channel = CreateCustomChannel(absl::StrCat("127.0.0.1:", testing::UnusedLoopbackPort()),
                                     InsecureChannelCredentials(), args);
  auto stub = TestService::NewStub(channel);
  ClientContext ctx;
  ctx.set_wait_for_ready(true);  // and no deadline
  auto call = std::async(std::launch::async, [&] {
    EchoResponse resp;
    return stub->Unary(&ctx, EchoRequest(), &resp);
  });
  // Long enough for the dial to be refused and the backoff to begin.
  EXPECT_EQ(call.wait_for(milliseconds(500)), std::future_status::timeout);
  const auto cancelled_at = std::chrono::steady_clock::now();
  ctx.TryCancel();
  ASSERT_EQ(call.wait_for(seconds(3)), std::future_status::ready)
      << "still waiting for the backoff 3 s after TryCancel";
  const auto took = std::chrono::steady_clock::now() - cancelled_at;
  Status s = call.get();
  EXPECT_EQ(s.error_code(), StatusCode::CANCELLED) << s.ToString();
  EXPECT_LT(took, kSanitized ? milliseconds(1000) : milliseconds(500));
}

// A channel of one CQ thread to a server that accepts and never speaks,
// and an async call on it whose dial is out: calls made now wait in the
// pool behind that dial (one at a time per address and thread, gRFC A105).
struct DialHeld {
  DialHeld() {
    ChannelArguments args;
    args.SetInt("ringrpc.cq_threads", 1);
    channel = CreateCustomChannel(silent.address(), InsecureChannelCredentials(), args);
    stub = TestService::NewStub(channel);
    dialer_ctx.set_deadline(SysClock::now() + seconds(60));
    stub->async()->Unary(&dialer_ctx, &req, &dialer_resp,
                         [this](Status s) { dialer_done.set_value(s); });
    std::this_thread::sleep_for(milliseconds(200));  // its dial is out
  }
  transport::testing::RawServer silent{""};
  std::shared_ptr<Channel> channel;
  std::unique_ptr<TestService::Stub> stub;
  ClientContext dialer_ctx;
  EchoRequest req;
  EchoResponse dialer_resp;
  std::promise<Status> dialer_done;
};

// A call waiting in the pool behind another call's dial (one connect
// attempt at a time per address and thread, gRFC A105) ends CANCELLED as
// soon as it is cancelled, not when that dial ends (the connect timeout,
// 20 s, against a server that never speaks); the other call's dial goes on.
TEST(CallerSafety, TryCancelEndsACallWaitingBehindAnotherCallsDialAtOnce) {
  DialHeld held;
  auto& [silent, channel, stub, dialer_ctx, req, dialer_resp, dialer_done] = held;
  ClientContext ctx;
  ctx.set_deadline(SysClock::now() + seconds(30));
  auto call = std::async(std::launch::async, [&] {
    EchoResponse resp;
    return stub->Unary(&ctx, req, &resp);
  });
  EXPECT_EQ(call.wait_for(milliseconds(300)), std::future_status::timeout);
  const auto cancelled_at = std::chrono::steady_clock::now();
  ctx.TryCancel();
  ASSERT_EQ(call.wait_for(seconds(5)), std::future_status::ready)
      << "still waiting for the other call's dial 5 s after TryCancel";
  const auto took = std::chrono::steady_clock::now() - cancelled_at;
  Status s = call.get();
  EXPECT_EQ(s.error_code(), StatusCode::CANCELLED) << s.ToString();
  EXPECT_LT(took, kSanitized ? milliseconds(1000) : milliseconds(500));
  // The dialling call was not disturbed: still waiting, until it is
  // cancelled too (it owns the dial: that ends with it).
  auto dialer = dialer_done.get_future();
  EXPECT_EQ(dialer.wait_for(milliseconds(100)), std::future_status::timeout);
  dialer_ctx.TryCancel();
  ASSERT_EQ(dialer.wait_for(seconds(5)), std::future_status::ready);
  EXPECT_EQ(dialer.get().error_code(), StatusCode::CANCELLED);
}

// TryCancel racing the deadline of calls waiting behind another call's
// dial: whichever ends the wait first, the other finds nothing to end (the
// race suite once saw, under ASAN, a cancel posted while the TryCancel
// thread still held the wait's registration reach the wait after its
// deadline had ended it and its frame was gone).
TEST(CallerSafety, TryCancelRacingTheDeadlineOfCallsWaitingBehindADial) {
  DialHeld held;
  auto& [silent, channel, stub, dialer_ctx, req, dialer_resp, dialer_done] = held;
  struct Waiter {
    ClientContext ctx;
    EchoResponse resp;
    std::atomic<int> ends{0};
    Status status;
  };
  constexpr int kCalls = 2000;
  std::vector<std::unique_ptr<Waiter>> waiters;
  for (int i = 0; i < kCalls; ++i) {
    auto w = std::make_unique<Waiter>();
    w->ctx.set_deadline(SysClock::now() + std::chrono::microseconds(200 + (i * 131) % 1500));
    Waiter* p = w.get();
    stub->async()->Unary(&w->ctx, &req, &w->resp, [p](Status s) {
      if (p->ends.load() == 0) p->status = s;
      p->ends.fetch_add(1);
    });
    std::this_thread::sleep_for(std::chrono::microseconds((i * 37) % 1200));
    w->ctx.TryCancel();
    waiters.push_back(std::move(w));
  }
  for (auto& w : waiters) {
    for (int i = 0; i < 5000 && w->ends.load() == 0; ++i)
      std::this_thread::sleep_for(milliseconds(1));
  }
  std::this_thread::sleep_for(milliseconds(20));
  int cancelled = 0, deadline = 0;
  for (auto& w : waiters) {
    ASSERT_EQ(w->ends.load(), 1);
    const StatusCode c = w->status.error_code();
    ASSERT_TRUE(c == StatusCode::CANCELLED || c == StatusCode::DEADLINE_EXCEEDED)
        << w->status.ToString();
    (c == StatusCode::CANCELLED ? cancelled : deadline)++;
  }
  std::printf("%d cancelled, %d past their deadline\n", cancelled, deadline);
  dialer_ctx.TryCancel();
  auto dialer = dialer_done.get_future();
  ASSERT_EQ(dialer.wait_for(seconds(5)), std::future_status::ready);
}

TEST(CallerSafety, AResponseThatIsNotApplicationGrpcFailsNamingTheContentType) {
  using namespace transport::testing;
  // SETTINGS at once; the answer once the call's stream 1 exists.
  RawServer html(ServerSettings(),
                 Headers(1, false, {{":status", "200"}, {"content-type", "text/html"}}) +
                     Data(1, GrpcMessage("")) + Trailers(1, "0"),
                 /*delay_ms=*/300);
  auto channel = CreateChannel(html.address(), InsecureChannelCredentials());
  auto stub = TestService::NewStub(channel);
  ClientContext ctx;
  ctx.set_deadline(SysClock::now() + seconds(10));
  EchoRequest req;
  EchoResponse resp;
  Status s = stub->Unary(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::UNKNOWN) << s.ToString();
  EXPECT_THAT(s.error_message(), HasSubstr("text/html"));
}

TEST(CallerSafety, ConnectionSpecificMetadataIsRefusedBeforeSending) {
  auto server = StartServer();
  auto stub = TestService::NewStub(CreateChannel(server->address(), InsecureChannelCredentials()));
  for (const char* key :
       {"connection", "transfer-encoding", "upgrade", "keep-alive", "proxy-connection"}) {
    ClientContext ctx;
    ctx.AddMetadata(key, "x");
    EchoRequest req;
    EchoResponse resp;
    Status s = stub->Unary(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT) << key;
    EXPECT_THAT(s.error_message(), HasSubstr(key));
  }
}

TEST(CallerSafety, HugeLengthPrefixWithUnlimitedReceiveAllocatesNothingUpFront) {
  using namespace transport::testing;
  // 4 GiB announced, 5 bytes sent: the call ends at its deadline.
  RawServer liar(ServerSettings(),
                 ResponseHeaders(1) + Data(1, GrpcMessage("hello", 0, 0xFFFFFFFFu)),
                 /*delay_ms=*/400);
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &old), 0);
  ChannelArguments args;
  args.SetInt("grpc.max_receive_message_length", -1);
  auto channel = CreateCustomChannel(liar.address(), InsecureChannelCredentials(), args);
  auto stub = TestService::NewStub(channel);
  // Connected first: the address-space limit then only has to leave room
  // for what the call itself needs.
  ASSERT_TRUE(channel->WaitForConnected(SysClock::now() + seconds(10)));
  if (!kSanitized) {  // sanitizers reserve terabytes of address space
    rlimit low = old;
    low.rlim_cur = 2ull << 30;  // below the 4 GiB the prefix announces
    ASSERT_EQ(setrlimit(RLIMIT_AS, &low), 0);
  }
  ClientContext ctx;
  ctx.set_deadline(SysClock::now() + milliseconds(1500));
  EchoRequest req;
  EchoResponse resp;
  Status s = stub->Unary(&ctx, req, &resp);
  setrlimit(RLIMIT_AS, &old);
  EXPECT_GE(liar.bytes_received(), 1u);
  EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED) << s.ToString();
}

class Recorder final : public ClientBidiReactor<EchoRequest, EchoResponse> {
 public:
  void OnDone(const Status& s) override {
    thread = std::this_thread::get_id();
    done.set_value(s);
  }
  std::thread::id thread;
  std::promise<Status> done;
  ClientContext ctx;
};

TEST(CallerSafety, AReactorOnAMisconfiguredChannelEndsOnACqThreadNotInsideStartCall) {
  ChannelArguments args;
  args.SetInt("grpc.max_receive_message_length", -7);
  auto channel = CreateCustomChannel("127.0.0.1:1", InsecureChannelCredentials(), args);
  ASSERT_FALSE(channel->configuration_status().ok());
  auto stub = TestService::NewStub(channel);
  Recorder r;
  stub->async()->Bidi(&r.ctx, &r);
  r.StartCall();
  Status s = r.done.get_future().get();
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT) << s.ToString();
  // On a CQ thread, not synchronously inside StartCall on this one.
  EXPECT_NE(r.thread, std::this_thread::get_id());
  // The async unary form the same.
  std::promise<std::thread::id> where;
  ClientContext ctx;
  EchoRequest req;
  EchoResponse resp;
  stub->async()->Unary(&ctx, &req, &resp, [&](Status st) {
    EXPECT_EQ(st.error_code(), StatusCode::INVALID_ARGUMENT);
    where.set_value(std::this_thread::get_id());
  });
  EXPECT_NE(where.get_future().get(), std::this_thread::get_id());
}

TEST(CallerSafety, MetadataOverTheServersLimitIsResourceExhaustedAndNotRetried) {
  auto server = StartServer();
  auto channel = CreateChannel(server->address(), InsecureChannelCredentials());
  auto stub = TestService::NewStub(channel);
  ASSERT_TRUE(channel->WaitForConnected(SysClock::now() + seconds(10)));
  ClientContext ctx;
  ctx.AddMetadata("x-big", std::string(1 << 20, 'm'));
  EchoRequest req;
  EchoResponse resp;
  Status s = stub->Unary(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::RESOURCE_EXHAUSTED) << s.ToString();
  EXPECT_THAT(s.error_message(), HasSubstr("metadata of"));
  EXPECT_THAT(s.error_message(), Not(HasSubstr("retry")));
  EXPECT_THAT(channel->MetricsText(), HasSubstr("ringrpc_transparent_retries_total 0\n"));
}

TEST(CallerSafety, TargetsWithControlBytesAreRefusedAndEscapedInTheError) {
  for (std::string target : {std::string("dns:///bad\x01host:50051"), std::string("a\nb:1"),
                             std::string("host\0name:1", 11), std::string("sp ace:80")}) {
    auto channel = CreateChannel(target, InsecureChannelCredentials());
    Status s = channel->configuration_status();
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT) << s.ToString();
    for (char c : s.error_message()) {
      ASSERT_TRUE(c >= 0x20 && c < 0x7f) << "raw byte " << int(c) << " in: " << s.error_message();
    }
  }
}

TEST(CallerSafety, ANullContextIsInvalidArgumentInEveryForm) {
  auto server = StartServer();
  auto stub = TestService::NewStub(CreateChannel(server->address(), InsecureChannelCredentials()));
  EchoRequest req;
  EchoResponse resp;
  Status s = stub->Unary(nullptr, req, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT) << s.ToString();
  EXPECT_THAT(s.error_message(), HasSubstr("ClientContext is null"));
  std::promise<Status> p;
  stub->async()->Unary(nullptr, &req, &resp, [&p](Status st) { p.set_value(st); });
  EXPECT_EQ(p.get_future().get().error_code(), StatusCode::INVALID_ARGUMENT);
  auto reader = stub->ServerStream(nullptr, req);
  EXPECT_FALSE(reader->Read(&resp));
  EXPECT_EQ(reader->Finish().error_code(), StatusCode::INVALID_ARGUMENT);
}

// ---- 8. short-lived channels ------------------------------------------------------------

// A channel per call to one target from several threads: channels with the
// same target and arguments share one subchannel pool, and a new channel
// must never meet a pool that the last one is closing (it waited out its
// whole deadline before the fix: ~13% of calls).
TEST(CallerSafety, AChannelPerCallToOneTargetNeverWaitsOutItsDeadline) {
  auto server = StartServer();
  constexpr int kThreads = 4;
  const int kPerThread = kSanitized ? 40 : 150;
  std::atomic<int> ok{0};
  std::mutex mu;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto channel = CreateCustomChannel(server->address(), InsecureChannelCredentials(),
                                           ChannelArguments());
        auto stub = TestService::NewStub(channel);
        ClientContext ctx;
        ctx.set_deadline(SysClock::now() + seconds(3));
        EchoRequest req;
        req.set_payload(absl::StrCat(t, "/", i));
        EchoResponse resp;
        Status s = stub->Unary(&ctx, req, &resp);
        if (s.ok() && resp.payload() == req.payload()) {
          ok.fetch_add(1);
        } else {
          std::lock_guard<std::mutex> lock(mu);
          failures.push_back(absl::StrCat(t, "/", i, ": ", s.ToString()));
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), kThreads * kPerThread);
  EXPECT_THAT(failures, ::testing::IsEmpty());
}

// The same from one thread, where each short-lived channel makes a few
// calls, some of them refused locally (bad metadata) before any is sent.
TEST(CallerSafety, ShortLivedChannelsWithLocallyRefusedCallsNeverStallTheNext) {
  auto server = StartServer();
  const int kChannels = kSanitized ? 60 : 200;
  std::vector<std::string> failures;
  for (int i = 0; i < kChannels; ++i) {
    auto stub = TestService::NewStub(
        CreateCustomChannel(server->address(), InsecureChannelCredentials(), ChannelArguments()));
    for (int c = 0; c < 3; ++c) {
      ClientContext ctx;
      ctx.set_deadline(SysClock::now() + seconds(3));
      const bool refused = (i + c) % 3 == 0;
      if (refused) ctx.AddMetadata("connection", "x");
      EchoRequest req;
      req.set_payload(absl::StrCat(i, "/", c));
      EchoResponse resp;
      Status s = stub->Unary(&ctx, req, &resp);
      const StatusCode want = refused ? StatusCode::INVALID_ARGUMENT : StatusCode::OK;
      if (s.error_code() != want || (s.ok() && resp.payload() != req.payload())) {
        failures.push_back(absl::StrCat(i, "/", c, ": ", s.ToString()));
      }
    }
  }
  EXPECT_THAT(failures, ::testing::IsEmpty());
}

}  // namespace
}  // namespace ringrpc
