// loadgen: ringrpc against the grpc++ client, head to head, on one grpc++
// callback-API server process (bench/loadgen_server). Clients:
//   ringrpc      generated stubs, coroutine form, on `threads` CQ threads
//   ringrpc_cb   the same stubs' callback form (stub->async()->Unary, the
//                next call issued from the callback, as grpc++ code does)
//   ringrpc_sync the blocking form: one application thread per slot
//   ringrpc_cq   the CompletionQueue form: one application thread on
//                cq.Next, each completion issuing its slot's next call
//   grpc++ cq    grpc++'s CompletionQueue client in the same shape (its
//                cheapest form: the baseline that matters most)
//   grpc++ 1ch   Debian's grpc++ 1.51 callback API, one channel
//   grpc++ Kch   the same over K = `threads` channels made distinct by a
//                channel argument (the usual workaround)
// and, as the floor, a raw TCP ping-pong over loopback (one in flight).
// Closed loop: `concurrency` calls always outstanding. For every
// configuration it alternates the clients over `rounds` rounds (so drift
// hits all alike) and reports calls/s, latency p50/p90/p99/p99.9, client
// CPU microseconds per call (getrusage of this process over the measured
// window; the server is another process), context switches, heap
// allocations (bench/alloc_counter: every malloc in the process) and
// system calls (the raw_syscalls:sys_enter tracepoint counted for this
// process's threads; "n/a" where tracefs is not there) per call, message
// MB/s and client CPU per MB, and ringrpc / grpc++ ratios: a table, and one
// JSON line per client and configuration (prefix "JSON ").
// --type=stream is a server stream's throughput: each slot opens one stream
// the server fills with `size`-byte messages as fast as flow control lets
// it; a "call" is one message received, its latency the gap since the last.
//
//   bazel run //bench:loadgen -- --concurrency=1,16,128 --sizes=0,1024
//       --server_cpu=0 --client_cpu=1   (one command line)
// Flags: --type=unary|bidi|stream  --concurrency=LIST  --sizes=LIST (request and
// response bytes)  --threads=N  --duration=S  --warmup=S  --rounds=N
// --server_cpu=N --client_cpu=N (pinning; -1 none)  --clients=LIST
// (ringrpc,ringrpc_cb,ringrpc_sync,ringrpc_cq,grpc_cq,grpc1,grpcK,transport,
// tcp; unary only for the _cb, _sync and _cq forms and the transport floor;
// not for a stream, the tcp floor)  --json_only  --ringrpc_arg=KEY=INT (repeatable:
// a channel argument for the ringrpc client)  --service_config=JSON (both
// clients' channels get it)
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/alloc_counter.h"
#include "ringrpc/client/completion_queue.h"
#include "ringrpc/client/message_parse.h"
#include "ringrpc/client/runtime/event_loop.h"
#include "ringrpc/client/transport/address.h"
#include "ringrpc/client/transport/http2_connection.h"
#include "tests/proto/echo_test.grpc.pb.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/loopback.h"
#include "tests/testing/server_process.h"

namespace {

using Clock = std::chrono::steady_clock;
using ringrpc::test::EchoRequest;
using ringrpc::test::EchoResponse;
using RingStub = ringrpc::test::ring::TestService::Stub;
using GrpcStub = ringrpc::test::TestService::Stub;

struct Options {
  std::string type = "unary";
  std::vector<int> concurrency = {1, 16, 128};
  std::vector<int> sizes = {0, 1024};
  int threads = 1;
  double duration = 2.0, warmup = 0.5;
  int rounds = 3;
  int server_cpu = -1, client_cpu = -1;
  std::vector<std::string> clients = {"ringrpc", "grpc1", "grpcK", "tcp"};
  bool json_only = false;
  std::vector<std::pair<std::string, int>> ringrpc_args;  // --ringrpc_arg=key=int
  std::string service_config;  // --service_config=JSON: every client's channel
};

// What one closed-loop slot records; written by that slot's calls only.
struct Slot {
  std::vector<uint32_t> latency_ns;
  uint64_t errors = 0;
  std::string first_error;
};

// Shared by the slots of one run.
struct Phase {
  std::atomic<bool> measuring{false};
  std::atomic<bool> stop{false};
  std::atomic<int> running{0};
  std::promise<void> all_done;
  void Record(Slot& slot, Clock::time_point t0, bool ok, const std::string& error = "") {
    if (!measuring.load(std::memory_order_relaxed)) return;
    if (ok) {
      slot.latency_ns.push_back(static_cast<uint32_t>(
          std::min<int64_t>(UINT32_MAX, (Clock::now() - t0) / std::chrono::nanoseconds(1))));
    } else if (slot.errors++ == 0) {
      slot.first_error = error;
    }
  }
  void SlotDone() {
    if (running.fetch_sub(1) == 1) all_done.set_value();
  }
};

// System calls made by this process's threads: a perf counter on the
// raw_syscalls:sys_enter tracepoint, inherited by every thread created
// after it opens (a read sums the live threads). -1 where unavailable.
class SyscallCounter {
 public:
  static SyscallCounter& Get() {
    static SyscallCounter c;
    return c;
  }
  // Opens it (call before any client thread starts, after the server's
  // process is started: a forked child would inherit it too).
  void Open() {
    if (fd_ >= 0) return;
    long id = -1;
    for (const char* path : {"/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
                             "/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id"}) {
      if (FILE* f = std::fopen(path, "r")) {
        if (std::fscanf(f, "%ld", &id) != 1) id = -1;
        std::fclose(f);
        if (id >= 0) break;
      }
    }
    if (id < 0) return;
    perf_event_attr attr{};
    attr.type = PERF_TYPE_TRACEPOINT;
    attr.size = sizeof attr;
    attr.config = static_cast<uint64_t>(id);
    attr.inherit = 1;
    attr.exclude_kernel = 0;
    fd_ = static_cast<int>(::syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  }
  int64_t Read() const {
    uint64_t v = 0;
    if (fd_ < 0 || ::read(fd_, &v, sizeof v) != sizeof v) return -1;
    return static_cast<int64_t>(v);
  }

 private:
  int fd_ = -1;
};

struct Usage {
  double cpu_s = 0;
  long csw = 0;
  uint64_t allocs = 0;
  int64_t syscalls = -1;
  static Usage Now() {
    rusage u;
    getrusage(RUSAGE_SELF, &u);
    return {u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6,
            u.ru_nvcsw + u.ru_nivcsw, ringrpc::bench::AllocationCount(),
            SyscallCounter::Get().Read()};
  }
};

struct Result {
  std::vector<uint32_t> latency_ns;
  uint64_t errors = 0;
  std::string first_error;
  double wall_s = 0, cpu_s = 0;
  long csw = 0;
  uint64_t allocs = 0;   // heap allocations by the whole process
  int64_t syscalls = 0;  // -1 once a measurement had none
  uint64_t calls() const { return latency_ns.size(); }
  void Add(const Result& o) {
    latency_ns.insert(latency_ns.end(), o.latency_ns.begin(), o.latency_ns.end());
    errors += o.errors;
    if (first_error.empty()) first_error = o.first_error;
    wall_s += o.wall_s;
    cpu_s += o.cpu_s;
    csw += o.csw;
    allocs += o.allocs;
    syscalls = syscalls < 0 || o.syscalls < 0 ? -1 : syscalls + o.syscalls;
  }
};

// Runs slots started by `start` (which must bump phase.running per slot):
// warm-up, the measured window, then stop and wait for every slot.
template <typename Start>
Result Measure(const Options& o, Phase& phase, std::vector<Slot>& slots, Start start) {
  start();
  std::this_thread::sleep_for(std::chrono::duration<double>(o.warmup));
  Usage u0 = Usage::Now();
  Clock::time_point t0 = Clock::now();
  phase.measuring = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(o.duration));
  phase.measuring = false;
  Usage u1 = Usage::Now();
  Clock::time_point t1 = Clock::now();
  phase.stop = true;
  phase.all_done.get_future().wait();
  Result r;
  r.wall_s = std::chrono::duration<double>(t1 - t0).count();
  r.cpu_s = u1.cpu_s - u0.cpu_s;
  r.csw = u1.csw - u0.csw;
  r.allocs = u1.allocs - u0.allocs;
  r.syscalls = u0.syscalls < 0 || u1.syscalls < 0 ? -1 : u1.syscalls - u0.syscalls;
  for (Slot& s : slots) {
    r.latency_ns.insert(r.latency_ns.end(), s.latency_ns.begin(), s.latency_ns.end());
    r.errors += s.errors;
    if (r.first_error.empty()) r.first_error = s.first_error;
  }
  return r;
}

EchoRequest Request(const Options& o, int size) {
  EchoRequest req;
  if (o.type != "stream") req.set_payload(std::string(size, 'q'));
  req.set_response_size(size);  // a stream's count stays 0: until cancelled
  return req;
}

// ---- ringrpc -----------------------------------------------------------------

ringrpc::Task<void> RingUnary(RingStub* stub, const EchoRequest* req, Slot* slot, Phase* phase) {
  EchoResponse resp;
  while (!phase->stop.load(std::memory_order_relaxed)) {
    ringrpc::ClientContext ctx;
    Clock::time_point t0 = Clock::now();
    ringrpc::Status s = co_await stub->co_Unary(&ctx, *req, &resp);
    phase->Record(*slot, t0, s.ok(), s.ok() ? std::string() : s.ToString());
  }
  phase->SlotDone();
}

ringrpc::Task<void> RingBidi(RingStub* stub, const EchoRequest* req, Slot* slot, Phase* phase) {
  ringrpc::ClientContext ctx;
  ringrpc::Status open;
  auto call = co_await stub->co_Bidi(&ctx, &open);
  if (call == nullptr) {
    phase->measuring = true;  // make sure the failure shows
    phase->Record(*slot, Clock::now(), false, open.ToString());
  } else {
    EchoResponse resp;
    while (!phase->stop.load(std::memory_order_relaxed)) {
      Clock::time_point t0 = Clock::now();
      co_await call->Write(*req);
      bool got = co_await call->Read(&resp);
      phase->Record(*slot, t0, got, "stream ended");
      if (!got) break;
    }
    call->WritesDone();
    while (co_await call->Read(&resp)) {
    }
    co_await call->Finish();
  }
  phase->SlotDone();
}

// One server stream: every message received is recorded (its latency the
// gap since the previous one); at the end the stream is cancelled.
ringrpc::Task<void> RingStream(RingStub* stub, ringrpc::ClientContext* ctx, const EchoRequest* req,
                               Slot* slot, Phase* phase) {
  ringrpc::Status open;
  auto call = co_await stub->co_ServerStream(ctx, &open);
  if (call == nullptr) {
    phase->measuring = true;  // make sure the failure shows
    phase->Record(*slot, Clock::now(), false, open.ToString());
  } else {
    co_await call->Write(*req);
    call->WritesDone();
    EchoResponse resp;
    Clock::time_point t0 = Clock::now();
    bool cancelled = false;
    for (;;) {
      bool got = co_await call->Read(&resp);
      if (!got) break;
      phase->Record(*slot, t0, true);
      t0 = Clock::now();
      if (!cancelled && phase->stop.load(std::memory_order_relaxed)) {
        ctx->TryCancel();
        cancelled = true;
      }
    }
    ringrpc::Status s = co_await call->Finish();
    if (!cancelled) phase->Record(*slot, t0, false, s.ToString());
  }
  phase->SlotDone();
}

// The callback form of either library: each call's callback issues the
// next (on the thread the callback ran on, as grpc++ code does).
template <typename Stub, typename Context>
class CallbackUnarySlot {
 public:
  CallbackUnarySlot(Stub* stub, const EchoRequest* req, Slot* slot, Phase* phase)
      : stub_(stub), req_(req), slot_(slot), phase_(phase) {}
  void Issue() {
    ctx_ = std::make_unique<Context>();
    t0_ = Clock::now();
    stub_->async()->Unary(ctx_.get(), req_, &resp_, [this](auto s) {
      phase_->Record(*slot_, t0_, s.ok(), s.error_message());
      if (phase_->stop.load(std::memory_order_relaxed)) {
        phase_->SlotDone();
      } else {
        Issue();
      }
    });
  }

 private:
  Stub* stub_;
  const EchoRequest* req_;
  Slot* slot_;
  Phase* phase_;
  std::unique_ptr<Context> ctx_;
  EchoResponse resp_;
  Clock::time_point t0_;
};
using RingCallbackSlot = CallbackUnarySlot<RingStub, ringrpc::ClientContext>;
using GrpcUnarySlot = CallbackUnarySlot<GrpcStub, grpc::ClientContext>;

// The ringrpc client's channel: `threads` CQ threads of its own, a pool of
// its own, the --ringrpc_arg settings and the service config.
std::shared_ptr<ringrpc::Channel> RingChannel(const Options& o, const std::string& target) {
  ringrpc::ChannelArguments args;
  args.SetInt("ringrpc.cq_threads", o.threads);
  args.SetInt("grpc.use_local_subchannel_pool", 1);
  for (const auto& [key, value] : o.ringrpc_args) args.SetInt(key, value);
  if (!o.service_config.empty()) args.SetServiceConfigJSON(o.service_config);
  return ringrpc::CreateCustomChannel(target, ringrpc::InsecureChannelCredentials(), args);
}

// `form`: "ringrpc" (coroutines spawned round the CQ threads), "ringrpc_cb"
// (callbacks) or "ringrpc_sync" (blocking calls, a thread per slot).
Result RunRingrpc(const Options& o, const std::string& form, const std::string& target,
                  int concurrency, int size) {
  auto channel = RingChannel(o, target);
  auto stub = ringrpc::test::ring::TestService::NewStub(channel);
  EchoRequest req = Request(o, size);
  Phase phase;
  std::vector<Slot> slots(concurrency);
  std::vector<std::unique_ptr<RingCallbackSlot>> callbacks;
  std::vector<std::thread> callers;
  std::vector<ringrpc::ClientContext> ctxs(concurrency);  // streams: cancelled at the end
  Result r = Measure(o, phase, slots, [&] {
    phase.running = concurrency;
    for (int i = 0; i < concurrency; ++i) {
      if (form == "ringrpc_cb") {
        callbacks.push_back(
            std::make_unique<RingCallbackSlot>(stub.get(), &req, &slots[i], &phase));
        callbacks.back()->Issue();
      } else if (form == "ringrpc_sync") {
        callers.emplace_back([&, slot = &slots[i]] {
          EchoResponse resp;
          while (!phase.stop.load(std::memory_order_relaxed)) {
            ringrpc::ClientContext ctx;
            Clock::time_point t0 = Clock::now();
            ringrpc::Status s = stub->Unary(&ctx, req, &resp);
            phase.Record(*slot, t0, s.ok(), s.ok() ? std::string() : s.ToString());
          }
          phase.SlotDone();
        });
      } else {
        auto task = o.type == "bidi"     ? RingBidi(stub.get(), &req, &slots[i], &phase)
                    : o.type == "stream" ? RingStream(stub.get(), &ctxs[i], &req, &slots[i], &phase)
                                         : RingUnary(stub.get(), &req, &slots[i], &phase);
        (void)channel->SpawnOn(i % o.threads, std::move(task));
      }
    }
  });
  for (std::thread& t : callers) t.join();
  return r;
}

// ---- the transport floor ----------------------------------------------------
// "transport": ringrpc's own HTTP/2 connection and io_uring loop with no
// channel above them. Each CQ thread dials one connection and its slots
// start their calls on it directly (StartCall, the request, WritesDone,
// ReadBuffer, Finish, parse): no resolver, pick, pool lease, service
// config, deadline, retry bookkeeping, cancellation or metrics. What
// "ringrpc" spends per call over it is the channel's own cost.

using ringrpc::transport::Http2Connection;

ringrpc::Task<void> TransportUnary(std::shared_ptr<Http2Connection> conn, const EchoRequest* req,
                                   Slot* slot, Phase* phase) {
  EchoResponse resp;
  std::string bytes;
  while (!phase->stop.load(std::memory_order_relaxed)) {
    Clock::time_point t0 = Clock::now();
    absl::StatusOr<std::unique_ptr<ringrpc::transport::Call>> call =
        conn->StartCall({.path = "/ringrpc.test.TestService/Unary"});
    absl::Status s = call.status();
    if (call.ok()) {
      bytes.clear();
      req->AppendToString(&bytes);
      s = (*call)->Enqueue(bytes);
      (*call)->WritesDone();
      std::optional<ringrpc::ByteBuffer> reply = co_await (*call)->ReadBuffer();
      absl::Status finished = co_await (*call)->Finish();
      if (s.ok()) s = finished;
      if (s.ok() && (!reply || !ringrpc::ParseMessage(*reply, &resp))) {
        s = absl::InternalError("no response message, or one that does not parse");
      }
    }
    phase->Record(*slot, t0, s.ok(), s.ok() ? std::string() : s.ToString());
    if (!call.ok()) break;  // the connection is gone: nothing more to measure
  }
  phase->SlotDone();
}

// Dials this CQ thread's connection, then runs its slots on it; the
// connection is closed once every slot has stopped (`done`).
ringrpc::Task<void> TransportThread(ringrpc::transport::Address address, const EchoRequest* req,
                                    std::vector<Slot*> slots, Phase* phase,
                                    std::shared_ptr<std::promise<void>> done) {
  ringrpc::runtime::EventLoop& loop = *ringrpc::runtime::EventLoop::Current();
  ringrpc::transport::ConnectionOptions options;  // (GCC 12: no braced temporary in a co_await)
  auto conn = co_await Http2Connection::Connect(loop, address, options);
  for (Slot* slot : slots) {
    if (!conn.ok()) {
      phase->measuring = true;  // make sure the failure shows
      phase->Record(*slot, Clock::now(), false, conn.status().ToString());
      phase->SlotDone();
      continue;
    }
    loop.Spawn(TransportUnary(*conn, req, slot, phase));
  }
  if (conn.ok()) {
    while (!phase->stop.load(std::memory_order_relaxed) || phase->running.load() > 0) {
      co_await ringrpc::SleepUntil(loop, loop.Now() + std::chrono::milliseconds(5));
    }
    (*conn)->Close(absl::CancelledError("loadgen: the run is over"));
  }
  done->set_value();
}

Result RunTransport(const Options& o, const std::string& target, int concurrency, int size) {
  ringrpc::ChannelArguments args;  // for its CQ threads only
  args.SetInt("ringrpc.cq_threads", o.threads);
  auto channel = ringrpc::CreateCustomChannel(target, ringrpc::InsecureChannelCredentials(), args);
  absl::StatusOr<ringrpc::transport::Address> address = ringrpc::transport::Address::Parse(target);
  EchoRequest req = Request(o, size);
  Phase phase;
  std::vector<Slot> slots(concurrency);
  std::vector<std::future<void>> closed;
  Result r = Measure(o, phase, slots, [&] {
    phase.running = concurrency;
    for (int t = 0; t < o.threads; ++t) {
      std::vector<Slot*> mine;
      for (int i = t; i < concurrency; i += o.threads) mine.push_back(&slots[i]);
      auto done = std::make_shared<std::promise<void>>();
      closed.push_back(done->get_future());
      (void)channel->SpawnOn(t, TransportThread(*address, &req, std::move(mine), &phase, done));
    }
  });
  for (std::future<void>& f : closed) f.wait();
  return r;
}

// ---- grpc++ (callback API) ---------------------------------------------------

// A write and its reply per round; the next round starts when both the
// write and the read have completed (grpc++ allows one of each at a time).
class GrpcBidiSlot final : public grpc::ClientBidiReactor<EchoRequest, EchoResponse> {
 public:
  GrpcBidiSlot(GrpcStub* stub, const EchoRequest* req, Slot* slot, Phase* phase)
      : req_(req), slot_(slot), phase_(phase) {
    stub->async()->Bidi(&ctx_, this);
    Round();
    StartCall();
  }
  void OnWriteDone(bool ok) override { Step(ok); }
  void OnReadDone(bool ok) override {
    if (ok) phase_->Record(*slot_, t0_, true);
    Step(ok);
  }
  void OnWritesDoneDone(bool) override {}
  void OnDone(const grpc::Status& s) override {
    if (!s.ok()) phase_->Record(*slot_, t0_, false, s.error_message());
    phase_->SlotDone();
  }

 private:
  void Round() {
    pending_ = 2;
    t0_ = Clock::now();
    StartWrite(req_);
    StartRead(&resp_);
  }
  void Step(bool ok) {
    if (!ok) failed_ = true;
    if (pending_.fetch_sub(1) != 1) return;
    if (failed_ || phase_->stop.load(std::memory_order_relaxed)) {
      StartWritesDone();
      StartRead(&resp_);  // to the end of the stream
      return;
    }
    Round();
  }
  grpc::ClientContext ctx_;
  const EchoRequest* req_;
  Slot* slot_;
  Phase* phase_;
  EchoResponse resp_;
  Clock::time_point t0_;
  std::atomic<int> pending_{0};
  std::atomic<bool> failed_{false};
};

// grpc++'s side of --type=stream.
class GrpcStreamSlot final : public grpc::ClientReadReactor<EchoResponse> {
 public:
  GrpcStreamSlot(GrpcStub* stub, const EchoRequest* req, Slot* slot, Phase* phase)
      : slot_(slot), phase_(phase) {
    stub->async()->ServerStream(&ctx_, req, this);
    t0_ = Clock::now();
    StartRead(&resp_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows
    phase_->Record(*slot_, t0_, true);
    t0_ = Clock::now();
    if (!cancelled_ && phase_->stop.load(std::memory_order_relaxed)) {
      cancelled_ = true;
      ctx_.TryCancel();
    }
    StartRead(&resp_);
  }
  void OnDone(const grpc::Status& s) override {
    if (!cancelled_) phase_->Record(*slot_, t0_, false, s.error_message());
    phase_->SlotDone();
  }

 private:
  grpc::ClientContext ctx_;
  Slot* slot_;
  Phase* phase_;
  EchoResponse resp_;
  Clock::time_point t0_;
  bool cancelled_ = false;
};

Result RunGrpc(const Options& o, const std::string& target, int concurrency, int size,
               int channels) {
  std::vector<std::unique_ptr<GrpcStub>> stubs;
  for (int i = 0; i < channels; ++i) {
    grpc::ChannelArguments args;
    args.SetInt("loadgen.channel_index", i);  // distinct: no shared subchannel
    if (!o.service_config.empty()) args.SetServiceConfigJSON(o.service_config);
    stubs.push_back(ringrpc::test::TestService::NewStub(
        grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args)));
  }
  EchoRequest req = Request(o, size);
  Phase phase;
  std::vector<Slot> slots(concurrency);
  std::vector<std::unique_ptr<GrpcUnarySlot>> unary;
  std::vector<GrpcBidiSlot*> bidi;  // they live until their OnDone (after Measure)
  std::vector<std::unique_ptr<GrpcStreamSlot>> streams;
  Result r = Measure(o, phase, slots, [&] {
    phase.running = concurrency;
    for (int i = 0; i < concurrency; ++i) {
      GrpcStub* stub = stubs[i % channels].get();
      if (o.type == "bidi") {
        bidi.push_back(new GrpcBidiSlot(stub, &req, &slots[i], &phase));
      } else if (o.type == "stream") {
        streams.push_back(std::make_unique<GrpcStreamSlot>(stub, &req, &slots[i], &phase));
      } else {
        unary.push_back(std::make_unique<GrpcUnarySlot>(stub, &req, &slots[i], &phase));
        unary.back()->Issue();
      }
    }
  });
  for (GrpcBidiSlot* b : bidi) delete b;
  return r;
}

// ---- the CompletionQueue form, of either library ------------------------------
// grpc++'s classic async client: `concurrency` calls outstanding, one
// application thread on cq.Next issuing each slot's next call from its
// completion (the shape of grpc++'s own async benchmark client).

template <typename Stub, typename Cq, typename Context, typename StatusT>
struct CqUnarySlot {
  Slot* slot = nullptr;
  Clock::time_point t0;
  std::unique_ptr<Context> ctx;
  EchoResponse resp;
  StatusT status;
  decltype(std::declval<Stub&>().PrepareAsyncUnary(nullptr, std::declval<const EchoRequest&>(),
                                                   nullptr)) rpc;
  void Issue(Stub* stub, const EchoRequest& req, Cq* cq) {
    ctx = std::make_unique<Context>();  // one call per context, in both libraries
    t0 = Clock::now();
    rpc = stub->PrepareAsyncUnary(ctx.get(), req, cq);
    rpc->StartCall();
    rpc->Finish(&resp, &status, this);
  }
};

template <typename Stub, typename Cq, typename Context, typename StatusT>
Result RunCq(const Options& o, Stub* stub, int concurrency, int size) {
  using CallSlot = CqUnarySlot<Stub, Cq, Context, StatusT>;
  Cq cq;
  EchoRequest req = Request(o, size);
  Phase phase;
  std::vector<Slot> slots(concurrency);
  std::vector<std::unique_ptr<CallSlot>> calls;
  std::thread driver;
  Result r = Measure(o, phase, slots, [&] {
    phase.running = concurrency;
    for (int i = 0; i < concurrency; ++i) {
      calls.push_back(std::make_unique<CallSlot>());
      calls.back()->slot = &slots[i];
      calls.back()->Issue(stub, req, &cq);
    }
    driver = std::thread([&] {
      int live = concurrency;
      void* tag;
      bool ok;
      while (live > 0 && cq.Next(&tag, &ok)) {
        auto* c = static_cast<CallSlot*>(tag);
        const bool good = ok && c->status.ok();
        phase.Record(*c->slot, c->t0, good, good ? std::string() : c->status.error_message());
        if (phase.stop.load(std::memory_order_relaxed)) {
          --live;
          phase.SlotDone();
        } else {
          c->Issue(stub, req, &cq);
        }
      }
    });
  });
  driver.join();
  cq.Shutdown();
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }
  return r;
}

Result RunRingrpcCq(const Options& o, const std::string& target, int concurrency, int size) {
  auto stub = ringrpc::test::ring::TestService::NewStub(RingChannel(o, target));
  return RunCq<RingStub, ringrpc::CompletionQueue, ringrpc::ClientContext, ringrpc::Status>(
      o, stub.get(), concurrency, size);
}

Result RunGrpcCq(const Options& o, const std::string& target, int concurrency, int size) {
  grpc::ChannelArguments args;
  if (!o.service_config.empty()) args.SetServiceConfigJSON(o.service_config);
  auto channel = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  auto stub = ringrpc::test::TestService::NewStub(channel);
  return RunCq<GrpcStub, grpc::CompletionQueue, grpc::ClientContext, grpc::Status>(
      o, stub.get(), concurrency, size);
}

// ---- the floor: raw TCP ping-pong ---------------------------------------------

void Pin(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    std::fprintf(stderr, "cannot pin to CPU %d\n", cpu);
    std::exit(1);
  }
}

bool FullIo(int fd, char* buf, size_t n, bool write) {
  size_t off = 0;
  while (off < n) {
    ssize_t k =
        write ? ::send(fd, buf + off, n - off, MSG_NOSIGNAL) : ::recv(fd, buf + off, n - off, 0);
    if (k <= 0) return false;
    off += k;
  }
  return true;
}

Result RunTcp(const Options& o, int size) {
  size_t n = std::max(size, 1);
  sockaddr_in a{};
  int lfd = ringrpc::testing::ListenLoopback(1, &a);
  pid_t child = ::fork();
  if (child == 0) {  // the echo side, on the server's core
    Pin(o.server_cpu);
    int c = ::accept(lfd, nullptr, nullptr);
    int one = 1;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::vector<char> buf(n);
    while (FullIo(c, buf.data(), n, false) && FullIo(c, buf.data(), n, true)) {
    }
    ::_exit(0);
  }
  ::close(lfd);
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::vector<char> buf(n, 'q');
  Phase phase;
  std::vector<Slot> slots(1);
  std::thread pinger;
  Result r = Measure(o, phase, slots, [&] {
    phase.running = 1;
    pinger = std::thread([&] {
      while (!phase.stop.load(std::memory_order_relaxed)) {
        Clock::time_point t0 = Clock::now();
        bool ok = FullIo(fd, buf.data(), n, true) && FullIo(fd, buf.data(), n, false);
        phase.Record(slots[0], t0, ok, "tcp ping-pong failed");
        if (!ok) break;
      }
      phase.SlotDone();
    });
  });
  pinger.join();
  ::close(fd);
  ::waitpid(child, nullptr, 0);
  return r;
}

// ---- reporting ----------------------------------------------------------------

struct Row {
  std::string client;
  Result r;
  int size = 0;
  int directions = 2;  // message bytes per call: the request's and the response's
  double mb_s() const { return qps() * size * directions / 1e6; }
  double cpu_us_per_mb() const {
    const double mb = double(r.calls()) * size * directions / 1e6;
    return mb > 0 ? r.cpu_s * 1e6 / mb : 0;
  }
  // -1: not counted
  double syscalls() const {
    return r.syscalls < 0 ? -1 : r.calls() ? double(r.syscalls) / r.calls() : 0;
  }
  double qps() const { return r.wall_s > 0 ? r.calls() / r.wall_s : 0; }
  double cpu_us() const { return r.calls() ? r.cpu_s * 1e6 / r.calls() : 0; }
  double csw() const { return r.calls() ? double(r.csw) / r.calls() : 0; }
  double allocs() const { return r.calls() ? double(r.allocs) / r.calls() : 0; }
  double pct(double q) {
    if (r.latency_ns.empty()) return 0;
    size_t i = std::min(r.latency_ns.size() - 1, size_t(q * r.latency_ns.size()));
    std::nth_element(r.latency_ns.begin(), r.latency_ns.begin() + i, r.latency_ns.end());
    return r.latency_ns[i] / 1e3;
  }
};

std::vector<int> Ints(const char* s) {
  std::vector<int> v;
  for (absl::string_view p : absl::StrSplit(s, ',')) v.push_back(std::atoi(std::string(p).c_str()));
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    auto flag = [&](const char* name) -> const char* {
      size_t n = std::strlen(name);
      return std::strncmp(a, name, n) == 0 ? a + n : nullptr;
    };
    if (const char* v = flag("--type="))
      o.type = v;
    else if (const char* v = flag("--concurrency="))
      o.concurrency = Ints(v);
    else if (const char* v = flag("--sizes="))
      o.sizes = Ints(v);
    else if (const char* v = flag("--threads="))
      o.threads = std::atoi(v);
    else if (const char* v = flag("--duration="))
      o.duration = std::atof(v);
    else if (const char* v = flag("--warmup="))
      o.warmup = std::atof(v);
    else if (const char* v = flag("--rounds="))
      o.rounds = std::atoi(v);
    else if (const char* v = flag("--server_cpu="))
      o.server_cpu = std::atoi(v);
    else if (const char* v = flag("--client_cpu="))
      o.client_cpu = std::atoi(v);
    else if (const char* v = flag("--clients="))
      o.clients = absl::StrSplit(v, ',');
    else if (std::strcmp(a, "--json_only") == 0)
      o.json_only = true;
    else if (const char* v = flag("--service_config="))
      o.service_config = v;
    else if (const char* v = flag("--ringrpc_arg=")) {
      std::pair<std::string, std::string> kv = absl::StrSplit(v, absl::MaxSplits('=', 1));
      o.ringrpc_args.emplace_back(kv.first, std::atoi(kv.second.c_str()));
    } else {
      std::fprintf(
          stderr, "loadgen: unknown flag %s (see the comment at the top of bench/loadgen.cc)\n", a);
      return 2;
    }
  }
  if ((o.type != "unary" && o.type != "bidi" && o.type != "stream") || o.threads < 1 ||
      o.rounds < 1 || o.duration <= 0 || o.concurrency.empty() || o.sizes.empty()) {
    std::fprintf(stderr,
                 "loadgen: bad options (--type=unary|bidi|stream, --threads>=1, --rounds>=1)\n");
    return 2;
  }
  std::vector<std::string> extra;
  if (o.server_cpu >= 0) extra.push_back(absl::StrCat("--cpu=", o.server_cpu));
  auto server =
      ringrpc::testing::ServerProcess::Start("127.0.0.1:0", "bench/loadgen_server", extra);
  if (!server.ok()) {
    std::fprintf(stderr, "loadgen: %s\n", server.status().ToString().c_str());
    return 1;
  }
  Pin(o.client_cpu);             // before any client thread exists: they all inherit it
  SyscallCounter::Get().Open();  // likewise (and after the server's fork)
  const std::string target = (*server)->address();
  if (!o.json_only) {
    std::printf(
        "loadgen: %s calls, %d client thread(s), %d round(s) of %.1f s (+%.1f s warm-up), "
        "server CPU %d, client CPU %d\n",
        o.type.c_str(), o.threads, o.rounds, o.duration, o.warmup, o.server_cpu, o.client_cpu);
  }
  bool all_ok = true;
  for (int size : o.sizes) {
    for (int c : o.concurrency) {
      std::map<std::string, Row> rows;
      for (int round = 0; round < o.rounds; ++round) {
        for (const std::string& client : o.clients) {
          Result r;
          if (client == "ringrpc")
            r = RunRingrpc(o, client, target, c, size);
          else if (client == "ringrpc_cb" || client == "ringrpc_sync") {
            if (o.type != "unary") continue;
            r = RunRingrpc(o, client, target, c, size);
          } else if (client == "ringrpc_cq" || client == "grpc_cq") {
            if (o.type != "unary") continue;
            r = client == "ringrpc_cq" ? RunRingrpcCq(o, target, c, size)
                                       : RunGrpcCq(o, target, c, size);
          } else if (client == "grpc1")
            r = RunGrpc(o, target, c, size, 1);
          else if (client == "grpcK")
            r = RunGrpc(o, target, c, size, o.threads);
          else if (client == "transport") {
            if (o.type != "unary") continue;
            r = RunTransport(o, target, c, size);
          } else if (client == "tcp") {
            if (o.type == "stream") continue;
            r = RunTcp(o, size);
          } else
            continue;
          rows[client].client = client;
          rows[client].size = size;
          rows[client].directions = o.type == "stream" ? 1 : 2;
          if (client == "tcp") r.syscalls = -1;  // its echo child inherits the counter
          rows[client].r.Add(r);
        }
      }
      if (!o.json_only) {
        std::printf("\n%s, concurrency %d, %d B request and response\n", o.type.c_str(), c, size);
        std::printf("%-12s %10s %9s %9s %9s %9s %12s %9s %12s %10s %9s %10s %7s\n", "client",
                    o.type == "stream" ? "msgs/s" : "calls/s", "p50 us", "p90 us", "p99 us",
                    "p99.9 us", "cpu us/call", "csw/call",
                    ringrpc::bench::Counting() ? "allocs/call" : "(no allocs)", "sysc/call", "MB/s",
                    "cpu us/MB", "errors");
      }
      for (const std::string& client : o.clients) {
        if (!rows.count(client)) continue;
        Row& row = rows[client];
        double p50 = row.pct(0.5), p90 = row.pct(0.9), p99 = row.pct(0.99), p999 = row.pct(0.999);
        std::string label = client == "grpc1"     ? "grpc++ 1ch"
                            : client == "grpcK"   ? absl::StrCat("grpc++ K=", o.threads)
                            : client == "grpc_cq" ? "grpc++ cq"
                            : client == "tcp"     ? "tcp floor"
                                                  : client;
        if (!o.json_only) {
          std::printf(
              "%-12s %10.0f %9.1f %9.1f %9.1f %9.1f %12.1f %9.2f %12.1f %10s %9.1f %10.1f "
              "%7llu\n",
              label.c_str(), row.qps(), p50, p90, p99, p999, row.cpu_us(), row.csw(), row.allocs(),
              row.syscalls() < 0 ? "n/a" : absl::StrFormat("%.2f", row.syscalls()).c_str(),
              row.mb_s(), row.cpu_us_per_mb(), (unsigned long long)row.r.errors);
        }
        std::printf(
            "JSON {\"type\":\"%s\",\"concurrency\":%d,\"size\":%d,\"threads\":%d,"
            "\"client\":\"%s\",\"calls\":%llu,\"qps\":%.1f,\"p50_us\":%.2f,"
            "\"p90_us\":%.2f,\"p99_us\":%.2f,\"p999_us\":%.2f,\"cpu_us_per_call\":%.2f,"
            "\"csw_per_call\":%.3f,\"allocs_per_call\":%.2f,\"syscalls_per_call\":%.3f,"
            "\"mb_per_s\":%.2f,\"cpu_us_per_mb\":%.2f,\"errors\":%llu}\n",
            o.type.c_str(), c, size, o.threads, client.c_str(), (unsigned long long)row.r.calls(),
            row.qps(), p50, p90, p99, p999, row.cpu_us(), row.csw(), row.allocs(), row.syscalls(),
            row.mb_s(), row.cpu_us_per_mb(), (unsigned long long)row.r.errors);
        if (row.r.errors > 0) {
          all_ok = false;
          std::fprintf(stderr, "%s: %llu errors, first: %s\n", label.c_str(),
                       (unsigned long long)row.r.errors, row.r.first_error.c_str());
        }
      }
      if (!o.json_only) {
        // Each ringrpc form against grpc++, the callback and blocking forms
        // against the coroutine form, the CQ form against the callback form.
        for (const char* form : {"ringrpc", "ringrpc_cb", "ringrpc_sync", "ringrpc_cq"}) {
          if (!rows.count(form) || rows[form].qps() == 0) continue;
          Row& ring = rows[form];
          for (const char* other :
               {"grpc_cq", "grpc1", "grpcK", "ringrpc", "ringrpc_cb", "transport"}) {
            if (other == std::string(form) || !rows.count(other) || rows[other].qps() == 0) {
              continue;
            }
            // The callback form is the CQ form's reference only.
            if (other == std::string("ringrpc_cb") && form != std::string("ringrpc_cq")) continue;
            Row& g = rows[other];
            std::printf("%-12s / %-10s calls/s %.2fx   cpu/call %.2fx   p50 %.2fx\n", form,
                        other == std::string("grpc1")        ? "grpc++ 1ch"
                        : other == std::string("grpcK")      ? "grpc++ K"
                        : other == std::string("grpc_cq")    ? "grpc++ cq"
                        : other == std::string("ringrpc_cb") ? "callback"
                        : other == std::string("transport")  ? "transport"
                                                             : "coroutine",
                        ring.qps() / g.qps(), ring.cpu_us() / g.cpu_us(),
                        ring.pct(0.5) / g.pct(0.5));
          }
        }
      }
      std::fflush(stdout);
    }
  }
  return all_ok ? 0 : 1;
}
