// footprint: what a client costs in memory and threads, ringrpc beside
// grpc++ (Debian's 1.51), each measured in a process of its own against the
// same grpc++ server (bench/loadgen_server, in a third process). For each
// step it prints the change in resident memory (VmRSS) and in threads:
// a channel made (no call), its first call (the connection), N
// connections (N channels to distinct loopback addresses 127.0.x.y, one
// call each), 10,000 unary calls in flight at once (the server holds each
// for a while), 10,000 open idle bidi streams. The per-connection and
// per-call figures in docs/performance.md come from this output.
//
//   bazel run -c opt //bench:footprint                        # both clients
//   bazel run -c opt //bench:footprint -- --client=grpcpp --connections=1,100
#include <grpcpp/grpcpp.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ringrpc/client/channel.h"
#include "tests/proto/echo_test.grpc.pb.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/process_stats.h"
#include "tests/testing/server_process.h"

namespace {

using ringrpc::test::EchoRequest;
using ringrpc::test::EchoResponse;
using std::chrono::milliseconds;

// The two clients' spellings of the same API.
struct Ring {
  static constexpr const char* kName = "ringrpc";
  using Context = ringrpc::ClientContext;
  using Status = ringrpc::Status;
  using Stub = ringrpc::test::ring::TestService::Stub;
  using Bidi = ringrpc::ClientBidiReactor<EchoRequest, EchoResponse>;
  static std::unique_ptr<Stub> Connect(const std::string& target) {
    return ringrpc::test::ring::TestService::NewStub(
        ringrpc::CreateChannel(target, ringrpc::InsecureChannelCredentials()));
  }
};
struct Grpc {
  static constexpr const char* kName = "grpc++";
  using Context = grpc::ClientContext;
  using Status = grpc::Status;
  using Stub = ringrpc::test::TestService::Stub;
  using Bidi = grpc::ClientBidiReactor<EchoRequest, EchoResponse>;
  static std::unique_ptr<Stub> Connect(const std::string& target) {
    return ringrpc::test::TestService::NewStub(
        grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  }
};

struct Reading {
  long rss_kib;
  long threads;
};
Reading Now() {
  // Let threads that are starting or ending settle.
  std::this_thread::sleep_for(milliseconds(300));
  return {ringrpc::testing::RssKiB(), ringrpc::testing::ThreadCount()};
}
void Report(const char* client, const std::string& step, const Reading& before,
            const Reading& after, long units, const char* unit) {
  const long rss = after.rss_kib - before.rss_kib;
  std::printf("%-8s %-34s RSS %+8ld KiB  threads %+4ld", client, step.c_str(), rss,
              after.threads - before.threads);
  if (units > 1) std::printf("  (%.2f KiB per %s)", double(rss) / double(units), unit);
  std::printf("   [RSS %ld KiB, %ld threads]\n", after.rss_kib, after.threads);
  std::fflush(stdout);
}

template <typename Api>
bool Echo(typename Api::Stub& stub) {
  typename Api::Context ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  EchoRequest req;
  req.set_payload("x");
  EchoResponse resp;
  return stub.Unary(&ctx, req, &resp).ok();
}

// A bidi stream opened and left idle until it is cancelled.
template <typename Api>
class IdleStream final : public Api::Bidi {
 public:
  IdleStream(typename Api::Stub& stub, std::atomic<int>* done) : done_(done) {
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    stub.async()->Bidi(&ctx, this);
    this->StartCall();
  }
  void OnDone(const typename Api::Status&) override { done_->fetch_add(1); }
  typename Api::Context ctx;

 private:
  std::atomic<int>* done_;
};

template <typename Api>
int Run(int port, const std::vector<long>& connections, long in_flight, long streams) {
  const char* name = Api::kName;
  const std::string local = "127.0.0.1:" + std::to_string(port);
  Reading base = Now();
  {
    auto stub = Api::Connect(local);
    Reading made = Now();
    Report(name, "a channel, no call", base, made, 1, "");
    if (!Echo<Api>(*stub)) return std::fprintf(stderr, "%s: the first call failed\n", name), 1;
    Report(name, "its first call (a connection)", made, Now(), 1, "");
  }
  for (long n : connections) {
    Reading before = Now();
    std::vector<std::unique_ptr<typename Api::Stub>> stubs;
    for (long i = 0; i < n; ++i) {
      // Distinct addresses: one connection each, in both clients.
      const std::string target = "127.0." + std::to_string(1 + i / 250) + "." +
                                 std::to_string(1 + i % 250) + ":" + std::to_string(port);
      stubs.push_back(Api::Connect(target));
      if (!Echo<Api>(*stubs.back()))
        return std::fprintf(stderr, "%s: call %ld failed\n", name, i), 1;
    }
    Report(name, std::to_string(n) + " connections", before, Now(), n, "connection");
  }
  if (in_flight > 0) {
    auto stub = Api::Connect(local);
    (void)Echo<Api>(*stub);
    struct Call {
      typename Api::Context ctx;
      EchoRequest req;
      EchoResponse resp;
    };
    std::vector<std::unique_ptr<Call>> calls;
    std::atomic<long> ok{0}, ended{0};
    Reading before = Now();
    for (long i = 0; i < in_flight; ++i) {
      auto c = std::make_unique<Call>();
      c->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      c->req.set_sleep_ms(4000);  // the server holds each call this long
      stub->async()->Unary(&c->ctx, &c->req, &c->resp, [&](typename Api::Status s) {
        if (s.ok()) ok.fetch_add(1);
        ended.fetch_add(1);
      });
      calls.push_back(std::move(c));
    }
    Reading during = Now();
    Report(name, std::to_string(in_flight) + " unary calls in flight", before, during, in_flight,
           "call");
    while (ended.load() < in_flight) std::this_thread::sleep_for(milliseconds(50));
    if (ok.load() != in_flight) {
      std::fprintf(stderr, "%s: %ld of %ld held calls failed\n", name, in_flight - ok.load(),
                   in_flight);
      return 1;
    }
  }
  if (streams > 0) {
    auto stub = Api::Connect(local);
    (void)Echo<Api>(*stub);
    std::atomic<int> done{0};
    std::vector<std::unique_ptr<IdleStream<Api>>> open;
    Reading before = Now();
    for (long i = 0; i < streams; ++i)
      open.push_back(std::make_unique<IdleStream<Api>>(*stub, &done));
    std::this_thread::sleep_for(milliseconds(1000));  // all of them started
    Report(name, std::to_string(streams) + " idle streams open", before, Now(), streams, "stream");
    for (auto& s : open) s->ctx.TryCancel();
    while (done.load() < streams) std::this_thread::sleep_for(milliseconds(50));
  }
  return 0;
}

std::vector<long> Numbers(const char* list) {
  std::vector<long> out;
  for (const char* p = list; *p != '\0';) {
    out.push_back(std::strtol(p, const_cast<char**>(&p), 10));
    if (*p == ',') ++p;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string client;
  std::vector<long> connections = {1, 100, 1000};
  long in_flight = 10000, streams = 10000;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--client=", 9) == 0) client = argv[i] + 9;
    if (std::strncmp(argv[i], "--connections=", 14) == 0) connections = Numbers(argv[i] + 14);
    if (std::strncmp(argv[i], "--in_flight=", 12) == 0) in_flight = std::atol(argv[i] + 12);
    if (std::strncmp(argv[i], "--streams=", 10) == 0) streams = std::atol(argv[i] + 10);
  }
  // Both sides hold a socket per connection.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
  if (client.empty()) {
    // Each client in a process of its own, one after the other.
    int status = 0;
    for (const char* c : {"ringrpc", "grpcpp"}) {
      std::vector<std::string> args(argv, argv + argc);
      args.push_back(std::string("--client=") + c);
      std::vector<char*> raw;
      for (std::string& a : args) raw.push_back(a.data());
      raw.push_back(nullptr);
      const pid_t pid = fork();
      if (pid == 0) {
        execv("/proc/self/exe", raw.data());
        _exit(127);
      }
      int st = 0;
      waitpid(pid, &st, 0);
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) status = 1;
    }
    return status;
  }
  auto server = ringrpc::testing::ServerProcess::Start("0.0.0.0:0", "bench/loadgen_server", {});
  if (!server.ok()) {
    std::fprintf(stderr, "footprint: %s\n", server.status().ToString().c_str());
    return 1;
  }
  const int port = (*server)->port();
  if (client == "ringrpc") return Run<Ring>(port, connections, in_flight, streams);
  if (client == "grpcpp") return Run<Grpc>(port, connections, in_flight, streams);
  std::fprintf(stderr, "footprint: --client must be ringrpc or grpcpp\n");
  return 2;
}
