#include "ringrpc/client/channel.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ringrpc/base/runtime.h"
#include "ringrpc/client/channel/change_signal.h"
#include "ringrpc/client/channel/channel_config.h"
#include "ringrpc/client/channel/channel_state.h"
#include "ringrpc/client/channel/subchannel.h"
#include "ringrpc/client/interceptor.h"
#include "ringrpc/client/internal/call_access.h"
#include "ringrpc/client/internal/call_opener.h"
#include "ringrpc/client/runtime/cq_threads.h"
#include "ringrpc/client/runtime/event_loop.h"
#include "ringrpc/client/runtime/loop_event.h"
#include "ringrpc/client/transport/tls.h"

namespace ringrpc {
// ---- Channel -----------------------------------------------------------------------

namespace {

// Holds the channel's state (not the Channel, which the caller may drop
// while this is queued): the call runs to its end and `done` runs once.
Task<void> RunUnary(std::shared_ptr<channel::ChannelState> state, std::string method,
                    ClientContext* ctx, std::string request, internal::ResponseSink response,
                    std::function<void(Status)> done) {
  Status s = co_await internal::CallOpener::Unary(std::move(state), std::move(method), ctx,
                                                  std::move(request), response);
  done(std::move(s));
}

}  // namespace

Channel::Channel(std::shared_ptr<channel::ChannelState> state) : state_(std::move(state)) {}

// The state lives on while calls, queued tasks or streams hold it; the last
// of them shuts it down (ChannelState::~ChannelState).
Channel::~Channel() = default;

Status Channel::configuration_status() const { return Status::FromAbsl(state_->config_error()); }

Status Channel::resolver_service_config_status() const {
  return Status::FromAbsl(state_->resolver_config_error());
}

Task<std::unique_ptr<ClientCall>> Channel::Open(std::string method, ClientContext* ctx,
                                                Status* status, internal::CallKind kind) {
  if (ctx != nullptr) internal::CallAccess::set_call_kind(*ctx, kind);
  return internal::CallOpener::OpenHolding(state_, std::move(method), ctx, status);
}

Task<Status> Channel::Unary(std::string method, ClientContext* ctx, std::string request,
                            std::string* response) {
  return internal::CallOpener::Unary(state_, std::move(method), ctx, std::move(request),
                                     {.str = response});
}

Task<Status> Channel::Unary(std::string method, ClientContext* ctx, std::string request,
                            ByteBuffer* response) {
  return internal::CallOpener::Unary(state_, std::move(method), ctx, std::move(request),
                                     {.buf = response});
}

void Channel::Spawn(Task<void> task) {
  if (!state_->cq()) return;  // the CQ threads could not start: nothing can run
  state_->Spawn(std::move(task));
}

Status Channel::SpawnOn(size_t cq_thread, Task<void> task) {
  if (!state_->cq()) {
    return Status::FromAbsl(state_->config_error().ok()
                                ? absl::UnavailableError("the channel has no CQ threads")
                                : state_->config_error());
  }
  if (cq_thread >= state_->cq()->size()) {
    return Status(StatusCode::INVALID_ARGUMENT,
                  absl::StrCat("SpawnOn: CQ thread ", cq_thread,
                               " does not exist (the channel has ", state_->cq()->size(), ")"));
  }
  state_->SpawnOn(cq_thread, std::move(task));
  return Status::OK;
}

size_t Channel::cq_thread_count() const { return state_->cq() ? state_->cq()->size() : 0; }

std::string Channel::poller() const {
  return state_->cq() ? runtime::BackendName(state_->cq()->backend()) : "";
}

void Channel::UnaryCallAsync(std::string method, ClientContext* ctx, std::string request,
                             std::string* response, std::function<void(Status)> done) {
  UnaryCallAsync(std::move(method), ctx, std::move(request), {.str = response}, std::move(done));
}

void Channel::UnaryCallAsync(std::string method, ClientContext* ctx, std::string request,
                             ByteBuffer* response, std::function<void(Status)> done) {
  UnaryCallAsync(std::move(method), ctx, std::move(request), {.buf = response}, std::move(done));
}

void Channel::UnaryCallAsync(std::string method, ClientContext* ctx, std::string request,
                             internal::ResponseSink response, std::function<void(Status)> done) {
  if (!state_->config_error().ok() && !state_->cq()) {
    done(Status::FromAbsl(state_->config_error()));  // no thread to run it on
    return;
  }
  state_->Spawn(
      RunUnary(state_, std::move(method), ctx, std::move(request), response, std::move(done)));
}

namespace {

// Where a blocking caller sleeps until the CQ thread running its work has
// the answer: on the caller's own stack, a futex word the CQ thread wakes
// (no allocation, no spinning: the caller's core is the CQ thread's on a
// small machine). After `Set` the caller may return and free it; the one
// thing that may still follow is the FUTEX_WAKE on its address, which the
// kernel allows (a wake with no waiter there is a no-op).
template <typename T>
struct BlockingResult {
  static constexpr uint32_t kPending = 0, kReady = 1, kSleeping = 2;
  std::atomic<uint32_t> state{kPending};
  T value;
  void Set(T v) {
    value = std::move(v);
    if (state.exchange(kReady, std::memory_order_acq_rel) == kSleeping) {
      ::syscall(SYS_futex, &state, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
    }
  }
  T Get() {
    uint32_t s = kPending;
    if (state.compare_exchange_strong(s, kSleeping, std::memory_order_acq_rel)) s = kSleeping;
    while (s != kReady) {
      ::syscall(SYS_futex, &state, FUTEX_WAIT_PRIVATE, kSleeping, nullptr, nullptr, 0);
      s = state.load(std::memory_order_acquire);
    }
    return std::move(value);
  }
};

Task<void> RunBlockingUnary(std::shared_ptr<channel::ChannelState> state, std::string method,
                            ClientContext* ctx, std::string request,
                            internal::ResponseSink response, BlockingResult<Status>* out) {
  out->Set(co_await internal::CallOpener::Unary(std::move(state), std::move(method), ctx,
                                                std::move(request), response));
}

Task<void> RunBlockingOpen(std::shared_ptr<channel::ChannelState> state, std::string method,
                           ClientContext* ctx, Status* status,
                           BlockingResult<std::unique_ptr<ClientCall>>* out) {
  out->Set(co_await internal::CallOpener::Open(std::move(state), method, ctx, status));
}

}  // namespace

std::unique_ptr<ClientCall> Channel::BlockingOpen(const std::string& method, ClientContext* ctx,
                                                  Status* status, internal::CallKind kind) {
  if (ctx != nullptr) internal::CallAccess::set_call_kind(*ctx, kind);
  if (!state_->config_error().ok()) {
    *status = Status::FromAbsl(state_->config_error());
    return nullptr;
  }
  if (state_->CurrentIndex()) {
    *status = Status(StatusCode::FAILED_PRECONDITION,
                     "a blocking call on one of the channel's own CQ threads would deadlock; "
                     "use the coroutine API there");
    return nullptr;
  }
  BlockingResult<std::unique_ptr<ClientCall>> result;
  state_->SpawnForBlocking(RunBlockingOpen(state_, method, ctx, status, &result));
  return result.Get();
}

Status Channel::BlockingUnaryCall(std::string method, ClientContext* ctx,
                                  const std::string& request, std::string* response) {
  return BlockingUnaryCall(std::move(method), ctx, std::string(request), response);
}

Status Channel::BlockingUnaryCall(std::string method, ClientContext* ctx, std::string&& request,
                                  std::string* response) {
  return BlockingUnaryCall(std::move(method), ctx, std::move(request),
                           internal::ResponseSink{.str = response});
}

Status Channel::BlockingUnaryCall(std::string method, ClientContext* ctx, std::string&& request,
                                  ByteBuffer* response) {
  return BlockingUnaryCall(std::move(method), ctx, std::move(request),
                           internal::ResponseSink{.buf = response});
}

Status Channel::BlockingUnaryCall(std::string method, ClientContext* ctx, std::string&& request,
                                  internal::ResponseSink response) {
  if (!state_->config_error().ok()) return Status::FromAbsl(state_->config_error());
  if (state_->CurrentIndex()) {
    return Status(StatusCode::FAILED_PRECONDITION,
                  "a blocking call on one of the channel's own CQ threads would deadlock; "
                  "use the coroutine or callback API there");
  }
  BlockingResult<Status> result;
  // The caller's own CQ thread, every time: its connections stay warm.
  state_->SpawnForBlocking(
      RunBlockingUnary(state_, std::move(method), ctx, std::move(request), response, &result));
  return result.Get();
}

static channel::ConnectivityState Internal(ConnectivityState s) {
  switch (s) {
    case GRPC_CHANNEL_IDLE:
      return channel::ConnectivityState::kIdle;
    case GRPC_CHANNEL_CONNECTING:
      return channel::ConnectivityState::kConnecting;
    case GRPC_CHANNEL_READY:
      return channel::ConnectivityState::kReady;
    case GRPC_CHANNEL_TRANSIENT_FAILURE:
      return channel::ConnectivityState::kTransientFailure;
    case GRPC_CHANNEL_SHUTDOWN:
      return channel::ConnectivityState::kShutdown;
  }
  return channel::ConnectivityState::kShutdown;
}

static ConnectivityState Public(channel::ConnectivityState s) {
  switch (s) {
    case channel::ConnectivityState::kIdle:
      return GRPC_CHANNEL_IDLE;
    case channel::ConnectivityState::kConnecting:
      return GRPC_CHANNEL_CONNECTING;
    case channel::ConnectivityState::kReady:
      return GRPC_CHANNEL_READY;
    case channel::ConnectivityState::kTransientFailure:
      return GRPC_CHANNEL_TRANSIENT_FAILURE;
    case channel::ConnectivityState::kShutdown:
      return GRPC_CHANNEL_SHUTDOWN;
  }
  return GRPC_CHANNEL_SHUTDOWN;
}

ConnectivityState Channel::GetState(bool try_to_connect) {
  if (!state_->config_error().ok()) return GRPC_CHANNEL_TRANSIENT_FAILURE;
  channel::ConnectivityState s = state_->Aggregate();
  if (s == channel::ConnectivityState::kIdle && try_to_connect) {
    auto st = state_;
    // The caller's own CQ thread (where its blocking calls go) connects.
    state_->SpawnForBlocking([](std::shared_ptr<channel::ChannelState> st) -> Task<void> {
      std::optional<size_t> i = st->CurrentIndex();
      if (!i) co_return;
      if (auto sc = st->Pick(*i)) {
        absl::StatusOr<channel::SubchannelLease> l = co_await sc->pool.Acquire();
        (void)l;  // connected (kept in the pool) or failed (recorded): either way, done
      }
    }(st));
  }
  return Public(s);
}

bool Channel::WaitForStateChange(ConnectivityState last,
                                 std::chrono::system_clock::time_point deadline) {
  // On one of the channel's CQ threads waiting would stall the thread that
  // makes the change: answer at once.
  if (state_->CurrentIndex()) return Public(state_->Aggregate()) != last;
  // Through ToLoopTime: saturating, so min()/max() do not overflow.
  const TimePoint until = channel::ToLoopTime(deadline, Clock::now());
  // Woken by the events that change the state (subchannel events, resolver
  // answers, idleness), not by polling; it returns at the deadline or on a
  // change (the two enums match one to one).
  return Public(state_->WaitForStateOtherThan(Internal(last), until)) != last;
}

namespace {

// Waits until the state differs from `last` (the tag with ok true), or
// the tag is no longer owed (its deadline delivered it with ok false, or
// the queue is gone). Woken by the channel's change signal (a resolver
// answer, a connection, a failed dial: what moves the state) and by the
// tag's deadline; no timer looks in between. The channel is held weakly
// (a channel dropped meanwhile leaves the deadline to deliver the tag);
// the signal, which the channel's connections share, strongly.
Task<void> WatchState(std::weak_ptr<channel::ChannelState> weak,
                      std::shared_ptr<internal::CqCore> cq, internal::CqCore::Timer timer,
                      ConnectivityState last) {
  runtime::EventLoop& loop = *runtime::EventLoop::Current();
  std::shared_ptr<channel::ChangeSignal> signal;
  size_t index = 0;
  if (std::shared_ptr<channel::ChannelState> st = weak.lock()) {
    signal = st->changes().shared_from_this();
    index = st->CurrentIndex().value_or(0);
  }
  if (signal == nullptr) co_return;
  for (;;) {
    {
      // Watching before the look: a change after it ends the wait.
      channel::ChangeSignal::Watch watch(*signal, index, loop);
      if (!cq->TimerPending(timer)) co_return;
      std::shared_ptr<channel::ChannelState> st = weak.lock();
      if (st == nullptr) co_return;
      if (Public(st->Aggregate()) != last) {
        cq->EndTimer(timer, true);
        co_return;
      }
      st.reset();
      // Until a change, or just past the deadline (which delivers the tag).
      const TimePoint now = loop.Now();
      const Duration year = std::chrono::hours(24 * 365);
      const Duration left = timer.at - now >= year ? year
                            : timer.at > now       ? timer.at - now + std::chrono::milliseconds(1)
                                                   : Duration::zero();
      (void)co_await runtime::WithTimeout<bool>(loop, runtime::Rung(&watch.changed()), left);
    }
  }
}

}  // namespace

void Channel::NotifyOnStateChangeAt(ConnectivityState last, internal::CqClock::time_point deadline,
                                    CompletionQueue* cq, void* tag) {
  if (cq == nullptr) return;
  const std::shared_ptr<internal::CqCore>& core = internal::CqAccess::Core(cq);
  const internal::CqCore::Timer timer = core->BeginTimer(tag, deadline, /*ok_when_due=*/false);
  if (timer.id == 0) return;  // refused: the queue is shut down
  if (Public(state_->Aggregate()) != last) {
    core->EndTimer(timer, true);
    return;
  }
  if (cq_thread_count() == 0) return;  // nothing can change: the deadline delivers it
  Spawn(WatchState(state_, core, timer, last));
}

bool Channel::WaitForConnected(std::chrono::system_clock::time_point deadline) {
  // On one of the channel's CQ threads: whether it is READY now, without
  // waiting (the connection would be made by the very thread waiting).
  if (state_->CurrentIndex()) return GetState(true) == GRPC_CHANNEL_READY;
  if (!state_->config_error().ok() || !state_->cq()) return false;
  for (;;) {
    // The CQ thread this thread's blocking calls use picks an address and
    // takes a lease (dialling if need be): connected there, or not yet.
    auto connected = std::make_shared<std::promise<bool>>();
    std::future<bool> result = connected->get_future();
    // The wait for a lease ends with the caller's deadline: the task holds
    // the channel, and must not outlive the caller's interest in it.
    const TimePoint until = channel::ToLoopTime(deadline, Clock::now());  // saturating
    const Duration left = until == TimePoint::max()
                              ? Duration(std::chrono::hours(24 * 365))
                              : until - Clock::now() + std::chrono::milliseconds(1);
    state_->SpawnForBlocking([](std::shared_ptr<channel::ChannelState> st,
                                std::shared_ptr<std::promise<bool>> connected,
                                Duration left) -> Task<void> {
      bool ok = false;
      if (std::optional<size_t> i = st->CurrentIndex()) {
        if (std::shared_ptr<channel::Subchannel> sc = st->Pick(*i)) {
          absl::StatusOr<channel::SubchannelLease> lease = sc->pool.TryAcquire();
          if (!lease.ok() && sc->record->CheckBackoff(Clock::now()).ok()) {
            auto acquire =
                [](channel::SubchannelPool p) -> Task<absl::StatusOr<channel::SubchannelLease>> {
              co_return co_await p.Acquire();
            };
            std::optional<absl::StatusOr<channel::SubchannelLease>> waited =
                co_await runtime::WithTimeout<absl::StatusOr<channel::SubchannelLease>>(
                    st->cq()->loop(*i), acquire(sc->pool), left);
            ok = waited && waited->ok();
          } else {
            ok = lease.ok();
          }
        }
      }
      connected->set_value(ok);
    }(state_, connected, left));
    if (result.wait_until(deadline) == std::future_status::ready && result.get()) return true;
    // Asked again every 50 ms: before the resolver's first answer there is
    // nothing to connect yet, and while the address backs off a dial fails.
    auto now = std::chrono::system_clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(std::min<std::chrono::system_clock::duration>(
        deadline - now, std::chrono::milliseconds(50)));
  }
}

void Channel::Invalidate() { state_->Invalidate(); }

pool::PoolMetrics Channel::Metrics() const { return state_->Metrics(); }

std::string Channel::MetricsText() const {
  std::vector<std::pair<std::string, pool::PoolMetrics>> rows = state_->MetricsByAddress();
  std::string out;
  auto family = [&](const char* name, const char* type, const char* help, auto value) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
    for (auto& [address, m] : rows) {
      absl::StrAppend(&out, name, "{address=\"", address, "\"} ", value(m), "\n");
    }
  };
  family("ringrpc_connections_created_total", "counter", "Connections dialled.",
         [](const pool::PoolMetrics& m) { return m.created; });
  family("ringrpc_connections_closed_total", "counter", "Connections closed by the pool.",
         [](const pool::PoolMetrics& m) { return m.closed; });
  family("ringrpc_connect_failures_total", "counter", "Dials that failed.",
         [](const pool::PoolMetrics& m) { return m.connect_failures; });
  family("ringrpc_stream_leases_total", "counter", "Calls given a stream on a pooled connection.",
         [](const pool::PoolMetrics& m) { return m.acquires; });
  family("ringrpc_stream_waits_total", "counter", "Calls that waited for a stream.",
         [](const pool::PoolMetrics& m) { return m.waits; });
  family("ringrpc_connections_attached_total", "counter",
         "Parked connections another CQ thread took over (the reservoir).",
         [](const pool::PoolMetrics& m) { return m.unparked; });
  family("ringrpc_connections_live", "gauge", "Connections open now.",
         [](const pool::PoolMetrics& m) { return m.live; });
  family("ringrpc_streams_active", "gauge", "Streams leased now.",
         [](const pool::PoolMetrics& m) { return m.leases; });
  absl::StrAppend(&out,
                  "# HELP ringrpc_connections_retired_total Connections retired, by reason.\n"
                  "# TYPE ringrpc_connections_retired_total counter\n");
  for (auto& [address, m] : rows) {
    for (size_t i = 1; i < pool::kRetireReasonCount; ++i) {
      absl::StrAppend(&out, "ringrpc_connections_retired_total{address=\"", address, "\",reason=\"",
                      std::string(pool::RetireReasonName(static_cast<pool::RetireReason>(i))),
                      "\"} ", m.retired[i], "\n");
    }
  }
  state_->counters().AppendPrometheus(&out);
  if (const std::shared_ptr<const transport::TlsConfig>& tls = state_->config().connection.tls;
      tls != nullptr && tls->sessions != nullptr) {
    absl::StrAppend(&out,
                    "# HELP ringrpc_tls_handshakes_total TLS handshakes completed: a session "
                    "from the channel's cache resumed, or full.\n"
                    "# TYPE ringrpc_tls_handshakes_total counter\n"
                    "ringrpc_tls_handshakes_total{kind=\"resumed\"} ",
                    tls->sessions->resumed(), "\nringrpc_tls_handshakes_total{kind=\"full\"} ",
                    tls->sessions->full(), "\n");
  }
  absl::StrAppend(&out,
                  "# HELP ringrpc_resolver_service_config_errors_total Service configs from "
                  "the resolver that were invalid (the last valid one was kept; gRFC A21).\n"
                  "# TYPE ringrpc_resolver_service_config_errors_total counter\n"
                  "ringrpc_resolver_service_config_errors_total ",
                  state_->resolver_config_errors(), "\n");
  if (state_->call_metrics() != nullptr) AppendCallMetricsText(CallMetrics(), &out);
  return out;
}

CallMetricsSnapshot Channel::CallMetrics() const {
  const channel::CallMetricsTable* table = state_->call_metrics();
  return table != nullptr ? table->Snapshot() : CallMetricsSnapshot{};
}

}  // namespace ringrpc
