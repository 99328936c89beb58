// The caller-side race suite: a randomized, seeded stress of the
// public API from many threads at once against real grpc++ server processes
// and a silent raw server. Rounds of: channels made with random settings
// (process-wide or own CQ threads, pick_first / round_robin, a manual
// resolver that moves between backends); user threads issuing unary and
// streaming calls in blocking, callback, reactor, coroutine and
// CompletionQueue form (tags drained by two threads per queue, the unary
// calls' queue shut down with calls in flight), with
// deadlines from time_point::min() to max(); a canceller calling TryCancel
// at random moments (before start, during connect, mid-stream, after the
// end); Invalidate(), GetState, resolver updates; contexts reused; the
// channel's last reference dropped with calls queued, in flight, or inside
// their own callbacks; in some rounds, two threads churning short-lived
// channels (a call or two each) to one live backend beside the rest.
//
// Each round's channel draws its features: pick_first, round_robin or
// least_request; retries or hedging (a call may ask the server to fail
// UNAVAILABLE); compression by default and per call; call credentials from
// a plugin that is slow and refuses some calls; an interceptor that adds
// metadata and refuses some calls; health checking (gRFC A17) of a service
// the chaos thread flips between SERVING and NOT_SERVING on one backend;
// an HTTP CONNECT proxy (tinyproxy) every connection goes through; an
// xds:/// target whose control plane the chaos thread keeps moving between
// backends. The counts per feature are printed.
//
// After every round: each started call ended exactly once, with a status
// from the allowed set (statuses the suite provoked included), and an OK call carries its own
// response (never another call's). At the end, once the last channel is gone: no fd or thread left
// over, RSS back near its baseline (unsanitized builds).
//
// RINGRPC_RACE_SECONDS (default 20) bounds the run; RINGRPC_RACE_SEED
// replays a seed (every failure prints the one to use); RINGRPC_RACE_SETUP=1
// prints each round's channel settings. tools/races.sh runs
// it for minutes with fresh seeds.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/async_stream.h"
#include "ringrpc/client/async_unary_call.h"
#include "ringrpc/client/blocking_stream.h"
#include "ringrpc/client/call_credentials.h"
#include "ringrpc/client/callback_reactor.h"
#include "ringrpc/client/channel.h"
#include "ringrpc/client/completion_queue.h"
#include "ringrpc/client/interceptor.h"
#include "ringrpc/client/resolver.h"
#include "ringrpc/client/transport/address.h"
#include "ringrpc/client/transport/testing/raw_server.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/http_proxy_server.h"
#include "tests/testing/process_stats.h"
#include "tests/testing/server_process.h"
#include "tests/xds/snapshot.h"

namespace ringrpc {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using test::EchoRequest;
using test::EchoResponse;
using test::ring::TestService;
using SysClock = std::chrono::system_clock;
using Rng = std::mt19937_64;

using testing::kSanitized;

uint64_t EnvU64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : fallback;
}

enum class Form {
  kBlockingUnary,
  kAsyncUnary,
  kCoroutineUnary,
  kBlockingServerStream,
  kReadReactor,
  kWriteReactor,
  kBidiReactor,
  kBlockingBidi,
  kCqUnary,
  kCqBidi,
  kCount
};
const char* FormName(Form f) {
  static const char* names[] = {
      "blocking unary", "async unary",   "coroutine unary", "blocking server stream",
      "read reactor",   "write reactor", "bidi reactor",    "blocking bidi",
      "cq unary",       "cq bidi"};
  return names[static_cast<int>(f)];
}

// One call as the suite sees it: what it asked, how it ended (each ending
// counted), and whether the answer was its own.
struct CallRec {
  uint64_t id = 0;
  Form form = Form::kBlockingUnary;
  bool silent_target = false;  // the raw server that never speaks
  std::string payload;         // unique to the call
  int messages = 0;            // streams: how many each way
  ClientContext ctx;
  EchoRequest req;
  EchoResponse resp;
  std::atomic<int> ends{0};
  Status status;
  std::string mismatch;  // set when an OK call's answer is not its own
  // What the call was set up with (printed when it fails): its channel's
  // settings, deadline, wait_for_ready, cancelled before it started.
  std::string setup;
  void End(Status s, std::string wrong = "") {
    if (ends.load(std::memory_order_relaxed) == 0) {
      status = std::move(s);
      mismatch = std::move(wrong);
    }
    ends.fetch_add(1, std::memory_order_acq_rel);
  }
};
using CallPtr = std::shared_ptr<CallRec>;

struct Stats {
  std::atomic<uint64_t> calls{0}, cancels{0}, destructions{0}, invalidates{0}, updates{0}, ok{0},
      cancelled{0}, deadline{0}, unavailable{0}, churned{0}, health_flips{0}, xds_updates{0};
  // Rounds that drew each channel feature, and the statuses the suite
  // provoked on purpose (a server asked to fail, a plugin or an
  // interceptor refusing).
  std::mutex mu;
  std::map<std::string, uint64_t> features;
  std::atomic<uint64_t> provoked{0};
  void Feature(const std::string& f) {
    std::lock_guard<std::mutex> lock(mu);
    ++features[f];
  }
};

// Statuses the suite provokes carry this in their message: allowed ends.
constexpr std::string_view kProvoked = "race-provoked";

// Call credentials that take their time, and refuse one call in 13.
class RacePlugin final : public MetadataCredentialsPlugin {
 public:
  explicit RacePlugin(uint64_t seed) : n_(seed) {}
  Status GetMetadata(std::string_view, std::string_view, const AuthContext&,
                     std::multimap<std::string, std::string>* md) override {
    const uint64_t n = n_.fetch_add(1);
    if (n % 4 == 0) std::this_thread::sleep_for(milliseconds(n % 7));
    if (n % 13 == 0) return Status(StatusCode::UNAUTHENTICATED, std::string(kProvoked) + " plugin");
    md->emplace("x-race-token", std::to_string(n));
    return Status();
  }

 private:
  std::atomic<uint64_t> n_;
};

// An interceptor that adds metadata to every call and refuses one in 11
// before anything is sent.
class RaceInterceptor final : public experimental::Interceptor {
 public:
  explicit RaceInterceptor(bool refuse) : refuse_(refuse) {}
  void Intercept(experimental::InterceptorBatchMethods* m) override {
    using Hook = experimental::InterceptionHookPoints;
    if (refuse_ && m->QueryInterceptionHookPoint(Hook::PRE_SEND_INITIAL_METADATA)) {
      m->Fail(Status(StatusCode::FAILED_PRECONDITION, std::string(kProvoked) + " interceptor"));
      return;
    }
    if (m->QueryInterceptionHookPoint(Hook::PRE_SEND_INITIAL_METADATA)) {
      m->GetSendInitialMetadata()->emplace("x-race-intercepted", "1");
    }
    m->Proceed();
  }

 private:
  const bool refuse_;
};

class RaceInterceptorFactory final : public experimental::ClientInterceptorFactoryInterface {
 public:
  experimental::Interceptor* CreateClientInterceptor(experimental::ClientRpcInfo*) override {
    return new RaceInterceptor(n_.fetch_add(1) % 11 == 5);
  }

 private:
  std::atomic<uint64_t> n_{0};
};

// ---- the reactors (each deletes itself in OnDone, as grpc++ code often does) ----------

class ReadOnce final : public ClientReadReactor<EchoResponse> {
 public:
  ReadOnce(TestService::Stub* stub, CallPtr c) : c_(std::move(c)) {
    stub->async()->ServerStream(&c_->ctx, &c_->req, this);
    StartRead(&m_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    if (m_.count() != seen_ || m_.payload().size() != size_t(c_->req.response_size())) {
      wrong_ =
          absl::StrCat("message ", seen_, " was count ", m_.count(), " size ", m_.payload().size());
    }
    ++seen_;
    StartRead(&m_);
  }
  void OnDone(const Status& s) override {
    if (s.ok() && wrong_.empty() && seen_ != c_->messages) {
      wrong_ = absl::StrCat(seen_, " messages, asked for ", c_->messages);
    }
    c_->End(s, wrong_);
    delete this;
  }

 private:
  CallPtr c_;
  EchoResponse m_;
  int seen_ = 0;
  std::string wrong_;
};

class WriteAll final : public ClientWriteReactor<EchoRequest> {
 public:
  WriteAll(TestService::Stub* stub, CallPtr c) : c_(std::move(c)) {
    stub->async()->ClientStream(&c_->ctx, &c_->resp, this);
    Next();
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (ok) Next();
  }
  void OnDone(const Status& s) override {
    std::string wrong;
    const int64_t want = int64_t(c_->payload.size()) * c_->messages;
    if (s.ok() && (c_->resp.count() != c_->messages || c_->resp.total_bytes() != want)) {
      wrong = absl::StrCat("server saw ", c_->resp.count(), " messages / ", c_->resp.total_bytes(),
                           " bytes, sent ", c_->messages, " / ", want);
    }
    c_->End(s, wrong);
    delete this;
  }

 private:
  void Next() {
    if (sent_ == c_->messages) {
      StartWritesDone();
      return;
    }
    ++sent_;
    out_.set_payload(c_->payload);
    StartWrite(&out_);
  }
  CallPtr c_;
  EchoRequest out_;
  int sent_ = 0;
};

class PingPong final : public ClientBidiReactor<EchoRequest, EchoResponse> {
 public:
  PingPong(TestService::Stub* stub, CallPtr c) : c_(std::move(c)) {
    stub->async()->Bidi(&c_->ctx, this);
    Send();
    StartRead(&in_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    std::string want = absl::StrCat(c_->payload, "/", got_);
    if (in_.payload() != want) wrong_ = absl::StrCat("got \"", in_.payload(), "\" for ", want);
    ++got_;
    if (sent_ < c_->messages) Send();
    StartRead(&in_);
  }
  void OnDone(const Status& s) override {
    if (s.ok() && wrong_.empty() && got_ != c_->messages) {
      wrong_ = absl::StrCat(got_, " echoes of ", c_->messages);
    }
    c_->End(s, wrong_);
    delete this;
  }

 private:
  void Send() {
    out_.set_payload(absl::StrCat(c_->payload, "/", sent_));
    ++sent_;
    if (sent_ == c_->messages) {
      StartWriteLast(&out_, WriteOptions());
    } else {
      StartWrite(&out_);
    }
  }
  CallPtr c_;
  EchoRequest out_;
  EchoResponse in_;
  int sent_ = 0, got_ = 0;
  std::string wrong_;
};

// A call in the CompletionQueue form: its steps are tags on the round's
// queue, each handled by whichever drainer thread takes it; the object
// deletes itself with its last tag.
class CqOp {
 public:
  virtual ~CqOp() = default;
  virtual void OnTag(bool ok) = 0;
};

class CqUnary final : public CqOp {
 public:
  CqUnary(TestService::Stub* stub, CallPtr c, CompletionQueue* cq, bool prepare)
      : c_(std::move(c)) {
    rpc_ = prepare ? stub->PrepareAsyncUnary(&c_->ctx, c_->req, cq)
                   : stub->AsyncUnary(&c_->ctx, c_->req, cq);
    if (prepare) rpc_->StartCall();
    rpc_->Finish(&c_->resp, &status_, this);  // may run OnTag at once, elsewhere
  }
  void OnTag(bool ok) override {
    if (!ok) status_ = Status(StatusCode::INTERNAL, "Finish's tag came out with ok false");
    c_->End(status_, status_.ok() && c_->resp.payload() != c_->payload
                         ? absl::StrCat("got \"", c_->resp.payload(), "\"")
                         : "");
    delete this;
  }

 private:
  CallPtr c_;
  Status status_;
  std::unique_ptr<ClientAsyncResponseReader<EchoResponse>> rpc_;
};

// Bidi on tags, one step at a time: write, read the echo, ..., half-close,
// finish.
class CqPingPong final : public CqOp {
 public:
  CqPingPong(TestService::Stub* stub, CallPtr c, CompletionQueue* cq) : c_(std::move(c)) {
    stream_ = stub->PrepareAsyncBidi(&c_->ctx, cq);
    stream_->StartCall(this);  // after stream_ is set: the tag may come at once
  }
  void OnTag(bool ok) override {
    switch (step_) {
      case kStarting:
      case kWriting:
        if (!ok) {
          failed_ = step_ == kStarting ? "start" : absl::StrCat("write ", got_);
          return Finish();
        }
        if (step_ == kWriting) {
          step_ = kReading;
          stream_->Read(&in_, this);
        } else {
          Send();
        }
        return;
      case kReading: {
        if (!ok) {
          failed_ = absl::StrCat("read ", got_);
          return Finish();
        }
        std::string want = absl::StrCat(c_->payload, "/", got_);
        if (in_.payload() != want) wrong_ = absl::StrCat("got \"", in_.payload(), "\" for ", want);
        if (++got_ < c_->messages) return Send();
        step_ = kHalfClosing;
        stream_->WritesDone(this);
        return;
      }
      case kHalfClosing:
        return Finish();
      case kFinishing:
        if (status_.ok() && wrong_.empty() && got_ != c_->messages) {
          wrong_ = absl::StrCat(got_, " echoes of ", c_->messages, " (", failed_, " failed)");
        }
        if (!ok) wrong_ = "Finish's tag came out with ok false";
        c_->End(status_, wrong_);
        delete this;
        return;
    }
  }

 private:
  enum Step { kStarting, kWriting, kReading, kHalfClosing, kFinishing };
  void Send() {
    out_.set_payload(absl::StrCat(c_->payload, "/", got_));
    step_ = kWriting;
    stream_->Write(out_, this);
  }
  void Finish() {
    step_ = kFinishing;
    stream_->Finish(&status_, this);
  }
  CallPtr c_;
  std::unique_ptr<ClientAsyncReaderWriter<EchoRequest, EchoResponse>> stream_;
  Step step_ = kStarting;
  EchoRequest out_;
  EchoResponse in_;
  int got_ = 0;
  std::string wrong_;
  std::string failed_;  // the step whose tag came out with ok false
  Status status_;
};

Task<void> CoroutineUnary(std::shared_ptr<TestService::Stub> stub, CallPtr c) {
  Status s = co_await stub->co_Unary(&c->ctx, c->req, &c->resp);
  c->End(s, s.ok() && c->resp.payload() != c->payload
                ? absl::StrCat("got \"", c->resp.payload(), "\"")
                : "");
}

// ---- one round --------------------------------------------------------------------------

// What every round may call: two grpc++ backends (running grpc++'s health
// service), a silent raw server, an HTTP CONNECT proxy, and an xDS control
// plane serving "xds:///greeter" from a snapshot file the chaos thread
// rewrites.
struct Backends {
  std::vector<std::unique_ptr<testing::ServerProcess>> servers;
  std::unique_ptr<transport::testing::RawServer> silent;
  std::unique_ptr<testing::HttpProxyServer> proxy;
  std::unique_ptr<testing::ServerProcess> control_plane;
  std::string snapshot_path;
  // A channel of its own to each backend: health flips (not race calls).
  std::vector<std::unique_ptr<TestService::Stub>> control;
  mutable std::atomic<uint64_t> xds_version{0};

  // Sets the health of `service` on backend `i` (grpc++'s health service,
  // through the test server's "x-set-health").
  void SetHealth(size_t i, const std::string& service, bool serving) const {
    ClientContext ctx;
    ctx.set_deadline(SysClock::now() + seconds(10));
    ctx.AddMetadata("x-set-health", absl::StrCat(service, "=", serving ? 1 : 0));
    EchoResponse resp;
    Status s = control[i]->Unary(&ctx, EchoRequest(), &resp);
    EXPECT_TRUE(s.ok()) << "setting health: " << s.error_message();
  }

  // "xds:///greeter" now goes to these backends (a bit mask, never 0), in a
  // new version of the snapshot (the control plane notices within 20 ms).
  void ServeXds(uint64_t mask) const {
    testing::xds::Locality l;
    for (size_t i = 0; i < servers.size(); ++i) {
      if (mask >> i & 1) l.endpoints.push_back(servers[i]->address());
    }
    testing::xds::Snapshot s(std::to_string(++xds_version));
    s.Add(testing::xds::ListenerJson("greeter", "greeter-routes"))
        .Add(testing::xds::RouteConfigJson("greeter-routes", {{"c1", 1}}))
        .Add(testing::xds::ClusterJson("c1"))
        .Add(testing::xds::EndpointsJson("c1", {l}));
    EXPECT_TRUE(s.WriteTo(snapshot_path)) << snapshot_path;
  }
};

class Round {
 public:
  Round(const Backends& b, uint64_t seed, Stats* stats) : b_(b), seed_(seed), stats_(stats) {}
  // The drainers end once the queue has delivered every tag (or, when a
  // call was lost and the test failed, within 100 ms of being told).
  ~Round() {
    cq_->Shutdown();
    stream_cq_->Shutdown();
    abandon_ = true;
    for (std::thread& d : drainers_) d.join();
  }

  // Runs the round; returns every call it started.
  std::vector<CallPtr> Run() {
    Rng rng(seed_);
    MakeChannel(rng);
    // Channel churn beside the round's channel: two threads each making
    // short-lived channels to one live backend, a call or two on each
    // (equal targets and arguments: they share, and close, one pool).
    // Drawn before any thread reads the setup line.
    std::string churn_target;
    if (!silent_ && rng() % 3 == 0) {
      channel_setup_ += ", with channel churn";
      churn_target = b_.servers[rng() % b_.servers.size()]->address();
    }
    // Two threads drain each of the round's CompletionQueues: one for CQ
    // unary calls (shut down as soon as the users stop, with calls in
    // flight: their Finish tags still come), one for CQ streams (whose
    // next steps are new work a shut-down queue refuses: shut down at the
    // round's end).
    for (int d = 0; d < 4; ++d) {
      CompletionQueue* cq = d < 2 ? cq_.get() : stream_cq_.get();
      drainers_.emplace_back([this, cq] {
        void* tag;
        bool ok;
        for (;;) {
          switch (cq->AsyncNext(&tag, &ok, SysClock::now() + milliseconds(100))) {
            case CompletionQueue::SHUTDOWN:
              return;
            case CompletionQueue::GOT_EVENT:
              static_cast<CqOp*>(tag)->OnTag(ok);
              break;
            case CompletionQueue::TIMEOUT:
              if (abandon_) return;
              break;
          }
        }
      });
    }
    const int threads = 2 + int(rng() % 3);
    std::vector<std::thread> users;
    for (int t = 0; t < threads; ++t) {
      users.emplace_back([this, t] { User(Rng(seed_ * 31 + t + 1)); });
    }
    std::vector<std::thread> churners;
    for (int t = 0; !churn_target.empty() && t < 2; ++t) {
      churners.emplace_back(
          [this, t, churn_target] { Churn(Rng(seed_ * 7 + t + 3), churn_target); });
    }
    std::thread canceller([this] { Canceller(Rng(seed_ * 17 + 7)); });
    std::thread chaos([this] { Chaos(Rng(seed_ * 13 + 5)); });
    for (auto& u : users) u.join();
    // Shut down with CQ-form calls still in flight: their tags still come.
    cq_->Shutdown();
    for (auto& c : churners) c.join();
    stop_ = true;
    canceller.join();
    chaos.join();
    {
      std::lock_guard<std::mutex> lock(mu_);
      channel_.reset();
      stub_.reset();
      resolver_.reset();
      ++stats_->destructions;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (std::getenv("RINGRPC_RACE_SETUP") != nullptr) {  // triage: each round's channel
      std::printf("round %llu: %s\n", (unsigned long long)seed_, channel_setup_.c_str());
    }
    return calls_;
  }

 private:
  void MakeChannel(Rng& rng) {
    ChannelArguments args;
    if (rng() % 2) {
      const int n = 1 + int(rng() % 2);
      args.SetInt("ringrpc.cq_threads", n);
      channel_setup_ = absl::StrCat("own ", n, " CQ thread(s)");
    } else {
      channel_setup_ = "process-wide CQ threads";
    }
    // The LB policy, and retries or hedging of every method (gRFC A6):
    // a call the server is asked to fail UNAVAILABLE is tried again.
    static const char* kPolicies[] = {"pick_first", "round_robin", "least_request"};
    const char* lb = kPolicies[rng() % 3];
    std::string method_config;
    switch (rng() % 4) {
      case 0:
        method_config = R"(,"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.005s",)"
                        R"("maxBackoff":"0.02s","backoffMultiplier":2,)"
                        R"("retryableStatusCodes":["UNAVAILABLE"]})";
        Feature(rng, "retries");
        break;
      case 1:
        method_config = R"(,"hedgingPolicy":{"maxAttempts":3,"hedgingDelay":"0.005s",)"
                        R"("nonFatalStatusCodes":["UNAVAILABLE"]})";
        Feature(rng, "hedging");
        break;
      default:
        break;
    }
    // Health checking of a service of this round's own: SERVING on both
    // backends to begin with; the chaos thread flips it on backend 1 only,
    // and backend 0 is in every address list, so a call always has a
    // healthy address (pick_first never checks, as in grpc++).
    std::string health_config;
    if (lb != std::string("pick_first") && rng() % 4 == 0) {
      health_service_ = absl::StrCat("race-", seed_);
      for (size_t i = 0; i < b_.servers.size(); ++i) b_.SetHealth(i, health_service_, true);
      health_config =
          absl::StrCat(R"("healthCheckConfig":{"serviceName":")", health_service_, R"("},)");
      Feature(rng, "health checks");
    }
    args.SetString(
        "grpc.service_config",
        absl::StrCat(R"({"loadBalancingConfig":[{")", lb, R"(":{}}],)", health_config,
                     R"("methodConfig":[{"name":[{"service":"ringrpc.test.TestService"}])",
                     method_config, "}]}"));
    Feature(rng, lb);
    if (rng() % 3 == 0) {
      args.SetInt("grpc.default_compression_algorithm", 1 + int(rng() % 2));
      Feature(rng, "compression");
    }
    std::shared_ptr<ChannelCredentials> creds = InsecureChannelCredentials();
    const bool with_creds = rng() % 4 == 0;
    if (with_creds) {
      args.SetInt("ringrpc.allow_insecure_call_credentials", 1);
      creds = CompositeChannelCredentials(
          creds, MetadataCredentialsFromPlugin(std::make_unique<RacePlugin>(seed_)));
      Feature(rng, "call credentials");
    }
    std::vector<std::unique_ptr<experimental::ClientInterceptorFactoryInterface>> interceptors;
    if (rng() % 4 == 0) {
      interceptors.push_back(std::make_unique<RaceInterceptorFactory>());
      Feature(rng, "interceptors");
    }
    silent_ = rng() % 4 == 0;
    if (const char* only = std::getenv("RINGRPC_RACE_SILENT"); only && *only) {
      silent_ = *only == '1';  // triage: only silent (1) or only live (0) targets
    }
    channel_setup_ += silent_ ? ", the silent server" : ", live backends";
    // The target: the silent server; xds:///greeter (its cluster moving
    // between the backends); one backend by its address, through the proxy
    // or not; or a manual resolver moving between the backends. A manual
    // resolver takes no credentials or interceptors: a round with either
    // calls one backend by its address (or xDS).
    xds_ = !silent_ && health_service_.empty() && rng() % 6 == 0;
    if (xds_) Feature(rng, "xds");
    const bool proxied = !silent_ && !xds_ && rng() % 5 == 0;
    if (proxied) {
      args.SetString("grpc.http_proxy", "http://" + b_.proxy->address());
      Feature(rng, "proxy");
    }
    const bool direct = with_creds || !interceptors.empty() || proxied;
    if (silent_ || direct || xds_) {
      // Backend 0 when health is checked: it stays SERVING.
      std::string target =
          b_.servers[health_service_.empty() ? rng() % b_.servers.size() : 0]->address();
      if (silent_) {
        args.SetInt("ringrpc.connect_timeout_ms", 200);
        target = b_.silent->address();
      }
      if (xds_) target = "xds:///greeter";
      channel_ = interceptors.empty() ? CreateCustomChannel(target, creds, args)
                                      : experimental::CreateCustomChannelWithInterceptors(
                                            target, creds, args, std::move(interceptors));
    } else {
      resolver_ = std::make_shared<ManualResolver>();
      resolver_->Push(Addresses(rng));
      channel_ = CreateChannelWithResolver("localhost", resolver_, args);
    }
    stub_ = std::shared_ptr<TestService::Stub>(TestService::NewStub(channel_).release());
  }

  // A feature this round's channel has: in its setup line and the counts.
  void Feature(Rng&, const std::string& name) {
    channel_setup_ += ", " + name;
    stats_->Feature(name);
  }

  // Backend 0 is in every list when health is checked (it stays SERVING).
  AddressList Addresses(Rng& rng) {
    AddressList list;
    for (auto& s : b_.servers) {
      if (rng() % 3 != 0 || list.empty() || (!health_service_.empty() && s == b_.servers[0])) {
        list.push_back(*transport::Address::Parse(s->address()));
      }
    }
    return list;
  }

  // The stub and its channel, read together: another user may drop both
  // between two separate reads.
  std::pair<std::shared_ptr<TestService::Stub>, std::shared_ptr<Channel>> StubAndChannel() {
    std::lock_guard<std::mutex> lock(mu_);
    return {stub_, channel_};
  }
  std::shared_ptr<Channel> Chan() {
    std::lock_guard<std::mutex> lock(mu_);
    return channel_;
  }

  CallPtr NewCall(Rng& rng, Form form) {
    auto c = std::make_shared<CallRec>();
    c->id = next_id_.fetch_add(1);
    c->form = form;
    c->silent_target = silent_;
    c->payload = absl::StrCat("s", seed_, "c", c->id, std::string(rng() % 64, 'q'));
    c->messages = 1 + int(rng() % 4);
    c->req.set_payload(c->payload);
    c->req.set_sleep_ms(rng() % 5 == 0 ? int(rng() % 30) : 0);
    c->req.set_count(c->messages);
    // Server streams answer with messages of this size (a unary call with it
    // set would be answered with it instead of its payload).
    if (form == Form::kBlockingServerStream || form == Form::kReadReactor) {
      c->req.set_response_size(1 + int(c->id % 50));
    }
    const auto now = SysClock::now();
    SetDeadline(rng, c->ctx, silent_);
    if (rng() % 8 == 0) c->ctx.set_wait_for_ready(true);
    if (rng() % 3 == 0) c->ctx.AddMetadata("x-race", std::to_string(c->id));
    if (rng() % 5 == 0) {
      c->ctx.set_compression_algorithm(static_cast<CompressionAlgorithm>(rng() % 3));
    }
    // A unary call the server is asked to fail UNAVAILABLE: retried or
    // hedged where the round's channel says so, then ends with it.
    const bool unary = form == Form::kBlockingUnary || form == Form::kAsyncUnary ||
                       form == Form::kCoroutineUnary || form == Form::kCqUnary;
    if (unary && !silent_ && rng() % 6 == 0) {
      c->req.set_status_code(static_cast<int>(StatusCode::UNAVAILABLE));
      c->req.set_status_message(std::string(kProvoked) + " server");
    }
    const bool cancelled_first = rng() % 25 == 0;
    if (cancelled_first) {  // cancelled before it starts
      c->ctx.TryCancel();
      ++stats_->cancels;
    }
    const std::optional<SysClock::time_point> deadline = c->ctx.deadline();
    c->setup = absl::StrCat(
        channel_setup_, "; deadline ",
        !deadline                                  ? std::string("none")
        : *deadline == SysClock::time_point::max() ? std::string("max()")
        : *deadline == SysClock::time_point::min()
            ? std::string("min()")
            : absl::StrCat(std::chrono::duration_cast<milliseconds>(*deadline - now).count(),
                           " ms"),
        c->ctx.wait_for_ready() ? ", wait_for_ready" : "",
        cancelled_first ? ", cancelled before it started" : "",
        c->req.sleep_ms() ? absl::StrCat(", server sleeps ", c->req.sleep_ms(), " ms") : "");
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back(c);
      recent_.push_back(c);
      if (recent_.size() > 64) recent_.pop_front();
    }
    ++stats_->calls;
    return c;
  }

  static void SetDeadline(Rng& rng, ClientContext& ctx, bool silent) {
    const auto now = SysClock::now();
    switch (rng() % 8) {
      case 0:
        ctx.set_deadline(SysClock::time_point::min());
        break;
      case 1:
        ctx.set_deadline(now - milliseconds(rng() % 1000));
        break;
      case 2:
        ctx.set_deadline(now + milliseconds(rng() % 20));
        break;
      case 3:
        ctx.set_deadline(now + milliseconds(20 + rng() % 200));
        break;
      case 4:
        if (!silent) {
          ctx.set_deadline(SysClock::time_point::max());
          break;
        }
        [[fallthrough]];
      case 5:
        if (!silent) break;  // no deadline
        [[fallthrough]];
      default:
        ctx.set_deadline(now + milliseconds(silent ? 300 : 10000));
        break;
    }
  }

  void User(Rng rng) {
    const int ops = 20 + int(rng() % 40);
    for (int i = 0; i < ops; ++i) {
      auto [stub, channel] = StubAndChannel();
      if (!stub || !channel) return;
      Form form = static_cast<Form>(rng() % static_cast<int>(Form::kCount));
      // Triage: RINGRPC_RACE_FORMS, a bit mask of the forms to use.
      static const uint64_t forms = EnvU64("RINGRPC_RACE_FORMS", ~uint64_t{0});
      if (!(forms >> static_cast<int>(form) & 1)) continue;
      CallPtr c = NewCall(rng, form);
      switch (form) {
        case Form::kBlockingUnary: {
          Status s = stub->Unary(&c->ctx, c->req, &c->resp);
          c->End(s, s.ok() && c->resp.payload() != c->payload
                        ? absl::StrCat("got \"", c->resp.payload(), "\"")
                        : "");
          break;
        }
        case Form::kAsyncUnary: {
          // Sometimes the callback holds the last reference to the channel
          // and lets go of it inside the callback.
          std::shared_ptr<Channel> keep = rng() % 3 == 0 ? channel : nullptr;
          stub->async()->Unary(&c->ctx, &c->req, &c->resp,
                               [c, keep = std::move(keep)](Status s) mutable {
                                 c->End(s, s.ok() && c->resp.payload() != c->payload
                                               ? absl::StrCat("got \"", c->resp.payload(), "\"")
                                               : "");
                                 keep.reset();
                               });
          break;
        }
        case Form::kCoroutineUnary:
          channel->Spawn(CoroutineUnary(stub, c));
          break;
        case Form::kBlockingServerStream: {
          auto reader = stub->ServerStream(&c->ctx, c->req);
          EchoResponse m;
          int n = 0;
          std::string wrong;
          while (reader->Read(&m)) {
            if (m.count() != n || m.payload().size() != size_t(c->req.response_size())) {
              wrong = absl::StrCat("message ", n, " was count ", m.count());
            }
            ++n;
            if (rng() % 20 == 0) {  // walk away mid-stream
              c->ctx.TryCancel();
              ++stats_->cancels;
            }
          }
          Status s = reader->Finish();
          if (s.ok() && wrong.empty() && n != c->messages) {
            wrong = absl::StrCat(n, " messages of ", c->messages);
          }
          c->End(s, wrong);
          if (rng() % 4 == 0) reader.reset();  // else destroyed at scope end
          break;
        }
        case Form::kReadReactor:
          new ReadOnce(stub.get(), c);
          break;
        case Form::kWriteReactor:
          new WriteAll(stub.get(), c);
          break;
        case Form::kBidiReactor:
          new PingPong(stub.get(), c);
          break;
        case Form::kBlockingBidi: {
          auto rw = stub->Bidi(&c->ctx);
          std::string wrong;
          int got = 0;
          for (int k = 0; k < c->messages; ++k) {
            EchoRequest out;
            out.set_payload(absl::StrCat(c->payload, "/", k));
            if (!rw->Write(out)) break;
            EchoResponse in;
            if (!rw->Read(&in)) break;
            if (in.payload() != out.payload()) wrong = absl::StrCat("got \"", in.payload(), "\"");
            ++got;
          }
          rw->WritesDone();
          Status s = rw->Finish();
          if (s.ok() && wrong.empty() && got != c->messages) {
            wrong = absl::StrCat(got, " echoes of ", c->messages);
          }
          c->End(s, wrong);
          break;
        }
        case Form::kCqUnary:
          new CqUnary(stub.get(), c, cq_.get(), rng() % 2 == 0);
          break;
        case Form::kCqBidi:
          new CqPingPong(stub.get(), c, stream_cq_.get());
          break;
        case Form::kCount:
          break;
      }
      // A reused context: a second blocking unary on the same one.
      if (form == Form::kBlockingUnary && rng() % 10 == 0) {
        CallPtr again = NewCall(rng, Form::kBlockingUnary);
        Status s = stub->Unary(&c->ctx, again->req, &again->resp);
        again->End(s, s.ok() && again->resp.payload() != again->payload ? "wrong payload" : "");
      }
      if (rng() % 16 == 0) std::this_thread::sleep_for(milliseconds(rng() % 5));
      // Drop the channel while calls are queued or in flight.
      if (rng() % 97 == 0) {
        std::lock_guard<std::mutex> lock(mu_);
        if (channel_) {
          channel_.reset();
          stub_.reset();
          ++stats_->destructions;
        }
        return;
      }
    }
  }

  void Churn(Rng rng, const std::string& target) {
    const int channels = 5 + int(rng() % 15);
    for (int i = 0; i < channels && !stop_; ++i) {
      auto stub = TestService::NewStub(CreateChannel(target, InsecureChannelCredentials()));
      ++stats_->churned;
      const int calls = 1 + int(rng() % 2);
      for (int k = 0; k < calls; ++k) {
        CallPtr c = NewCall(rng, Form::kBlockingUnary);
        Status s = stub->Unary(&c->ctx, c->req, &c->resp);
        c->End(s, s.ok() && c->resp.payload() != c->payload
                      ? absl::StrCat("got \"", c->resp.payload(), "\"")
                      : "");
      }
    }
  }

  void Canceller(Rng rng) {
    while (!stop_) {
      CallPtr victim;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!recent_.empty()) victim = recent_[rng() % recent_.size()];
      }
      if (victim && rng() % 2) {
        victim->ctx.TryCancel();  // at whatever point it is: connecting, in flight, ended
        ++stats_->cancels;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
    }
  }

  void Chaos(Rng rng) {
    while (!stop_) {
      std::this_thread::sleep_for(milliseconds(5 + rng() % 40));
      auto channel = Chan();
      if (!channel) continue;
      switch (rng() % 6) {
        case 0:
          channel->Invalidate();
          ++stats_->invalidates;
          break;
        case 1:
          if (resolver_) {
            resolver_->Push(Addresses(rng));
            ++stats_->updates;
          }
          break;
        case 4:
          if (xds_) {  // the cluster moves: backend 0, 1 or both
            b_.ServeXds(1 + rng() % 3);
            ++stats_->xds_updates;
          }
          if (!health_service_.empty()) {  // backend 1 flips
            b_.SetHealth(1, health_service_, rng() % 2);
            ++stats_->health_flips;
          }
          break;
        case 2:
          (void)channel->GetState(rng() % 2);
          break;
        case 3:
          (void)channel->WaitForConnected(SysClock::now() + milliseconds(rng() % 20));
          break;
        default:
          (void)channel->MetricsText();
          break;
      }
    }
  }

  const Backends& b_;
  const uint64_t seed_;
  Stats* stats_;
  std::mutex mu_;
  std::shared_ptr<Channel> channel_;
  std::shared_ptr<TestService::Stub> stub_;
  std::shared_ptr<ManualResolver> resolver_;
  bool silent_ = false;
  bool xds_ = false;
  std::string health_service_;  // set: health checked (backend 1 flips)
  std::string channel_setup_;
  std::vector<CallPtr> calls_;
  std::deque<CallPtr> recent_;
  std::atomic<uint64_t> next_id_{0};
  std::atomic<bool> stop_{false};
  const std::unique_ptr<CompletionQueue> cq_ = std::make_unique<CompletionQueue>();
  const std::unique_ptr<CompletionQueue> stream_cq_ = std::make_unique<CompletionQueue>();
  std::vector<std::thread> drainers_;
  std::atomic<bool> abandon_{false};
};

bool ServerDropped(const Status& s) {
  const std::string& m = s.error_message();
  return m.find("closed by the server") != std::string::npos ||
         m.find("reset by peer") != std::string::npos;
}

bool AllowedEnd(const CallRec& c) {
  // What the suite asked for: a server told to fail, a plugin or an
  // interceptor refusing (kProvoked in the message).
  if (!c.status.ok() && c.status.error_message().find(kProvoked) != std::string::npos) return true;
  switch (c.status.error_code()) {
    case StatusCode::OK:
    case StatusCode::CANCELLED:
    case StatusCode::DEADLINE_EXCEEDED:
      return true;
    // Only the silent server's calls: live backends, resolver updates
    // and Invalidate() must never fail a call -- unless the server itself
    // dropped the connection (seen once under TSAN, where the test server
    // is built with the sanitizer too and can die on a report inside
    // grpc++): that is the server's doing, counted apart in the summary.
    case StatusCode::UNAVAILABLE:
      return c.silent_target || ServerDropped(c.status);
    default:
      return false;
  }
}

TEST(Races, EveryCallEndsOnceWithItsOwnAnswerAndNothingLeaks) {
  const uint64_t seed =
      EnvU64("RINGRPC_RACE_SEED",
             std::random_device()() ^ uint64_t(SysClock::now().time_since_epoch().count()));
  const uint64_t budget_s = EnvU64("RINGRPC_RACE_SECONDS", 20);
  const std::string replay =
      absl::StrCat("replay: RINGRPC_RACE_SEED=", seed, " RINGRPC_RACE_SECONDS=", budget_s);
  std::printf("race seed %llu (%s)\n", static_cast<unsigned long long>(seed), replay.c_str());
  SCOPED_TRACE(replay);

  // A thread made and joined first: TSAN starts a background thread of its
  // own with the process's first pthread_create, which is not ours.
  std::thread([] {}).join();
  // The xDS bootstrap, before any thread could read the environment; the
  // control plane's address is known only once it runs, so it is started
  // here, before the backends it will name (it needs none to start).
  char dir_template[] = "/tmp/ringrpc-race-XXXXXX";
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = tmp != nullptr ? std::string(tmp) : std::string(::mkdtemp(dir_template));
  const std::string snapshot_path = dir + "/race-snapshot.json";
  ASSERT_TRUE(testing::xds::Snapshot("0").WriteTo(snapshot_path));
  auto control_plane = testing::ServerProcess::Start(
      "127.0.0.1:0", "tests/xds/control_plane",
      {"--snapshot=" + snapshot_path, "--log=" + dir + "/control_plane.log"});
  ASSERT_TRUE(control_plane.ok()) << control_plane.status();
  const std::string bootstrap =
      absl::StrCat(R"({"xds_servers": [{"server_uri": ")", (*control_plane)->address(),
                   R"(", "channel_creds": [{"type": "insecure"}]}], "node": {"id": "race-test"}})");
  ASSERT_EQ(::setenv("GRPC_XDS_BOOTSTRAP_CONFIG", bootstrap.c_str(), 1), 0);
  const int fds_before = testing::OpenFds();
  const long threads_before = testing::ThreadCount();
  long rss_before = 0;
  Stats stats;
  uint64_t rounds = 0, seeds_tried = 0, live_unavailable = 0;
  std::vector<std::string> live_unavailable_samples;
  {
    Backends b;
    for (int i = 0; i < 2; ++i) {
      auto s =
          testing::ServerProcess::Start("127.0.0.1:0", "tests/server/test_server", {"--health"});
      ASSERT_TRUE(s.ok()) << s.status();
      b.servers.push_back(std::move(*s));
      // One CQ thread of its own: one connection, made now, whichever
      // thread flips health later.
      ChannelArguments one_thread;
      one_thread.SetInt("ringrpc.cq_threads", 1);
      b.control.push_back(TestService::NewStub(CreateCustomChannel(
          b.servers.back()->address(), InsecureChannelCredentials(), one_thread)));
      b.SetHealth(i, "race-start", true);  // the control channel is connected
    }
    b.silent = std::make_unique<transport::testing::RawServer>("");
    auto proxy = testing::HttpProxyServer::Start({});
    ASSERT_TRUE(proxy.ok()) << proxy.status();
    b.proxy = std::move(*proxy);
    b.control_plane = std::move(*control_plane);
    b.snapshot_path = snapshot_path;
    b.ServeXds(3);
    const int fds_backends = testing::OpenFds();
    const auto end = std::chrono::steady_clock::now() + seconds(budget_s);
    while (std::chrono::steady_clock::now() < end) {
      const uint64_t round_seed = seed + rounds;
      ++seeds_tried;
      Round round(b, round_seed, &stats);
      std::vector<CallPtr> calls = round.Run();
      // Every call ends, within the longest deadline it could have had
      // (10 s) plus slack; wait_for_ready / no-deadline calls to live
      // servers end sooner.
      const auto limit = std::chrono::steady_clock::now() + seconds(60);
      for (const CallPtr& c : calls) {
        while (c->ends.load(std::memory_order_acquire) == 0 &&
               std::chrono::steady_clock::now() < limit) {
          std::this_thread::sleep_for(milliseconds(2));
        }
      }
      std::this_thread::sleep_for(milliseconds(20));  // a second ending would show now
      for (const CallPtr& c : calls) {
        const int ends = c->ends.load(std::memory_order_acquire);
        std::string probe;
        if (ends == 0) {
          // Triage: is the call still waiting on something (it ends when
          // cancelled), or lost (nothing will ever end it)?
          c->ctx.TryCancel();
          for (int i = 0; i < 5000 && c->ends.load(std::memory_order_acquire) == 0; ++i) {
            std::this_thread::sleep_for(milliseconds(1));
          }
          probe = c->ends.load(std::memory_order_acquire) == 0
                      ? "; TryCancel did not end it either: lost"
                      : absl::StrCat("; TryCancel then ended it: ", c->status.ToString());
        }
        ASSERT_EQ(ends, 1) << "round seed " << round_seed << ": call " << c->id << " ("
                           << FormName(c->form) << ") ended " << ends << " times (" << c->setup
                           << ")" << probe;
        ASSERT_TRUE(c->mismatch.empty())
            << "round seed " << round_seed << ": call " << c->id << " (" << FormName(c->form)
            << ") OK with an answer not its own: " << c->mismatch;
        ASSERT_TRUE(AllowedEnd(*c))
            << "round seed " << round_seed << ": call " << c->id << " (" << FormName(c->form)
            << "): " << c->status.ToString() << " (" << c->setup << ")";
        if (!c->status.ok()) {
          ASSERT_FALSE(c->status.error_message().empty()) << FormName(c->form);
        }
        if (c->silent_target) {
          ASSERT_FALSE(c->status.ok()) << "a silent server answered?";
        }
        if (!c->status.ok() && c->status.error_message().find(kProvoked) != std::string::npos) {
          ++stats.provoked;
          continue;
        }
        switch (c->status.error_code()) {
          case StatusCode::OK:
            ++stats.ok;
            break;
          case StatusCode::CANCELLED:
            ++stats.cancelled;
            break;
          case StatusCode::DEADLINE_EXCEEDED:
            ++stats.deadline;
            break;
          default:
            ++stats.unavailable;
            if (!c->silent_target && live_unavailable_samples.size() < 3) {
              live_unavailable_samples.push_back(
                  absl::StrCat(FormName(c->form), ": ", c->status.error_message()));
            }
            if (!c->silent_target) ++live_unavailable;
            break;
        }
      }
      ++rounds;
      if (rounds == 1) rss_before = testing::RssKiB();
    }
    // The proxy and the control plane were really used by their rounds.
    {
      std::lock_guard<std::mutex> lock(stats.mu);
      if (stats.features["proxy"] > 0) {
        int connects = 0;
        for (auto& s : b.servers) connects += b.proxy->Connects(s->address());
        EXPECT_GT(connects, 0) << "no CONNECT reached the proxy: " << b.proxy->Log();
      }
      if (stats.features["xds"] > 0) {
        std::ifstream f(dir + "/control_plane.log");
        const std::string log((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
        EXPECT_NE(log.find("ACK ClusterLoadAssignment"), std::string::npos) << log;
      }
    }
    // Every channel is gone: what they held must go too (the CQ threads
    // included; the backends' own fds stay until they are stopped).
    EXPECT_TRUE([&] {
      for (int i = 0; i < 1000 && testing::OpenFds() > fds_backends; ++i) {
        std::this_thread::sleep_for(milliseconds(10));
      }
      return testing::OpenFds() <= fds_backends;
    }()) << testing::OpenFds()
         << " fds open, " << fds_backends << " with only the backends";
  }
  // Call credentials' worker threads end 30 s after their last job, by
  // themselves: not counted (everything else must be gone).
  auto threads = [] { return testing::ThreadCountExcept("ringrpc-creds"); };
  for (int i = 0; i < 1000 && threads() > threads_before; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_LE(threads(), threads_before);
  EXPECT_LE(testing::OpenFds(), fds_before);
  const long rss_after = testing::RssKiB();
  if (!kSanitized && rounds > 1) {
    // Allocator caches stay; a leak per call (tens of thousands) would not.
    EXPECT_LT(rss_after, rss_before + 64 * 1024) << rss_before << " -> " << rss_after << " KiB";
  }
  std::printf(
      "races: %llu rounds (seeds %llu..%llu), %llu calls (%llu ok, %llu cancelled, %llu deadline, "
      "%llu unavailable), %llu TryCancel, %llu channel destructions, %llu Invalidate, %llu "
      "resolver updates, %llu short-lived channels, %llu health flips, %llu xDS updates; RSS %ld "
      "-> %ld KiB\n",
      (unsigned long long)rounds, (unsigned long long)seed,
      (unsigned long long)(seed + seeds_tried - 1), (unsigned long long)stats.calls.load(),
      (unsigned long long)stats.ok.load(), (unsigned long long)stats.cancelled.load(),
      (unsigned long long)stats.deadline.load(), (unsigned long long)stats.unavailable.load(),
      (unsigned long long)stats.cancels.load(), (unsigned long long)stats.destructions.load(),
      (unsigned long long)stats.invalidates.load(), (unsigned long long)stats.updates.load(),
      (unsigned long long)stats.churned.load(), (unsigned long long)stats.health_flips.load(),
      (unsigned long long)stats.xds_updates.load(), rss_before, rss_after);
  std::printf("provoked ends (a server asked to fail, a plugin or interceptor refusing): %llu\n",
              (unsigned long long)stats.provoked.load());
  {
    std::lock_guard<std::mutex> lock(stats.mu);
    std::string f = "rounds per channel feature:";
    for (const auto& [name, n] : stats.features) absl::StrAppend(&f, " ", name, " ", n, ";");
    std::printf("%s\n", f.c_str());
  }
  std::printf("UNAVAILABLE from live backends: %llu\n", (unsigned long long)live_unavailable);
  for (const std::string& m : live_unavailable_samples) std::printf("  e.g. %s\n", m.c_str());
  EXPECT_GT(stats.ok.load(), 0u);
}

}  // namespace
}  // namespace ringrpc
