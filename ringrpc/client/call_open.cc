// Opening a call on a channel: pick -> lease -> start the stream ->
// register cancel (CallOpener::Open), for a stream's caller, each unary
// attempt and each hedged copy.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "ringrpc/base/mutex.h"
#include "ringrpc/client/channel/channel_state.h"
#include "ringrpc/client/channel/subchannel.h"
#include "ringrpc/client/internal/call_access.h"
#include "ringrpc/client/internal/call_credentials.h"
#include "ringrpc/client/internal/call_opener.h"
#include "ringrpc/client/internal/call_waits.h"
#include "ringrpc/client/internal/client_call_impl.h"
#include "ringrpc/client/internal/interceptors.h"
#include "ringrpc/client/internal/pick_loop.h"

namespace ringrpc::internal {

// Cancel() from any thread reaches the call on its loop from now on (or
// cancels it at once if it came first).
void CallOpener::RegisterCancel(ClientCall::Impl& impl) {
  CancelState& cancel = *impl.cancel_state;
  MutexLock lock(&cancel.mu);
  if (cancel.cancelled) {
    impl.call->Cancel();
    return;
  }
  cancel.running = impl.alive;
  cancel.cancel_running = [](const std::shared_ptr<void>& running) {
    auto target = std::static_pointer_cast<ClientCall::Impl::CancelTarget>(running);
    std::weak_ptr<ClientCall::Impl::CancelTarget> weak = target;
    target->loop->Post([weak] {
      if (auto t = weak.lock(); t && t->call) {
        if (t->interceptors != nullptr) t->interceptors->PreSendCancel();
        t->call->Cancel();
      }
    });
  };
}

// A per-call :authority must be a valid header value, non-empty.
absl::Status CheckAuthority(const std::string& authority) {
  bool ok = !authority.empty();
  for (char c : authority) ok = ok && c > 0x20 && c < 0x7f;
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the call's authority \"", absl::CHexEscape(authority),
      "\" (ClientContext::set_authority) must be non-empty printable ASCII without spaces"));
}

// The channel's then the call's credentials, over TLS or LocalCredentials
// only (unless the channel opted in), their metadata appended to `md`.
Task<Status> RunCallCredentials(const std::shared_ptr<ChannelState>& self, const Attempt& a,
                                const std::string& method,
                                const std::optional<std::string>& authority,
                                transport::Metadata& md) {
  const ChannelState& st = *self;
  const bool tls = st.config().connection.tls != nullptr;
  const bool local =
      st.config().connection.locality != transport::ConnectionOptions::Locality::kAny;
  if (!tls && !local && !st.config().allow_insecure_call_credentials) {
    co_return Status(StatusCode::UNAUTHENTICATED,
                     "call credentials are sent only over a secure (TLS) or local "
                     "(LocalCredentials) channel, and this channel is insecure "
                     "(ringrpc.allow_insecure_call_credentials=1 sends them anyway)");
  }
  std::vector<std::shared_ptr<CallCredentials>> creds;
  if (st.config().call_credentials) creds.push_back(st.config().call_credentials);
  if (CallAccess::credentials(*a.ctx)) creds.push_back(CallAccess::credentials(*a.ctx));
  // grpc's service URL: scheme://authority/package.Service; the method alone.
  const size_t slash = method.rfind('/');
  CallCredentials::CallInfo info{
      .service_url = absl::StrCat(tls ? "https://" : "http://",
                                  authority.value_or(st.config().connection.authority),
                                  method.substr(0, slash)),
      .method_name = method.substr(slash + 1),
      .secure = tls};
  co_return co_await ApplyCallCredentials(self, a.loop, a.deadline, a.cancel, std::move(creds),
                                          std::move(info), &md);
}

TimePoint CallOpener::CallDeadline(runtime::EventLoop& loop, const ClientContext& ctx,
                                   const channel::MethodConfig* mc) {
  TimePoint deadline =
      ctx.deadline() ? channel::ToLoopTime(*ctx.deadline(), loop.Now()) : TimePoint::max();
  if (mc != nullptr && mc->timeout) {
    const TimePoint now = loop.Now();
    if (*mc->timeout < TimePoint::max() - now) deadline = std::min(deadline, now + *mc->timeout);
  }
  return deadline;
}

// One attempt in the channel's call metrics, from its start; one that
// ends before it has a stream (no bytes either way) is recorded when this
// goes (with *out, its status), one that has a stream when that ends. A
// task destroyed while opening (its loop shutting down) has no status yet
// and records no end.
struct AttemptRecord {
  AttemptRecord(channel::CallMetricsTable* m, channel::MethodRow* r, bool whole, const Status* o)
      : metrics(m), row(r), whole_call(whole), out(o) {
    if (metrics != nullptr) metrics->AttemptStarted(row);
  }
  AttemptRecord(const AttemptRecord&) = delete;
  AttemptRecord& operator=(const AttemptRecord&) = delete;
  ~AttemptRecord() {
    if (metrics == nullptr || out->ok()) return;
    const Duration took = Clock::now() - start;
    metrics->AttemptEnded(row, out->error_code(), took, 0, 0);
    if (whole_call) metrics->CallEnded(row, out->error_code(), took);
  }
  channel::CallMetricsTable* metrics;  // null: not recorded (or handed to the call)
  channel::MethodRow* row;
  bool whole_call;
  const Status* out;
  const TimePoint start = Clock::now();
};

namespace {

// Why a call cannot open here at all: no context, a misconfigured
// channel, or not on one of the channel's CQ threads.
std::optional<Status> CannotOpen(const ChannelState& st, const ClientContext* ctx,
                                 const std::optional<size_t>& index) {
  if (ctx == nullptr)
    return Status(StatusCode::INVALID_ARGUMENT, "the call's ClientContext is null");
  if (!st.config_error().ok()) return Status::FromAbsl(st.config_error());
  if (!index) {
    return Status(StatusCode::FAILED_PRECONDITION,
                  "Channel::Open/Unary must run on one of the channel's CQ threads "
                  "(use Spawn, the blocking or the callback API)");
  }
  return std::nullopt;
}

// The method's entry in the service config in force (null: none), as the
// plan looked it up already or now.
const channel::MethodConfig* MethodConfigOf(const channel::ActiveConfig& active,
                                            const std::string& method,
                                            const CallOpener::AttemptPlan* plan) {
  if (plan != nullptr && plan->method_config_known) return plan->method_config;
  return active.service_config ? active.service_config->Find(method) : nullptr;
}

// What the stream is started with, fixed before the pick.
struct StreamSettings {
  const std::string& method;
  const transport::Metadata& md;
  transport::Compression compression;
  const std::optional<std::string>& authority;
  const channel::MethodConfig* mc;
  int previous_attempts;
};

enum class Started { kStarted, kAgain, kFailed };

// Starts the stream on the leased connection. kAgain: the connection
// stopped taking streams (closed, draining, or fewer streams than it had:
// pick again); kFailed: `call` says why.
Started StartOnLease(Attempt& a, const StreamSettings& s, SubchannelLease& leased,
                     absl::StatusOr<std::unique_ptr<transport::Call>>& call) {
  call = (*leased)->StartCall(
      {.path = s.method,
       .deadline =
           a.deadline == TimePoint::max() ? std::nullopt : std::optional<TimePoint>(a.deadline),
       .metadata = s.md,
       .compression = s.compression,
       .compression_level = a.st.config().compression_level,
       .authority = s.authority ? std::string_view(*s.authority) : std::string_view(),
       .max_send_message_size = s.mc ? s.mc->max_request_message_bytes : std::nullopt,
       .max_receive_message_size = s.mc ? s.mc->max_response_message_bytes : std::nullopt,
       .previous_attempts = s.previous_attempts});
  if (call.ok()) return Started::kStarted;
  a.last = call.status();
  if (call.status().code() == absl::StatusCode::kUnavailable &&
      a.start_retries++ < kMaxStartRetries) {
    leased.Poison();  // closed or draining: never lease it again
    return Started::kAgain;
  }
  // The server lowered MAX_CONCURRENT_STREAMS since the connection came:
  // returning the lease tells the pool the connection's new capacity (it
  // is not leased past it again), and the call picks again (another
  // connection, a new one, or a wait for a free stream).
  if (call.status().code() == absl::StatusCode::kResourceExhausted &&
      (*leased)->active_calls() >= (*leased)->max_concurrent_streams() &&
      a.start_retries++ < kMaxStartRetries) {
    leased = SubchannelLease();
    return Started::kAgain;
  }
  return Started::kFailed;
}

}  // namespace

Attempt CallOpener::NewAttempt(ChannelState& st, size_t index, runtime::EventLoop& loop,
                               ClientContext* ctx, const channel::MethodConfig* mc,
                               const AttemptPlan* plan) {
  const std::optional<bool>& asked_wait = CallAccess::wait_for_ready(*ctx);
  return Attempt{.st = st,
                 .index = index,
                 .loop = loop,
                 .ctx = ctx,
                 .deadline = plan != nullptr && plan->deadline ? *plan->deadline
                                                               : CallDeadline(loop, *ctx, mc),
                 .wait_for_ready =
                     asked_wait ? *asked_wait : mc != nullptr && mc->wait_for_ready.value_or(false),
                 .cancel = plan != nullptr && plan->cancel != nullptr ? plan->cancel
                                                                      : CallAccess::cancel(*ctx)};
}

Task<Status> CallOpener::PrepareCall(const std::shared_ptr<ChannelState>& self, Attempt& a,
                                     const std::string& method,
                                     const std::optional<std::string>& authority,
                                     transport::Metadata& md,
                                     std::shared_ptr<CallInterceptors>* interceptors) {
  const ChannelState& st = *self;
  if (authority) {
    if (absl::Status s = CheckAuthority(*authority); !s.ok()) co_return Status::FromAbsl(s);
  }
  if (st.config().call_credentials != nullptr || CallAccess::credentials(*a.ctx) != nullptr) {
    Status s = co_await RunCallCredentials(self, a, method, authority, md);
    if (!s.ok()) co_return s;
  }
  *interceptors = CallInterceptors::Create(
      st.config().interceptors.get(), method, a.ctx,
      {.loop = &a.loop, .deadline = a.deadline, .cancel = a.cancel, .keep = self});
  if (*interceptors != nullptr) {
    // An interceptor may answer later (a token fetched on its own thread).
    Status s = co_await (*interceptors)->PreSendInitialMetadata(md);
    if (!s.ok()) co_return s;
  }
  co_return Status();
}

bool CallOpener::NeedsPreparing(const ChannelState& st, const ClientContext& ctx) {
  return CallAccess::authority(ctx) || st.config().call_credentials != nullptr ||
         CallAccess::credentials(ctx) != nullptr || st.config().interceptors != nullptr;
}

Task<std::unique_ptr<ClientCall>> CallOpener::Open(std::shared_ptr<channel::ChannelState> self,
                                                   const std::string& method, ClientContext* ctx,
                                                   Status* out, bool whole_call,
                                                   const AttemptPlan* plan) {
  ChannelState& st = *self;
  // Recorded on a CQ thread with a context (the telemetry's rows are per
  // thread); a row the plan looked up already is reused.
  const std::optional<size_t> index = st.CurrentIndex();
  channel::CallMetricsTable* metrics = index && ctx != nullptr ? st.call_metrics() : nullptr;
  channel::MethodRow* row = metrics == nullptr ? nullptr
                            : plan != nullptr && plan->metrics_row != nullptr
                                ? plan->metrics_row
                                : metrics->Method(*index, method);
  AttemptRecord record(metrics, row, whole_call, out);
  if (std::optional<Status> no = CannotOpen(st, ctx, index)) {
    *out = std::move(*no);
    co_return nullptr;
  }
  runtime::EventLoop& loop = st.cq()->loop(*index);
  st.LeaveIdle();
  if ((plan == nullptr || plan->config == nullptr) && Unresolved(st)) {
    co_await AwaitFirstResolution(st, *index, loop, *ctx);
  }
  // The service config in force when the call started (the resolver's or
  // the default; gRFC A21) and its entry for the method (read-only,
  // shared): its timeout bounds the call's own deadline, its waitForReady
  // applies unless the call set one, its limits apply when smaller than
  // the channel's.
  const channel::ActiveConfig& active =
      plan != nullptr && plan->config != nullptr ? *plan->config : st.active();
  if (!active.error.ok()) {
    *out = Status::FromAbsl(active.error);
    co_return nullptr;
  }
  const channel::MethodConfig* mc = MethodConfigOf(active, method, plan);
  Attempt a = NewAttempt(st, *index, loop, ctx, mc, plan);
  transport::Metadata md(CallAccess::metadata(*ctx).begin(), CallAccess::metadata(*ctx).end());
  const std::optional<std::string>& authority = CallAccess::authority(*ctx);
  std::shared_ptr<CallInterceptors> interceptors;
  if (NeedsPreparing(st, *ctx)) {
    Status s = co_await PrepareCall(self, a, method, authority, md, &interceptors);
    if (!s.ok()) {
      *out = std::move(s);
      co_return nullptr;
    }
  }
  const std::optional<CompressionAlgorithm>& asked = CallAccess::compression(*ctx);
  const StreamSettings settings{
      .method = method,
      .md = md,
      .compression = asked ? static_cast<transport::Compression>(*asked) : st.config().compression,
      .authority = authority,
      .mc = mc,
      .previous_attempts = plan != nullptr ? plan->previous_attempts : 0};
  a.method = method;
  a.metadata = &md;
  for (;;) {
    Step step = PickAndTryLease(a);
    if (step == Step::kNoAddress || step == Step::kNoLease) step = co_await FinishPick(a, step);
    if (step == Step::kAgain) continue;
    if (step == Step::kFail) {
      *out = std::move(a.failure);
      co_return nullptr;
    }
    SubchannelLease leased = std::move(*a.lease);
    a.lease.reset();
    absl::StatusOr<std::unique_ptr<transport::Call>> call;
    const Started started = StartOnLease(a, settings, leased, call);
    if (started == Started::kAgain) continue;
    if (started == Started::kFailed) {
      *out = Status::FromAbsl(call.status());
      co_return nullptr;
    }
    *out = Status();
    co_return MakeCall(self, a, std::move(leased), std::move(*call), std::move(interceptors),
                       active, mc, plan, whole_call, record);
  }
}

std::unique_ptr<ClientCall> CallOpener::MakeCall(
    const std::shared_ptr<ChannelState>& self, Attempt& a, SubchannelLease leased,
    std::unique_ptr<transport::Call> call, std::shared_ptr<CallInterceptors> interceptors,
    const channel::ActiveConfig& active, const channel::MethodConfig* mc, const AttemptPlan* plan,
    bool whole_call, AttemptRecord& record) {
  ChannelState& st = *self;
  auto impl = std::make_unique<ClientCall::Impl>();
  impl->channel = self;
  impl->loop = &a.loop;
  impl->ctx = a.ctx;
  impl->cancel_state = a.cancel;
  impl->sc = a.sc;
  impl->lease = std::move(leased);
  impl->call = std::move(call);
  impl->interceptors = std::move(interceptors);
  if (impl->interceptors != nullptr) impl->interceptors->Opened();
  impl->alive = std::make_shared<ClientCall::Impl::CancelTarget>(
      ClientCall::Impl::CancelTarget{impl->call.get(), &a.loop, impl->interceptors.get()});
  // The policy follows the call from here (least_request's counts).
  if (a.tracker != nullptr) {
    a.tracker->Start();
    impl->lb_tracker = std::move(a.tracker);
  }
  // A stream opened by its caller (no plan: not a unary attempt or a
  // hedged copy) may be sent again until committed: by the method's
  // retryPolicy, and once transparently if the server never saw it.
  if (plan == nullptr && st.config().enable_retries) {
    const channel::RetryPolicy* policy =
        mc != nullptr && mc->retry_policy ? &*mc->retry_policy : nullptr;
    impl->replay =
        std::make_unique<ClientCall::Impl::Replay>(policy, active.throttle.get(), a.loop);
    ClientCall::Impl::Replay& r = *impl->replay;
    r.method = a.method;
    r.plan = AttemptPlan{.deadline = a.deadline == TimePoint::max()
                                         ? std::nullopt
                                         : std::optional<TimePoint>(a.deadline),
                         .config = &active,
                         .method_config_known = true,
                         .method_config = mc};
    r.limit = st.config().per_rpc_retry_buffer_size;
    r.call_start = Clock::now();
    // A hedgingPolicy: further copies beside this one (stream_hedging.cc).
    if (mc != nullptr && mc->hedging_policy) {
      r.hedge = std::make_shared<StreamHedge>(a.loop, *mc->hedging_policy, active.throttle.get());
    }
  }
  RegisterCancel(*impl);
  if (impl->replay != nullptr) WatchRecvTimeout(impl.get());
  if (record.metrics != nullptr) {
    // The call records the attempt's end (and bytes) from now on.
    impl->metrics = std::exchange(record.metrics, nullptr);
    impl->metrics_row = record.row;
    impl->attempt_start = record.start;
    // A stream that may be retried records its call end itself, once.
    impl->whole_call = whole_call && impl->replay == nullptr;
    if (impl->replay != nullptr) {
      impl->replay->plan.metrics_row = record.row;
      impl->replay->call_start = record.start;
    }
    impl->call->set_end_observer(impl.get());
    if (impl->call->finished()) impl->OnCallEnd(*impl->call);  // ended while it opened
  }
  ClientCall::Impl* opened = impl.get();
  std::unique_ptr<ClientCall> made(new ClientCall(std::move(impl)));
  if (opened->replay != nullptr && opened->replay->hedge != nullptr) {
    a.loop.Spawn(HedgeStream(self, opened, opened->replay->hedge));
  }
  return made;
}

}  // namespace ringrpc::internal
