// soak: mixed calls with injected faults for a set time (not in CI; run by
// tools/soak.sh). Two grpc++ test servers behind a round_robin channel
// that retries UNAVAILABLE (gRFC A6); a closed loop of unary calls
// (callback API) plus threads running server streams (blocking API), bidi
// ping-pongs (coroutines), hedged unary calls on a second channel, and two
// threads churning short-lived channels (one call each); every few seconds
// a fault: a server killed and restarted on its port, a server stopped for
// a second (keepalive notices), a generation bump. Prints a line every
// `--report_s` seconds and a summary: calls, failures by code, RSS, open
// sockets and descriptors at start (after warm-up) and end. Exit status 1
// if a call was lost or ended twice, descriptors grew by more than 8, the
// resident memory the allocator cannot give back (RSS after malloc_trim)
// grew by 5% or more after warm-up, or the heap in use once the load has
// stopped and every channel is gone exceeds the same measured before the
// load by more than kDrainedSlackKiB (a leak: what the channels, calls and
// connections left behind).
//
//   tools/soak.sh 10          # minutes
#include <malloc.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "ringrpc/client/blocking_stream.h"
#include "ringrpc/client/resolver.h"
#include "ringrpc/client/runtime/event_loop.h"
#include "tests/faults/load.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/process_stats.h"
#include "tests/testing/server_process.h"

namespace {

using namespace ringrpc;  // NOLINT
using std::chrono::milliseconds;
using std::chrono::seconds;
using Stub = ringrpc::test::ring::TestService::Stub;

struct Counters {
  std::atomic<uint64_t> streams{0}, stream_failures{0}, bidi_rounds{0}, bidi_failures{0}, hedged{0},
      hedged_failures{0}, churned{0}, churn_failures{0};
  // How the short-lived channels' calls failed: code and message, counted.
  std::mutex mu;
  std::map<std::string, uint64_t> churn_errors;
};

// Bytes the program has allocated and not freed (every malloc arena):
// what a leak grows. RSS also holds what the allocator keeps for reuse.
long HeapInUseKiB() { return long(mallinfo2().uordblks / 1024); }

// RSS once the allocator has returned its free pages to the kernel: what
// stays is memory in use plus fragments it cannot return. Raw RSS keeps
// the pages of the highest peak (glibc does not trim its thread arenas on
// its own), which says when the load peaked, not whether it leaks.
long TrimmedRssKiB() {
  malloc_trim(0);
  return testing::RssKiB();
}

// What the drained check allows: caches the library keeps for the life of
// the process (a CQ thread's free lists, interned metadata keys) and the
// allocator's own bookkeeping. 1.4 million short-lived channels leaking a
// byte each would exceed it.
constexpr long kDrainedSlackKiB = 1024;

// The heap in use, settled: sampled until two readings 200 ms apart agree
// within 16 KiB (connections of dropped channels close on their CQ
// threads), at most 10 s.
long SettledHeapKiB() {
  long last = HeapInUseKiB();
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    long now = HeapInUseKiB();
    if (std::labs(now - last) < 16) return now;
    last = now;
  }
  return last;
}

// Blocking unary calls on a channel that hedges them.
void HedgedLoop(Stub* stub, std::atomic<bool>* stop, Counters* c) {
  while (!stop->load()) {
    ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + seconds(2));
    test::EchoRequest req;
    req.set_payload("hedged");
    test::EchoResponse resp;
    (stub->Unary(&ctx, req, &resp).ok() ? c->hedged : c->hedged_failures).fetch_add(1);
  }
}

// A channel per call to one of the servers (as services that make a
// channel per request do): made, one call, dropped.
void ChurnLoop(const std::vector<int>* ports, std::atomic<bool>* stop, Counters* c, int seed) {
  std::mt19937 rng(seed);
  while (!stop->load()) {
    auto stub = ringrpc::test::ring::TestService::NewStub(CreateChannel(
        absl::StrCat("127.0.0.1:", (*ports)[rng() % ports->size()]), InsecureChannelCredentials()));
    ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + seconds(2));
    test::EchoRequest req;
    req.set_payload("churn");
    test::EchoResponse resp;
    Status s = stub->Unary(&ctx, req, &resp);
    (s.ok() ? c->churned : c->churn_failures).fetch_add(1);
    if (!s.ok()) {
      // The message without its variable tail (addresses, errno text).
      std::string m = s.error_message().substr(0, s.error_message().find(':'));
      std::lock_guard<std::mutex> lock(c->mu);
      ++c->churn_errors[absl::StrCat(StatusCodeName(s.error_code()), " \"", m, "\"")];
    }
  }
}

// Server streams of 20 messages, one after another, on a thread of its own.
void StreamLoop(Stub* stub, std::atomic<bool>* stop, Counters* c) {
  while (!stop->load()) {
    ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + seconds(2));
    test::EchoRequest req;
    req.set_count(20);
    req.set_response_size(512);
    auto reader = stub->ServerStream(&ctx, req);
    test::EchoResponse resp;
    while (reader->Read(&resp)) {
    }
    (reader->Finish().ok() ? c->streams : c->stream_failures).fetch_add(1);
  }
}

// Bidi ping-pong on a CQ thread: 50 rounds per stream.
Task<void> BidiLoop(Stub* stub, std::atomic<bool>* stop, Counters* c, std::atomic<int>* running) {
  while (!stop->load()) {
    ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + seconds(2));
    Status open;
    auto call = co_await stub->co_Bidi(&ctx, &open);
    if (call == nullptr) {
      c->bidi_failures.fetch_add(1);
      co_await SleepFor(*runtime::EventLoop::Current(), milliseconds(10));
      continue;
    }
    test::EchoRequest req;
    req.set_payload("ping");
    test::EchoResponse resp;
    for (int i = 0; i < 50 && !stop->load(); ++i) {
      co_await call->Write(req);
      if (!co_await call->Read(&resp)) break;
      c->bidi_rounds.fetch_add(1);
    }
    call->WritesDone();
    while (co_await call->Read(&resp)) {
    }
    if (!(co_await call->Finish()).ok()) c->bidi_failures.fetch_add(1);
  }
  running->fetch_sub(1);
}

}  // namespace

int main(int argc, char** argv) {
  double minutes = 1;
  int report_s = 30;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--minutes=", 10) == 0) minutes = std::atof(argv[i] + 10);
    if (std::strncmp(argv[i], "--report_s=", 11) == 0) report_s = std::atoi(argv[i] + 11);
  }
  std::vector<std::unique_ptr<testing::ServerProcess>> servers;
  std::vector<int> ports;
  for (int i = 0; i < 2; ++i) {
    auto s = testing::ServerProcess::Start();
    if (!s.ok()) {
      std::fprintf(stderr, "soak: %s\n", s.status().ToString().c_str());
      return 1;
    }
    ports.push_back((*s)->port());
    servers.push_back(std::move(*s));
  }
  // The heap before any load, after one call on a channel that is then
  // dropped (what the first call initialises once per process: the CQ
  // threads, the generated code's descriptors).
  {
    auto first = ringrpc::test::ring::TestService::NewStub(
        CreateChannel(absl::StrCat("127.0.0.1:", ports[0]), InsecureChannelCredentials()));
    ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + seconds(5));
    test::EchoRequest req;
    test::EchoResponse resp;
    Status s = first->Unary(&ctx, req, &resp);
    if (!s.ok()) {
      std::fprintf(stderr, "soak: first call: %s\n", s.error_message().c_str());
      return 1;
    }
  }
  const long heap_before = SettledHeapKiB();
  ChannelArguments args;
  args.SetString("grpc.service_config",
                 R"({"loadBalancingConfig":[{"round_robin":{}}],)"
                 R"("methodConfig":[{"name":[{"service":"ringrpc.test.TestService"}],)"
                 R"("retryPolicy":{"maxAttempts":3,"initialBackoff":"0.01s",)"
                 R"("maxBackoff":"0.1s","backoffMultiplier":2,)"
                 R"("retryableStatusCodes":["UNAVAILABLE"]}}]})");
  args.SetInt("grpc.keepalive_time_ms", 500);
  args.SetInt("grpc.keepalive_timeout_ms", 500);
  args.SetInt("grpc.initial_reconnect_backoff_ms", 100);
  args.SetInt("grpc.max_reconnect_backoff_ms", 500);
  auto channel =
      CreateCustomChannel(absl::StrCat("ipv4:127.0.0.1:", ports[0], ",127.0.0.1:", ports[1]),
                          InsecureChannelCredentials(), args);
  auto stub = ringrpc::test::ring::TestService::NewStub(channel);
  ChannelArguments hedge_args = args;
  hedge_args.SetString("grpc.service_config",
                       R"({"loadBalancingConfig":[{"round_robin":{}}],)"
                       R"("methodConfig":[{"name":[{"service":"ringrpc.test.TestService"}],)"
                       R"("hedgingPolicy":{"maxAttempts":2,"hedgingDelay":"0.005s",)"
                       R"("nonFatalStatusCodes":["UNAVAILABLE"]}}]})");
  auto hedged_channel =
      CreateCustomChannel(absl::StrCat("ipv4:127.0.0.1:", ports[0], ",127.0.0.1:", ports[1]),
                          InsecureChannelCredentials(), hedge_args);
  auto hedged_stub = ringrpc::test::ring::TestService::NewStub(hedged_channel);

  std::atomic<bool> stop{false};
  Counters counters;
  auto load = std::make_unique<testing::Load>(channel.get(), 32, milliseconds(2000));
  testing::Load& unary = *load;
  // Records of ended calls go after 3 s (the calls' deadline is 2 s): at
  // ~9,000 calls/s a 10 s window alone was ~28 MB of the test's own memory
  // (heaptrack), filling while the rate ramped up.
  unary.ForgetEndedAfter(seconds(3));
  unary.Start();
  std::vector<std::thread> streamers;
  for (int i = 0; i < 2; ++i) streamers.emplace_back(StreamLoop, stub.get(), &stop, &counters);
  streamers.emplace_back(HedgedLoop, hedged_stub.get(), &stop, &counters);
  for (int i = 0; i < 2; ++i) streamers.emplace_back(ChurnLoop, &ports, &stop, &counters, 7 + i);
  std::atomic<int> bidis{4};
  for (int i = 0; i < 4; ++i) channel->Spawn(BidiLoop(stub.get(), &stop, &counters, &bidis));

  std::mt19937 rng(42);
  auto start = std::chrono::steady_clock::now();
  auto end = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(minutes * 60));
  // A fixed warm-up, whatever the length, so that "RSS grew < 5% after it"
  // means the same for a 2-minute and a 60-minute run (it was a quarter of
  // the run, capped at 60 s).
  auto warm = start + seconds(30);
  long rss_warm = -1, heap_warm = -1, trimmed_warm = -1;
  int sockets_warm = -1;
  int fds_warm = -1;
  auto next_report = start + seconds(report_s);
  auto next_fault = start + seconds(3);
  uint64_t faults = 0;
  while (std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(milliseconds(100));
    auto now = std::chrono::steady_clock::now();
    if (rss_warm < 0 && now >= warm) {
      rss_warm = testing::RssKiB();
      trimmed_warm = TrimmedRssKiB();
      heap_warm = HeapInUseKiB();
      sockets_warm = testing::OpenSockets();
      fds_warm = testing::OpenFds();
    }
    if (now >= next_fault) {
      ++faults;
      size_t victim = rng() % 2;
      switch (rng() % 3) {
        case 0: {  // killed, back on its port 300 ms later
          servers[victim]->Kill();
          std::this_thread::sleep_for(milliseconds(300));
          auto s = testing::ServerProcess::Start(absl::StrCat("127.0.0.1:", ports[victim]));
          if (s.ok()) servers[victim] = std::move(*s);
          break;
        }
        case 1:  // a black hole for a second
          servers[victim]->Signal(SIGSTOP);
          std::this_thread::sleep_for(seconds(1));
          servers[victim]->Signal(SIGCONT);
          break;
        default:
          channel->Invalidate();
      }
      next_fault = now + seconds(2 + rng() % 4);
    }
    if (now >= next_report) {
      testing::Load::Report r = unary.Summary();
      // In this order: raw RSS (pages kept since the last report's trim
      // included), then the trim.
      const long rss = testing::RssKiB(), heap = HeapInUseKiB();
      const long trimmed = TrimmedRssKiB();
      std::printf(
          "t=%4llds unary=%zu ok=%d unavailable=%d deadline=%d streams=%llu/%llu "
          "bidi=%llu/%llu hedged=%llu/%llu churned=%llu/%llu faults=%llu rss=%ldKiB "
          "heap=%ldKiB trimmed_rss=%ldKiB sockets=%d fds=%d\n",
          (long long)std::chrono::duration_cast<seconds>(now - start).count(), r.issued,
          r.count(StatusCode::OK), r.count(StatusCode::UNAVAILABLE),
          r.count(StatusCode::DEADLINE_EXCEEDED), (unsigned long long)counters.streams.load(),
          (unsigned long long)counters.stream_failures.load(),
          (unsigned long long)counters.bidi_rounds.load(),
          (unsigned long long)counters.bidi_failures.load(),
          (unsigned long long)counters.hedged.load(),
          (unsigned long long)counters.hedged_failures.load(),
          (unsigned long long)counters.churned.load(),
          (unsigned long long)counters.churn_failures.load(), (unsigned long long)faults, rss, heap,
          trimmed, testing::OpenSockets(), testing::OpenFds());
      std::fflush(stdout);
      next_report = now + seconds(report_s);
    }
  }
  for (auto& s : servers) s->Signal(SIGCONT);
  long rss_end = testing::RssKiB();
  long heap_end = HeapInUseKiB();
  long trimmed_end = TrimmedRssKiB();
  int sockets_end = testing::OpenSockets();
  int fds_end = testing::OpenFds();
  stop = true;
  unary.Stop();
  for (auto& t : streamers) t.join();
  for (int i = 0; i < 500 && bidis.load() > 0; ++i) std::this_thread::sleep_for(milliseconds(10));
  testing::Load::Report r = unary.Summary();
  double growth = rss_warm > 0 ? 100.0 * (rss_end - rss_warm) / rss_warm : 0;
  double trimmed_growth =
      trimmed_warm > 0 ? 100.0 * (trimmed_end - trimmed_warm) / trimmed_warm : 0;
  pool::PoolMetrics m = channel->Metrics();
  // Drained: the load gone, every channel dropped.
  uint64_t channels_made = counters.churned.load() + counters.churn_failures.load() + 2;
  load.reset();
  hedged_stub.reset();
  hedged_channel.reset();
  stub.reset();
  channel.reset();
  const long heap_drained = SettledHeapKiB();
  std::printf("\nsoak: %.1f min, %llu faults injected\n", minutes, (unsigned long long)faults);
  std::printf("unary calls: %zu issued, %zu ended once, %zu ended twice, %zu never ended\n",
              r.issued, r.ended_once, r.ended_more, r.not_ended);
  for (auto [code, n] : r.codes) std::printf("  %-20s %d\n", StatusCodeName(code), n);
  std::printf("server streams: %llu ok, %llu failed; bidi rounds: %llu, streams failed: %llu\n",
              (unsigned long long)counters.streams.load(),
              (unsigned long long)counters.stream_failures.load(),
              (unsigned long long)counters.bidi_rounds.load(),
              (unsigned long long)counters.bidi_failures.load());
  std::printf("hedged calls: %llu ok, %llu failed; short-lived channels: %llu ok, %llu failed\n",
              (unsigned long long)counters.hedged.load(),
              (unsigned long long)counters.hedged_failures.load(),
              (unsigned long long)counters.churned.load(),
              (unsigned long long)counters.churn_failures.load());
  {
    std::lock_guard<std::mutex> lock(counters.mu);
    for (const auto& [what, n] : counters.churn_errors) {
      std::printf("  short-lived channel call failed %llu times: %s\n", (unsigned long long)n,
                  what.c_str());
    }
  }
  std::printf("heap in use after warm-up %ld KiB, at the end %ld KiB\n", heap_warm, heap_end);
  std::printf(
      "heap in use drained (no load, no channel) %ld KiB, before the load %ld KiB "
      "(%+ld KiB over %llu channels, %.2f bytes each; allowed %+ld KiB)\n",
      heap_drained, heap_before, heap_drained - heap_before, (unsigned long long)channels_made,
      1024.0 * double(heap_drained - heap_before) / double(channels_made), kDrainedSlackKiB);
  std::printf(
      "RSS after warm-up %ld KiB, at the end %ld KiB (%+.1f%%, the allocator's peak "
      "included)\n",
      rss_warm, rss_end, growth);
  std::printf("RSS after malloc_trim: after warm-up %ld KiB, at the end %ld KiB (%+.1f%%)\n",
              trimmed_warm, trimmed_end, trimmed_growth);
  std::printf("sockets %d -> %d; descriptors %d -> %d\n", sockets_warm, sockets_end, fds_warm,
              fds_end);
  std::printf("pool: %s (conserved: %s)\n", m.ToString().c_str(), m.Conserved() ? "yes" : "NO");
  bool ok = r.ended_more == 0 && r.not_ended == 0 && trimmed_growth < 5.0 &&
            heap_drained - heap_before <= kDrainedSlackKiB && m.Conserved() &&
            fds_end <= fds_warm + 8;
  std::printf("%s\n", ok ? "soak passed" : "SOAK FAILED");
  return ok ? 0 : 1;
}
