#include "client/channel.h"

#include <algorithm>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/channel/channel_config.h"
#include "client/channel/channel_state.h"
#include "client/channel/resolver.h"
#include "client/channel/subchannel.h"
#include "client/channel/target.h"
#include "client/runtime/cq_threads.h"
#include "client/runtime/loop_event.h"

namespace ringrpc {

namespace internal {
// The one place allowed into ClientContext's private fields.
class CallAccess {
 public:
  static const std::vector<std::pair<std::string, std::string>>& metadata(
      const ClientContext& c) {
    return c.metadata_;
  }
  static std::shared_ptr<CancelState> cancel(const ClientContext& c) { return c.cancel_; }
  static void SetResults(ClientContext& c, const transport::Metadata& initial,
                         const transport::Metadata& trailing, std::string peer) {
    c.initial_ = {initial.begin(), initial.end()};
    c.trailing_ = {trailing.begin(), trailing.end()};
    c.peer_ = std::move(peer);
  }
};
}  // namespace internal

namespace channel {
namespace {

using internal::CallAccess;
using runtime::EventLoop;
using std::chrono::milliseconds;

// How many times one call may pick another address after the picked one
// failed or was backing off, before it reports the failure: enough to walk
// a typical address list once or twice, few enough that a call facing a
// dead cluster fails in microseconds, not after a scan of every address.
constexpr int kMaxRepicks = 8;
// How often a call whose pick raced a resolver update that dropped its
// address picks again (kClosedPoolRepickDelay apart) before reporting
// "pool is closed": the new list reaches the thread within a loop turn, so
// 100 ms is far more than it needs.
constexpr int kMaxClosedPoolRepicks = 100;
constexpr milliseconds kClosedPoolRepickDelay{1};
// How often a call whose connection stopped taking streams between the
// lease and the stream's start (GOAWAY, close) tries another lease: each
// try poisons that connection, so a few cover a burst of closing ones.
constexpr int kMaxStartRetries = 4;
// How often a call with no address to pick looks again: before the
// resolver's first answer, or (wait_for_ready) after a resolver error. The
// list arrives by a post to the thread, not a wake-up of waiting calls.
constexpr milliseconds kNoAddressPoll{20};
// The shortest wait of a wait_for_ready call whose lease failed before it
// tries again (the address's backoff usually asks for longer).
constexpr milliseconds kMinLeaseRetryDelay{5};

Task<absl::StatusOr<SubchannelLease>> Acquire(SubchannelPool p) {
  co_return co_await p.Acquire();
}

}  // namespace
}  // namespace channel

namespace internal {
// Opens calls on a channel's state: the step between the channel core
// (client/channel/channel_state.h) and a ClientCall.
class CallOpener {
 public:
  // `method` must outlive the task (callers await it at once).
  static Task<std::unique_ptr<ClientCall>> Open(
      std::shared_ptr<channel::ChannelState> self, const std::string& method, ClientContext* ctx,
      Status* out);
  static Task<std::unique_ptr<ClientCall>> OpenHolding(
      std::shared_ptr<channel::ChannelState> self, std::string method, ClientContext* ctx,
      Status* out) {
    co_return co_await Open(std::move(self), method, ctx, out);
  }
  // A unary call; the task holds the channel.
  static Task<Status> Unary(std::shared_ptr<channel::ChannelState> self,
                                  std::string method, ClientContext* ctx, std::string request,
                                  std::string* response);

 private:
  // Cancel() from any thread reaches the call on its loop from now on (or
  // cancels it at once if it came first).
  static void RegisterCancel(ClientCall::Impl& impl);
};
}  // namespace internal

// ---- ClientCall ---------------------------------------------------------------------

struct ClientCall::Impl {
  std::shared_ptr<channel::ChannelState> channel;
  runtime::EventLoop* loop = nullptr;  // the CQ thread the call lives on
  ClientContext* ctx = nullptr;
  // The context's cancel state, held: the call may be destroyed after its
  // context (the destructor must not read the context).
  std::shared_ptr<internal::CancelState> cancel_state;
  std::shared_ptr<channel::Subchannel> sc;
  channel::SubchannelLease lease;             // destroyed after `call`
  std::unique_ptr<transport::Call> call;
  // What a TryCancel from another thread reaches (through a weak pointer).
  struct CancelTarget {
    transport::Call* call;
    runtime::EventLoop* loop;
  };
  std::shared_ptr<CancelTarget> alive;

  ~Impl() {
    if (cancel_state != nullptr) {
      MutexLock lock(&cancel_state->mu);
      // Only our own registration: a reused context may already carry the
      // next call's.
      const std::weak_ptr<void>& r = cancel_state->running;
      if (!r.owner_before(alive) && !alive.owner_before(r)) {
        cancel_state->running.reset();
        cancel_state->cancel_running = nullptr;
      }
    }
    if (alive) alive->call = nullptr;
    if (lease && !(*lease)->accepting_streams()) lease.Poison();
    call.reset();
  }
};

ClientCall::ClientCall(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ClientCall::~ClientCall() = default;

Task<Status> ClientCall::Write(std::string_view message) {
  return [](Task<absl::Status> t) -> Task<Status> {
    co_return Status::FromAbsl(co_await std::move(t));
  }(impl_->call->Write(message));
}
bool ClientCall::never_sent() const { return impl_->call->never_sent(); }
void ClientCall::WritesDone() { impl_->call->WritesDone(); }
Task<std::optional<std::string>> ClientCall::Read() { return impl_->call->Read(); }
void ClientCall::Cancel() { impl_->call->Cancel(); }

void ClientCall::Run(Task<void> task) {
  auto holder = std::make_shared<Task<void>>(std::move(task));
  runtime::EventLoop* loop = impl_->loop;
  loop->Post([loop, holder] { loop->Spawn(std::move(*holder)); });
}

bool ClientCall::OnItsThread() const { return runtime::EventLoop::Current() == impl_->loop; }
bool ClientCall::OnChannelThread() const { return impl_->channel->CurrentIndex().has_value(); }

Task<bool> ClientCall::ReadInitialMetadata() {
  co_await impl_->call->WaitForInitialMetadata();
  co_return PublishInitialMetadata();
}

bool ClientCall::PublishInitialMetadata() {
  if (!impl_->call->headers_received()) return false;
  internal::CallAccess::SetResults(*impl_->ctx, impl_->call->initial_metadata(), {},
                                   impl_->sc->record->name());
  return true;
}

Task<Status> ClientCall::Finish() {
  (void)co_await impl_->call->Finish();  // FinishNow() reads the status
  co_return FinishNow();
}

bool ClientCall::finished() const { return impl_->call->finished(); }

Status ClientCall::FinishNow() {
  internal::CallAccess::SetResults(*impl_->ctx, impl_->call->initial_metadata(),
                                   impl_->call->trailing_metadata(),
                                   impl_->sc->record->name());
  return Status::FromAbsl(*impl_->call->status(), impl_->call->status_details().value_or(""));
}

Status ClientCall::WriteNow(std::string_view message) {
  return Status::FromAbsl(impl_->call->Enqueue(message));
}

namespace internal {

// ---- opening a call: pick -> lease -> start the stream -> register cancel ----

namespace {

using channel::ChannelState;
using channel::Subchannel;
using channel::SubchannelLease;

// What one call's attempts to reach a stream share.
struct Attempt {
  ChannelState& st;
  size_t index;  // the CQ thread's
  runtime::EventLoop& loop;
  ClientContext* ctx;
  TimePoint deadline;  // TimePoint::max(): none
  std::shared_ptr<CancelState> cancel;
  int number = 0;
  absl::Status last;  // the latest failure, for the message of the final one
  std::shared_ptr<Subchannel> sc;
  std::optional<SubchannelLease> lease;
  Status failure;  // with Step::kFail
};

enum class Step { kLeased, kAgain, kFail };

Step Fail(Attempt& a, Status s) {
  a.failure = std::move(s);
  return Step::kFail;
}

// The call may still start: not cancelled, deadline not passed.
std::optional<Status> Ended(Attempt& a) {
  {
    MutexLock lock(&a.cancel->mu);
    if (a.cancel->cancelled) return Status(StatusCode::CANCELLED, "cancelled before the call started");
  }
  if (a.loop.Now() < a.deadline) return std::nullopt;
  return Status(StatusCode::DEADLINE_EXCEEDED,
                a.last.ok() ? std::string("deadline exceeded before a connection was ready")
                            : absl::StrCat("deadline exceeded waiting for a connection; last "
                                           "error: ",
                                           a.last.message()));
}

// The lease failed: another address, a wait (wait_for_ready) or the end.
Task<Step> OnLeaseFailed(Attempt& a, absl::Status error) {
  a.last = std::move(error);
  a.st.RequestReresolution();
  // The address just failed (its record is now TRANSIENT_FAILURE): like
  // gRPC's pickers, try another address before failing the call.
  if (a.number < channel::kMaxRepicks && a.st.AnotherUsable(a.index, a.sc)) co_return Step::kAgain;
  if (!a.ctx->wait_for_ready() || a.last.code() == absl::StatusCode::kFailedPrecondition) {
    co_return Fail(a, Status(StatusCode::UNAVAILABLE, std::string(a.last.message())));
  }
  // Wait for the address's backoff (shared by all threads) to allow a new
  // attempt, or a little while, within the deadline.
  TimePoint retry =
      std::max(a.sc->record->next_attempt(), a.loop.Now() + channel::kMinLeaseRetryDelay);
  co_await SleepUntil(a.loop, std::min(a.deadline, retry));
  co_return Step::kAgain;
}

// One round of pick -> lease. kLeased: a.sc and a.lease are set.
Task<Step> PickAndLease(Attempt& a) {
  if (std::optional<Status> ended = Ended(a)) co_return Fail(a, *ended);
  // Read before picking: once set, the list the pick sees is the
  // resolver's answer (resolved_once is set after the list).
  const bool resolved = a.st.resolved_once();
  a.sc = a.st.Pick(a.index);
  if (a.sc == nullptr) {
    a.last = a.st.NoAddressError();
    // Before the resolver's first answer every call waits (the channel is
    // not failing, just starting); after a resolver error only
    // wait_for_ready calls do.
    if (!a.ctx->wait_for_ready() && resolved) co_return Fail(a, Status::FromAbsl(a.last));
    co_await SleepUntil(a.loop, std::min(a.deadline, a.loop.Now() + channel::kNoAddressPoll));
    co_return Step::kAgain;
  }
  // The warm path: a connection this thread has, with a free stream. No
  // await, no timer.
  absl::StatusOr<SubchannelLease> lease = a.sc->pool.TryAcquire();
  if (!lease.ok()) {
    // While the address backs off (for every thread), fail fast (or wait,
    // if wait_for_ready): no dial, no waiting in the pool.
    if (absl::Status backoff = a.sc->record->CheckBackoff(a.loop.Now()); !backoff.ok()) {
      a.last = backoff;
      // Picked while another thread's dial was failing: another address
      // that is READY or connecting takes the call (a fail-fast call fails
      // only when there is none).
      if (a.number < channel::kMaxRepicks && a.st.AnotherUsable(a.index, a.sc)) {
        co_return Step::kAgain;
      }
      if (!a.ctx->wait_for_ready()) co_return Fail(a, Status::FromAbsl(backoff));
      co_await SleepUntil(a.loop, std::min(a.deadline, a.sc->record->next_attempt()));
      co_return Step::kAgain;
    }
    Duration left = a.deadline == TimePoint::max() ? Duration(std::chrono::hours(24 * 365))
                                                   : a.deadline - a.loop.Now();
    std::optional<absl::StatusOr<SubchannelLease>> waited =
        co_await runtime::WithTimeout<absl::StatusOr<SubchannelLease>>(
            a.loop, channel::Acquire(a.sc->pool), left);
    if (!waited) co_return Step::kAgain;  // the deadline check reports it
    lease = std::move(*waited);
  }
  if (!lease.ok() && a.sc->pool.closed() && a.number < channel::kMaxClosedPoolRepicks) {
    // A resolver update dropped this address after the pick (the fault
    // suite's flapping test): pick again once this thread has the new list.
    co_await SleepUntil(a.loop,
                        std::min(a.deadline, a.loop.Now() + channel::kClosedPoolRepickDelay));
    co_return Step::kAgain;
  }
  if (!lease.ok()) co_return co_await OnLeaseFailed(a, lease.status());
  a.lease = std::move(*lease);
  co_return Step::kLeased;
}

}  // namespace

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
      if (auto t = weak.lock(); t && t->call) t->call->Cancel();
    });
  };
}

Task<std::unique_ptr<ClientCall>> CallOpener::Open(
    std::shared_ptr<channel::ChannelState> self, const std::string& method, ClientContext* ctx,
    Status* out) {
  ChannelState& st = *self;
  if (ctx == nullptr) {
    *out = Status(StatusCode::INVALID_ARGUMENT, "the call's ClientContext is null");
    co_return nullptr;
  }
  if (!st.config_error().ok()) {
    *out = Status::FromAbsl(st.config_error());
    co_return nullptr;
  }
  std::optional<size_t> index = st.CurrentIndex();
  if (!index) {
    *out = Status(StatusCode::FAILED_PRECONDITION,
                  "Channel::Open/Unary must run on one of the channel's CQ threads "
                  "(use Spawn, the blocking or the callback API)");
    co_return nullptr;
  }
  runtime::EventLoop& loop = st.cq()->loop(*index);
  Attempt a{.st = st,
            .index = *index,
            .loop = loop,
            .ctx = ctx,
            .deadline = ctx->deadline() ? channel::ToLoopTime(*ctx->deadline(), loop.Now())
                                        : TimePoint::max(),
            .cancel = CallAccess::cancel(*ctx)};
  transport::Metadata md(CallAccess::metadata(*ctx).begin(), CallAccess::metadata(*ctx).end());
  for (;; ++a.number) {
    switch (co_await PickAndLease(a)) {
      case Step::kAgain: continue;
      case Step::kFail: *out = std::move(a.failure); co_return nullptr;
      case Step::kLeased: break;
    }
    SubchannelLease leased = std::move(*a.lease);
    a.lease.reset();
    absl::StatusOr<std::unique_ptr<transport::Call>> call = (*leased)->StartCall(
        {.path = method,
         .deadline = a.deadline == TimePoint::max() ? std::nullopt
                                                    : std::optional<TimePoint>(a.deadline),
         .metadata = md});
    if (!call.ok()) {
      a.last = call.status();
      if (call.status().code() == absl::StatusCode::kUnavailable &&
          a.number < channel::kMaxStartRetries) {
        leased.Poison();  // closed or draining: never lease it again
        continue;
      }
      *out = Status::FromAbsl(call.status());
      co_return nullptr;
    }
    auto impl = std::make_unique<ClientCall::Impl>();
    impl->channel = self;
    impl->loop = &loop;
    impl->ctx = ctx;
    impl->cancel_state = a.cancel;
    impl->sc = a.sc;
    impl->lease = std::move(leased);
    impl->call = std::move(*call);
    impl->alive = std::make_shared<ClientCall::Impl::CancelTarget>(
        ClientCall::Impl::CancelTarget{impl->call.get(), &loop});
    RegisterCancel(*impl);
    *out = Status();
    co_return std::unique_ptr<ClientCall>(new ClientCall(std::move(impl)));
  }
}

}  // namespace internal

// ---- Channel -----------------------------------------------------------------------

namespace {

class InsecureCredentials final : public ChannelCredentials {
 public:
  bool secure() const override { return false; }
};

class SslChannelCredentials final : public ChannelCredentials {
 public:
  explicit SslChannelCredentials(SslCredentialsOptions o) : options_(std::move(o)) {}
  bool secure() const override { return true; }
  const SslCredentialsOptions* ssl_options() const override { return &options_; }

 private:
  SslCredentialsOptions options_;
};

// The host part of an authority: "h:443" -> "h", "[::1]:443" -> "::1".
std::string AuthorityHost(const std::string& authority) {
  if (!authority.empty() && authority[0] == '[') {
    size_t close = authority.find(']');
    return authority.substr(1, close == std::string::npos ? std::string::npos : close - 1);
  }
  size_t colon = authority.rfind(':');
  return colon == std::string::npos ? authority : authority.substr(0, colon);
}

// Makes the channel's connections TLS: one SSL_CTX for all of them.
absl::Status ApplyCredentials(const ChannelCredentials* creds, channel::ChannelConfig& config) {
  if (creds == nullptr) {
    return absl::InvalidArgumentError("channel credentials are null");
  }
  if (!creds->secure()) return absl::OkStatus();
  const SslCredentialsOptions* ssl = creds->ssl_options();
  if (ssl == nullptr) {
    return absl::UnimplementedError("secure credentials other than SslCredentials()");
  }
  std::string name = config.ssl_target_name_override.value_or(
      AuthorityHost(config.connection.authority));
  absl::StatusOr<std::shared_ptr<const transport::TlsConfig>> tls = transport::MakeTlsConfig(
      {.root_certs = ssl->pem_root_certs,
       .private_key = ssl->pem_private_key,
       .cert_chain = ssl->pem_cert_chain},
      std::move(name));
  if (!tls.ok()) return tls.status();
  config.connection.tls = *tls;
  config.connection.scheme = "https";
  return absl::OkStatus();
}

// Holds the channel's state (not the Channel, which the caller may drop
// while this is queued): the call runs to its end and `done` runs once.
Task<void> RunUnary(std::shared_ptr<channel::ChannelState> state, std::string method,
                          ClientContext* ctx, std::string request, std::string* response,
                          std::function<void(Status)> done) {
  Status s = co_await internal::CallOpener::Unary(std::move(state), std::move(method), ctx,
                                                  std::move(request), response);
  done(std::move(s));
}

}  // namespace

std::shared_ptr<ChannelCredentials> InsecureChannelCredentials() {
  return std::make_shared<InsecureCredentials>();
}

std::shared_ptr<ChannelCredentials> SslCredentials(const SslCredentialsOptions& options) {
  return std::make_shared<SslChannelCredentials>(options);
}

Channel::Channel(std::shared_ptr<channel::ChannelState> state) : state_(std::move(state)) {}

// The state lives on while calls, queued tasks or streams hold it; the last
// of them shuts it down (ChannelState::~ChannelState).
Channel::~Channel() = default;

Status Channel::configuration_status() const { return Status::FromAbsl(state_->config_error()); }

Task<std::unique_ptr<ClientCall>> Channel::Open(std::string method, ClientContext* ctx,
                                                      Status* status) {
  return internal::CallOpener::OpenHolding(state_, std::move(method), ctx, status);
}

Task<Status> Channel::Unary(std::string method, ClientContext* ctx, std::string request,
                                  std::string* response) {
  return internal::CallOpener::Unary(state_, std::move(method), ctx, std::move(request),
                                     response);
}

namespace internal {

Task<Status> CallOpener::Unary(std::shared_ptr<channel::ChannelState> self,
                                     std::string method, ClientContext* ctx, std::string request,
                                     std::string* response) {
  if (response == nullptr) {
    co_return Status(StatusCode::INVALID_ARGUMENT, "the unary call's response pointer is null");
  }
  // gRFC A6: a call the server never processed (GOAWAY above its stream,
  // REFUSED_STREAM) is sent again once, transparently, on another
  // connection, within the same deadline.
  for (int attempt = 0;; ++attempt) {
    Status st;
    std::unique_ptr<ClientCall> call = co_await Open(self, method, ctx, &st);
    if (call == nullptr) co_return st;
    Status w = call->WriteNow(request);  // one message: no need to wait for room
    (void)w;  // a failed write ends the call: Finish reports why
    call->WritesDone();
    std::optional<std::string> reply = co_await call->Read();
    // (No co_await inside ?: — GCC 12 mishandles the temporaries there.)
    Status s;
    if (call->finished()) {
      s = call->FinishNow();
    } else {
      s = co_await call->Finish();
    }
    if (!s.ok() && call->never_sent() && attempt == 0) {
      self->CountTransparentRetry();
      continue;
    }
    if (s.ok()) {
      if (!reply) {
        co_return Status(StatusCode::INTERNAL,
                         "the server ended a unary call OK without a response message");
      }
      *response = std::move(*reply);
    }
    co_return s;
  }
}

}  // namespace internal

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
                  absl::StrCat("SpawnOn: CQ thread ", cq_thread, " does not exist (the channel has ",
                               state_->cq()->size(), ")"));
  }
  state_->SpawnOn(cq_thread, std::move(task));
  return Status::OK;
}

size_t Channel::cq_thread_count() const { return state_->cq() ? state_->cq()->size() : 0; }

void Channel::UnaryCallAsync(const std::string& method, ClientContext* ctx, std::string request,
                             std::string* response, std::function<void(Status)> done) {
  if (!state_->config_error().ok() && !state_->cq()) {
    done(Status::FromAbsl(state_->config_error()));  // no thread to run it on
    return;
  }
  state_->Spawn(RunUnary(state_, method, ctx, std::move(request), response, std::move(done)));
}

std::unique_ptr<ClientCall> Channel::BlockingOpen(const std::string& method, ClientContext* ctx,
                                                  Status* status) {
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
  std::promise<std::unique_ptr<ClientCall>> promise;
  auto result = promise.get_future();
  state_->Spawn([](std::shared_ptr<channel::ChannelState> st, std::string method,
                   ClientContext* ctx, Status* status,
                   std::promise<std::unique_ptr<ClientCall>>* out) -> Task<void> {
    out->set_value(co_await internal::CallOpener::Open(std::move(st), method, ctx, status));
  }(state_, method, ctx, status, &promise));
  return result.get();
}

Status Channel::BlockingUnaryCall(const std::string& method, ClientContext* ctx,
                                  const std::string& request, std::string* response) {
  if (!state_->config_error().ok()) return Status::FromAbsl(state_->config_error());
  if (state_->CurrentIndex()) {
    return Status(StatusCode::FAILED_PRECONDITION,
                  "a blocking call on one of the channel's own CQ threads would deadlock; "
                  "use the coroutine or callback API there");
  }
  std::promise<Status> promise;
  std::future<Status> result = promise.get_future();
  UnaryCallAsync(method, ctx, request, response,
                 [&promise](Status s) { promise.set_value(std::move(s)); });
  return result.get();
}

static ConnectivityState Public(channel::ConnectivityState s) {
  switch (s) {
    case channel::ConnectivityState::kIdle: return ConnectivityState::IDLE;
    case channel::ConnectivityState::kConnecting: return ConnectivityState::CONNECTING;
    case channel::ConnectivityState::kReady: return ConnectivityState::READY;
    case channel::ConnectivityState::kTransientFailure:
      return ConnectivityState::TRANSIENT_FAILURE;
    case channel::ConnectivityState::kShutdown: return ConnectivityState::SHUTDOWN;
  }
  return ConnectivityState::SHUTDOWN;
}

ConnectivityState Channel::GetState(bool try_to_connect) {
  if (!state_->config_error().ok()) return ConnectivityState::TRANSIENT_FAILURE;
  channel::ConnectivityState s = state_->Aggregate();
  if (s == channel::ConnectivityState::kIdle && try_to_connect) {
    auto st = state_;
    Spawn([](std::shared_ptr<channel::ChannelState> st) -> Task<void> {
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
  const TimePoint now = Clock::now();
  const TimePoint until = channel::ToLoopTime(deadline, now);
  for (;;) {
    if (Public(state_->Aggregate()) != last) return true;
    // Address records are shared between channels and change on any CQ
    // thread: the state is polled every 10 ms.
    const TimePoint t = Clock::now();
    if (t >= until) return false;
    std::this_thread::sleep_for(std::min<Duration>(until - t, std::chrono::milliseconds(10)));
  }
}

bool Channel::WaitForConnected(std::chrono::system_clock::time_point deadline) {
  // On one of the channel's CQ threads: whether it is READY now, without
  // waiting (the connection would be made by the very thread waiting).
  if (state_->CurrentIndex()) return GetState(true) == ConnectivityState::READY;
  for (;;) {
    // Asked again every 50 ms: before the resolver's first answer there is
    // nothing to connect yet, and a failed attempt leaves the state as it was.
    ConnectivityState s = GetState(true);
    if (s == ConnectivityState::READY) return true;
    auto now = std::chrono::system_clock::now();
    if (now >= deadline) return false;
    WaitForStateChange(s, std::min(deadline, now + std::chrono::milliseconds(50)));
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
      absl::StrAppend(&out, "ringrpc_connections_retired_total{address=\"", address,
                      "\",reason=\"",
                      std::string(pool::RetireReasonName(static_cast<pool::RetireReason>(i))),
                      "\"} ", m.retired[i], "\n");
    }
  }
  absl::StrAppend(&out,
                  "# HELP ringrpc_transparent_retries_total Unary calls the server never "
                  "processed, sent again (gRFC A6).\n"
                  "# TYPE ringrpc_transparent_retries_total counter\n"
                  "ringrpc_transparent_retries_total ",
                  state_->transparent_retries(), "\n");
  return out;
}

// ---- creation ------------------------------------------------------------------------

std::shared_ptr<Channel> CreateChannel(const std::string& target,
                                       const std::shared_ptr<ChannelCredentials>& creds) {
  return CreateCustomChannel(target, creds, ChannelArguments());
}

std::shared_ptr<Channel> CreateCustomChannel(const std::string& target,
                                             const std::shared_ptr<ChannelCredentials>& creds,
                                             const ChannelArguments& args) {
  std::shared_ptr<channel::ChannelState> state = channel::ChannelState::Create(args);
  std::shared_ptr<Channel> channel(new Channel(state));
  if (!state->config_error().ok()) return channel;
  absl::StatusOr<channel::Target> t = channel::ParseTarget(target);
  if (!t.ok()) {
    state->Fail(t.status());
    return channel;
  }
  if (!args.values().count("grpc.default_authority")) {
    state->mutable_config().connection.authority = t->authority;
  }
  if (absl::Status s = ApplyCredentials(creds.get(), state->mutable_config()); !s.ok()) {
    state->Fail(s);
    return channel;
  }
  std::shared_ptr<Resolver> resolver;
  if (t->kind == channel::Target::Kind::kStatic) {
    resolver = std::make_shared<channel::StaticResolver>(t->addresses);
  } else {
    resolver = std::make_shared<channel::DnsResolver>(
        t->host, t->port, state->config().dns_min_time_between_resolutions);
  }
  channel::ChannelState::Start(state, std::move(resolver));
  return channel;
}

std::shared_ptr<Channel> CreateChannelWithResolver(const std::string& authority,
                                                   std::shared_ptr<Resolver> resolver,
                                                   const ChannelArguments& args) {
  std::shared_ptr<channel::ChannelState> state = channel::ChannelState::Create(args);
  std::shared_ptr<Channel> channel(new Channel(state));
  if (!state->config_error().ok()) return channel;
  if (!args.values().count("grpc.default_authority")) {
    state->mutable_config().connection.authority = authority;
  }
  channel::ChannelState::Start(state, std::move(resolver));
  return channel;
}

Status ValidateChannelArguments(const ChannelArguments& args) {
  return Status::FromAbsl(channel::ParseChannelArguments(args).status());
}

}  // namespace ringrpc
