#include "ringrpc/client/channel/health_check.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ringrpc/base/random.h"
#include "ringrpc/base/runtime.h"
#include "ringrpc/pool/retire.h"

namespace ringrpc::channel {
namespace {

constexpr std::string_view kWatchPath = "/grpc.health.v1.Health/Watch";
// How often a watch waiting to open its stream again looks for Stop().
constexpr Duration kStopPoll = std::chrono::milliseconds(100);

Task<absl::StatusOr<SubchannelLease>> AcquireLease(SubchannelPool p) {
  co_return co_await p.Acquire();
}

const char* ServingStatusName(int s) {
  switch (s) {
    case 0:
      return "UNKNOWN";
    case 1:
      return "SERVING";
    case 2:
      return "NOT_SERVING";
    case 3:
      return "SERVICE_UNKNOWN";
  }
  return "an unknown serving status";
}

// A protobuf varint at `p`, advancing it; nullopt if cut short or too long.
std::optional<uint64_t> ReadVarint(std::string_view& p) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && !p.empty(); shift += 7) {
    const auto byte = static_cast<uint8_t>(p.front());
    p.remove_prefix(1);
    v |= uint64_t{byte & 0x7fu} << shift;
    if ((byte & 0x80) == 0) return v;
  }
  return std::nullopt;
}

}  // namespace

std::string EncodeHealthCheckRequest(std::string_view service) {
  std::string out;
  if (service.empty()) return out;  // proto3: the default is not sent
  out.push_back(0x0a);              // field 1, length-delimited
  for (uint64_t n = service.size();; n >>= 7) {
    if (n < 0x80) {
      out.push_back(static_cast<char>(n));
      break;
    }
    out.push_back(static_cast<char>((n & 0x7f) | 0x80));
  }
  out.append(service);
  return out;
}

std::optional<int> DecodeHealthCheckStatus(std::string_view p) {
  int status = 0;  // absent: UNKNOWN
  while (!p.empty()) {
    std::optional<uint64_t> tag = ReadVarint(p);
    if (!tag) return std::nullopt;
    const uint64_t field = *tag >> 3;
    switch (*tag & 7) {
      case 0: {  // varint
        std::optional<uint64_t> v = ReadVarint(p);
        if (!v) return std::nullopt;
        if (field == 1) status = static_cast<int>(static_cast<int32_t>(*v));
        break;
      }
      case 1:  // 64-bit
        if (p.size() < 8) return std::nullopt;
        p.remove_prefix(8);
        break;
      case 2: {  // length-delimited
        std::optional<uint64_t> n = ReadVarint(p);
        if (!n || *n > p.size()) return std::nullopt;
        p.remove_prefix(*n);
        break;
      }
      case 5:  // 32-bit
        if (p.size() < 4) return std::nullopt;
        p.remove_prefix(4);
        break;
      default:
        return std::nullopt;
    }
    if (field == 0) return std::nullopt;
  }
  return status;
}

HealthWatch::HealthWatch(std::string service, std::shared_ptr<AddressRecord> record,
                         SubchannelPool pool, std::shared_ptr<EventHub> events,
                         BackoffConfig backoff)
    : service_(std::move(service)),
      record_(std::move(record)),
      pool_(std::move(pool)),
      events_(std::move(events)),
      backoff_(backoff) {}

HealthWatch::~HealthWatch() = default;

void HealthWatch::Start(runtime::CqThreads& cq, size_t thread) {
  loop_ = &cq.loop(thread);
  std::shared_ptr<HealthWatch> self = shared_from_this();
  runtime::EventLoop* loop = loop_;
  cq.Post(thread, [loop, self] { loop->Spawn(Run(self)); });
}

void HealthWatch::Stop() {
  if (stopped_.exchange(true) || loop_ == nullptr) return;
  std::weak_ptr<HealthWatch> weak = weak_from_this();
  loop_->Post([weak] {
    if (std::shared_ptr<HealthWatch> self = weak.lock(); self && self->call_ != nullptr) {
      self->call_->Cancel();
    }
  });
}

void HealthWatch::Set(Health h, std::string_view why) {
  if (state_.exchange(h, std::memory_order_acq_rel) == h) return;
  events_->Emit(SubchannelEvent::Kind::kHealth, std::string(why));
}

Task<void> HealthWatch::Run(std::shared_ptr<HealthWatch> self) {
  runtime::EventLoop& loop = *self->loop_;
  ConnectionBackoff backoff(self->backoff_);
  uint64_t rng = std::hash<std::string>()(self->record_->name()) | 1;
  bool answered_before = false;
  while (!self->stopped_.load(std::memory_order_acquire) && !self->disabled_) {
    const End end = co_await self->Watch();
    if (end == End::kAnswered) {
      backoff.Reset();  // A17: after an answer, the next stream opens at once
      answered_before = true;
      continue;
    }
    // A connection that went away under an answered stream: a new one at
    // once (its dial has the address's backoff); twice in a row, the
    // health backoff as well.
    if (end == End::kConnectionLost && answered_before) {
      answered_before = false;
      continue;
    }
    answered_before = false;
    // Before opening another: the backoff, and the address's own (a dial
    // refused meanwhile would fail at once).
    const TimePoint until =
        std::max(loop.Now() + backoff.NextDelay(NextRandom(rng)), self->record_->next_attempt());
    while (!self->stopped_.load(std::memory_order_acquire) && loop.Now() < until) {
      co_await SleepUntil(loop, std::min(until, loop.Now() + kStopPoll));
    }
  }
}

Task<HealthWatch::End> HealthWatch::Watch() {
  absl::StatusOr<SubchannelLease> lease = co_await AcquireLease(pool_);
  if (stopped_.load(std::memory_order_acquire)) co_return End::kFailed;
  if (!lease.ok()) {
    // No connection: the record says TRANSIENT_FAILURE; the next one must
    // be answered for before it takes calls.
    Set(Health::kUnknown, absl::StrCat("UNKNOWN: no connection: ", lease.status().message()));
    co_return End::kFailed;
  }
  absl::StatusOr<std::unique_ptr<transport::Call>> started =
      (**lease)->StartCall({.path = kWatchPath});
  if (!started.ok()) {
    if (!(**lease)->accepting_streams()) lease->Poison();
    Set(Health::kUnknown, absl::StrCat("UNKNOWN: ", started.status().message()));
    co_return End::kFailed;
  }
  std::unique_ptr<transport::Call> call = std::move(*started);
  call_ = call.get();
  if (stopped_.load(std::memory_order_acquire)) call->Cancel();  // Stop() came before
  (void)call->Enqueue(EncodeHealthCheckRequest(service_));       // a failure ends the call
  call->WritesDone();
  bool answered = false;
  for (;;) {
    std::optional<std::string> m = co_await call->Read();
    if (!m) break;
    std::optional<int> status = DecodeHealthCheckStatus(*m);
    if (!status) {
      Set(Health::kNotServing,
          "NOT_SERVING: the server's health answer is not a "
          "HealthCheckResponse");
      call->Cancel();
      break;
    }
    answered = true;
    Set(*status == 1 ? Health::kServing : Health::kNotServing, ServingStatusName(*status));
  }
  const absl::Status s = co_await call->Finish();
  call_ = nullptr;
  call.reset();
  const bool connection_lost = !(**lease)->accepting_streams();
  if (connection_lost) lease->Poison();
  if (stopped_.load(std::memory_order_acquire)) co_return End::kFailed;
  if (s.code() == absl::StatusCode::kUnimplemented) {
    // A17: a server without the health service is healthy; checking stops.
    disabled_ = true;
    Set(Health::kServing,
        absl::StrCat("SERVING: the server does not implement grpc.health.v1.Health/Watch "
                     "(UNIMPLEMENTED); health checking is off for this address"));
    static std::atomic<bool> logged{false};
    if (!logged.exchange(true)) {
      std::fprintf(stderr,
                   "ringrpc: %s does not implement grpc.health.v1.Health/Watch: health "
                   "checking of service \"%s\" is off for it (gRFC A17)\n",
                   record_->name().c_str(), service_.c_str());
    }
    co_return End::kFailed;
  }
  if (answered) co_return End::kAnswered;
  if (connection_lost) {
    // Not the server's answer: the next connection must be answered for
    // before it takes calls (they wait, as before a first answer).
    Set(Health::kUnknown,
        absl::StrCat("UNKNOWN: the connection ended before the health check's answer: ",
                     absl::StatusCodeToString(s.code()), ": ", s.message()));
    co_return End::kConnectionLost;
  }
  Set(Health::kNotServing, absl::StrCat("NOT_SERVING: the health check ended without an answer: ",
                                        absl::StatusCodeToString(s.code()), ": ", s.message()));
  co_return End::kFailed;
}

}  // namespace ringrpc::channel
