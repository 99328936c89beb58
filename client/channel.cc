#include "client/channel.h"

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/channel/channel_config.h"
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
using runtime::CqThreads;
using runtime::EventLoop;
using std::chrono::milliseconds;

std::shared_ptr<CqThreads> SharedCqThreads(absl::Status* error) {
  static std::mutex mu;
  static std::weak_ptr<CqThreads> shared;
  std::lock_guard<std::mutex> lock(mu);
  if (auto cq = shared.lock()) return cq;
  absl::StatusOr<std::unique_ptr<CqThreads>> cq = CqThreads::Start({});
  if (!cq.ok()) {
    *error = cq.status();
    return nullptr;
  }
  std::shared_ptr<CqThreads> made(std::move(*cq));
  shared = made;
  return made;
}

}  // namespace

// Saturating: any deadline at or before now (time_point::min() included)
// is "now" (the call ends DEADLINE_EXCEEDED at once); more than a year
// ahead (time_point::max() included) is no deadline. No subtraction of two
// arbitrary time points, so nothing overflows.
// How many times one call may pick another address after the picked one
// failed or was backing off, before it reports the failure.
constexpr int kMaxRepicks = 8;

TimePoint ToLoopTime(std::chrono::system_clock::time_point deadline, TimePoint now) {
  const auto wall = std::chrono::system_clock::now();
  if (deadline <= wall) return now;
  constexpr auto kFar = std::chrono::hours(24 * 365);
  if (deadline - wall > kFar) return TimePoint::max();  // deadline > wall: no overflow
  return now + std::chrono::duration_cast<Duration>(deadline - wall);
}

namespace {

}  // namespace

// The channel's core. Lives as long as the user's Channel handle or any
// call, queued task or stream that runs on it (each holds a shared_ptr), so
// a Channel destroyed with calls queued or in flight lets them finish, as
// grpc++ does; the last holder, on whatever thread, shuts it down.
struct ChannelState : std::enable_shared_from_this<ChannelState> {
  ~ChannelState();

  absl::Status config_error;
  ChannelConfig config;
  std::shared_ptr<CqThreads> cq;
  std::shared_ptr<Resolver> resolver;
  std::shared_ptr<SubchannelEventListener> listener;

  mutable std::mutex mu;
  std::condition_variable state_cv;
  std::vector<std::shared_ptr<Subchannel>> list;  // current addresses, in order
  std::vector<SubchannelPool> removed;  // pools of addresses gone, draining
  pool::PoolMetrics gone_metrics;  // of removed subchannels already dropped
  absl::Status resolver_error = absl::UnavailableError("no addresses resolved yet");
  std::atomic<uint64_t> version{0};
  std::atomic<bool> resolved_once{false};  // the resolver has answered
  std::atomic<uint64_t> transparent_retries{0};  // unary calls sent again (A6)
  uint64_t seed = 0x5eed;

  // Each CQ thread's view of the address list and its round-robin cursor;
  // touched only by that thread.
  struct alignas(64) PerThread {
    uint64_t version = ~uint64_t{0};
    std::vector<std::shared_ptr<Subchannel>> list;
    size_t next = 0;
  };
  std::vector<PerThread> per_thread;

  // ---- threads ----------------------------------------------------------------

  // The CQ thread index of the calling thread, if it is one of ours.
  std::optional<size_t> CurrentIndex() const {
    EventLoop* loop = EventLoop::Current();
    if (loop == nullptr || cq == nullptr) return std::nullopt;
    size_t i = loop->cq_index();
    if (i < cq->size() && &cq->loop(i) == loop) return i;
    return std::nullopt;
  }
  // A foreign caller keeps to one CQ thread (its connections stay warm).
  size_t IndexForCaller() const {
    return std::hash<std::thread::id>()(std::this_thread::get_id()) % cq->size();
  }
  void PostToAll(std::function<void()> fn) {
    for (size_t i = 0; i < cq->size(); ++i) cq->Post(i, fn);
  }

  // ---- resolver updates ---------------------------------------------------------

  void OnResolverUpdate(absl::StatusOr<AddressList> update) {
    struct MarkResolved {
      std::atomic<bool>& flag;
      ~MarkResolved() { flag.store(true, std::memory_order_release); }
    } mark{resolved_once};
    if (!update.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      resolver_error = update.status();
      state_cv.notify_all();
      return;
    }
    std::vector<std::string> names;
    for (const auto& a : *update) names.push_back(a.ToString());
    std::vector<std::shared_ptr<Subchannel>> kept, gone, fresh;
    bool first;
    {
      std::lock_guard<std::mutex> lock(mu);
      resolver_error = update->empty()
                           ? absl::UnavailableError("the resolver returned no addresses")
                           : absl::OkStatus();
      std::set<std::string> now(names.begin(), names.end()), before;
      for (auto& sc : list) before.insert(sc->record->name());
      if (now == before) return;  // same set: nothing to bump
      first = list.empty() && removed.empty();
      for (size_t i = 0; i < update->size(); ++i) {
        auto it = std::find_if(list.begin(), list.end(),
                               [&](auto& sc) { return sc->record->name() == names[i]; });
        if (it != list.end()) {
          fresh.push_back(*it);
          kept.push_back(*it);
          continue;
        }
        absl::StatusOr<std::shared_ptr<Subchannel>> sc = SubchannelRegistry::Global().Attach(
            (*update)[i], config, *cq, config.use_local_subchannel_pool, seed++, listener);
        if (!sc.ok()) continue;  // config was validated: cannot happen
        fresh.push_back(*sc);
      }
      for (auto& sc : list) {
        if (std::find(fresh.begin(), fresh.end(), sc) == fresh.end()) gone.push_back(sc);
      }
      list = fresh;
      // Subchannels removed earlier whose connections are all gone: keep
      // their counters, drop them (a flapping resolver must not grow this).
      std::erase_if(removed, [&](const SubchannelPool& p) {
        pool::PoolMetrics m = p.Metrics();
        if (m.live != 0 || m.leases != 0 || m.parked != 0) return false;
        gone_metrics += m;
        return true;
      });
      for (auto& sc : gone) removed.push_back(sc->pool);
      version.fetch_add(1, std::memory_order_acq_rel);
      state_cv.notify_all();
    }
    if (first) return;
    // The address set changed: bump the generation of what stays, close
    // what went. Each CQ thread then retires its own stale idle connections
    // (nobody touches another thread's shard); leased ones go when their
    // calls end.
    for (auto& sc : kept) sc->pool.Invalidate();
    PostToAll([kept] {
      for (auto& sc : kept) sc->pool.ReapLocalShard();
    });
    // The last channel to let go of an address closes its pool.
    for (auto& sc : gone) SubchannelRegistry::Global().Detach(sc, *cq, listener);
  }

  // ---- picking ------------------------------------------------------------------

  std::shared_ptr<Subchannel> Pick(size_t thread) {
    PerThread& pt = per_thread[thread];
    uint64_t v = version.load(std::memory_order_acquire);
    if (pt.version != v) {
      std::lock_guard<std::mutex> lock(mu);
      pt.list = list;
      pt.version = version.load(std::memory_order_acquire);
    }
    size_t n = pt.list.size();
    if (n == 0) return nullptr;
    // pick_first: the first READY address if there is one; else the first
    // that is not failing (IDLE or CONNECTING: a call there waits for the
    // dial); else the first (the call learns why it fails). Records are
    // shared by every thread, so READY means some thread has a connection.
    auto ready = [](const std::shared_ptr<Subchannel>& sc) {
      return sc->record->state() == ConnectivityState::kReady;
    };
    auto usable = [](const std::shared_ptr<Subchannel>& sc) {
      return sc->record->state() != ConnectivityState::kTransientFailure;
    };
    if (config.lb_policy == LbPolicy::kPickFirst) {
      for (auto& sc : pt.list) {
        if (ready(sc)) return sc;
      }
      for (auto& sc : pt.list) {
        if (usable(sc)) return sc;
      }
      return pt.list[0];
    }
    // round_robin rotates over every address that is not failing: ours
    // connect lazily, per thread, so an IDLE address is one this rotation
    // is about to connect (gRPC's connects all eagerly, then rotates over
    // READY ones). A pick that meets another thread's backoff picks again
    // (Open).
    for (size_t k = 0; k < n; ++k) {
      size_t i = (pt.next + k) % n;
      if (usable(pt.list[i])) {
        pt.next = (i + 1) % n;
        return pt.list[i];
      }
    }
    return pt.list[pt.next++ % n];
  }

  // Whether thread `thread`'s list has an address other than `sc` that is
  // not in TRANSIENT_FAILURE.
  bool AnotherUsable(size_t thread, const std::shared_ptr<Subchannel>& sc) const {
    for (const auto& other : per_thread[thread].list) {
      if (other != sc && other->record->state() != ConnectivityState::kTransientFailure) {
        return true;
      }
    }
    return false;
  }

  absl::Status NoAddressError() {
    std::lock_guard<std::mutex> lock(mu);
    return absl::UnavailableError(absl::StrCat("no address to call: ", resolver_error.message()));
  }

  ConnectivityState Aggregate() {
    std::lock_guard<std::mutex> lock(mu);
    if (list.empty()) {
      return resolver_error.ok() || resolver_error.message() == "no addresses resolved yet"
                 ? ConnectivityState::kIdle
                 : ConnectivityState::kTransientFailure;
    }
    bool connecting = false, idle = false;
    for (auto& sc : list) {
      switch (sc->record->state()) {
        case ConnectivityState::kReady: return ConnectivityState::kReady;
        case ConnectivityState::kConnecting: connecting = true; break;
        case ConnectivityState::kIdle: idle = true; break;
        default: break;
      }
    }
    if (connecting) return ConnectivityState::kConnecting;
    if (idle) return ConnectivityState::kIdle;
    return ConnectivityState::kTransientFailure;
  }

  // ---- opening a call ---------------------------------------------------------------

  static pool::Task<absl::StatusOr<SubchannelLease>> Acquire(SubchannelPool p) {
    co_return co_await p.Acquire();
  }

  // `method` must outlive the task (callers await it at once).
  pool::Task<std::unique_ptr<ClientCall>> Open(const std::string& method, ClientContext* ctx,
                                               Status* out);

  // A unary call; the task holds the channel.
  static pool::Task<Status> Unary(std::shared_ptr<ChannelState> self, std::string method,
                                  ClientContext* ctx, std::string request,
                                  std::string* response);
  static pool::Task<std::unique_ptr<ClientCall>> OpenHolding(std::shared_ptr<ChannelState> self,
                                                             std::string method,
                                                             ClientContext* ctx, Status* out) {
    co_return co_await self->Open(method, ctx, out);
  }

  // Runs `task` on CQ thread `i` (< cq->size()). Any thread.
  void SpawnOn(size_t i, pool::Task<void> task) {
    auto holder = std::make_shared<pool::Task<void>>(std::move(task));
    runtime::EventLoop* loop = &cq->loop(i);
    cq->Post(i, [loop, holder] { loop->Spawn(std::move(*holder)); });
  }
  // On the calling CQ thread if it is one of ours, else the caller's own.
  void Spawn(pool::Task<void> task) {
    std::optional<size_t> here = CurrentIndex();
    SpawnOn(here ? *here : IndexForCaller(), std::move(task));
  }
};

ChannelState::~ChannelState() {
  if (resolver) resolver->Shutdown();
  if (!cq) return;
  // Detach: a subchannel no other channel uses closes its pool (each CQ
  // thread its own shard). Nothing here waits: this may run on a CQ thread
  // (a call's end released the last reference) or the resolver's.
  for (auto& sc : list) SubchannelRegistry::Global().Detach(sc, *cq, listener);
}

}  // namespace channel

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
      std::lock_guard<std::mutex> lock(cancel_state->mu);
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

pool::Task<Status> ClientCall::Write(std::string_view message) {
  return [](pool::Task<absl::Status> t) -> pool::Task<Status> {
    co_return Status::FromAbsl(co_await std::move(t));
  }(impl_->call->Write(message));
}
bool ClientCall::never_sent() const { return impl_->call->never_sent(); }
void ClientCall::WritesDone() { impl_->call->WritesDone(); }
pool::Task<std::optional<std::string>> ClientCall::Read() { return impl_->call->Read(); }
void ClientCall::Cancel() { impl_->call->Cancel(); }

void ClientCall::Run(pool::Task<void> task) {
  auto holder = std::make_shared<pool::Task<void>>(std::move(task));
  runtime::EventLoop* loop = impl_->loop;
  loop->Post([loop, holder] { loop->Spawn(std::move(*holder)); });
}

bool ClientCall::OnItsThread() const { return runtime::EventLoop::Current() == impl_->loop; }
bool ClientCall::OnChannelThread() const { return impl_->channel->CurrentIndex().has_value(); }

pool::Task<bool> ClientCall::ReadInitialMetadata() {
  co_await impl_->call->WaitForInitialMetadata();
  co_return PublishInitialMetadata();
}

bool ClientCall::PublishInitialMetadata() {
  if (!impl_->call->headers_received()) return false;
  internal::CallAccess::SetResults(*impl_->ctx, impl_->call->initial_metadata(), {},
                                   impl_->sc->record->name());
  return true;
}

pool::Task<Status> ClientCall::Finish() {
  co_await impl_->call->Finish();
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

namespace channel {

pool::Task<std::unique_ptr<ClientCall>> ChannelState::Open(const std::string& method,
                                                            ClientContext* ctx, Status* out) {
  if (!config_error.ok()) {
    *out = Status::FromAbsl(config_error);
    co_return nullptr;
  }
  std::optional<size_t> index = CurrentIndex();
  if (!index) {
    *out = Status(StatusCode::FAILED_PRECONDITION,
                  "Channel::Open/Unary must run on one of the channel's CQ threads "
                  "(use Spawn, the blocking or the callback API)");
    co_return nullptr;
  }
  EventLoop& loop = cq->loop(*index);
  const TimePoint deadline =
      ctx->deadline() ? ToLoopTime(*ctx->deadline(), loop.Now()) : TimePoint::max();
  auto cancel_state = internal::CallAccess::cancel(*ctx);
  transport::Metadata md(internal::CallAccess::metadata(*ctx).begin(),
                         internal::CallAccess::metadata(*ctx).end());
  absl::Status last = absl::OkStatus();
  for (int attempt = 0;; ++attempt) {
    {
      std::lock_guard<std::mutex> lock(cancel_state->mu);
      if (cancel_state->cancelled) {
        *out = Status(StatusCode::CANCELLED, "cancelled before the call started");
        co_return nullptr;
      }
    }
    if (loop.Now() >= deadline) {
      *out = Status(StatusCode::DEADLINE_EXCEEDED,
                    last.ok() ? std::string("deadline exceeded before a connection was ready")
                              : absl::StrCat("deadline exceeded waiting for a connection; last "
                                             "error: ", last.message()));
      co_return nullptr;
    }
    // Read before picking: once set, the list the pick sees is the
    // resolver's answer (resolved_once is set after the list).
    const bool resolved = resolved_once.load(std::memory_order_acquire);
    std::shared_ptr<Subchannel> sc = Pick(*index);
    if (sc == nullptr) {
      last = NoAddressError();
      // Before the resolver's first answer every call waits (the channel is
      // not failing, just starting); after a resolver error only
      // wait_for_ready calls do.
      if (!ctx->wait_for_ready() && resolved) {
        *out = Status::FromAbsl(last);
        co_return nullptr;
      }
      co_await pool::SleepUntil(loop, std::min(deadline, loop.Now() + milliseconds(20)));
      continue;
    }
    // The warm path: a connection this thread has, with a free stream. No
    // await, no timer.
    std::optional<absl::StatusOr<SubchannelLease>> lease = sc->pool.TryAcquire();
    if (!lease->ok()) {
      // While the address backs off (for every thread), fail fast (or wait,
      // if wait_for_ready): no dial, no waiting in the pool.
      if (absl::Status backoff = sc->record->CheckBackoff(loop.Now()); !backoff.ok()) {
        last = backoff;
        // Picked while another thread's dial was failing: another address
        // that is READY or connecting takes the call (a fail-fast call
        // fails only when there is none).
        if (attempt < kMaxRepicks && AnotherUsable(*index, sc)) continue;
        if (!ctx->wait_for_ready()) {
          *out = Status::FromAbsl(backoff);
          co_return nullptr;
        }
        co_await pool::SleepUntil(loop, std::min(deadline, sc->record->next_attempt()));
        continue;
      }
      Duration left = deadline == TimePoint::max() ? Duration(std::chrono::hours(24 * 365))
                                                   : deadline - loop.Now();
      lease = co_await runtime::WithTimeout<absl::StatusOr<SubchannelLease>>(
          loop, Acquire(sc->pool), left);
      if (!lease) continue;  // the deadline check above reports it
    }
    if (!lease->ok() && sc->pool.closed() && attempt < 100) {
      // A resolver update dropped this address after the pick (the fault
      // suite's flapping test): pick again once this thread has the new list.
      co_await pool::SleepUntil(loop, std::min(deadline, loop.Now() + milliseconds(1)));
      continue;
    }
    if (!lease->ok()) {
      last = lease->status();
      resolver->RequestReresolution();
      // The address just failed (its record is now TRANSIENT_FAILURE): like
      // gRPC's pickers, try another address before failing the call.
      if (attempt < kMaxRepicks && AnotherUsable(*index, sc)) continue;
      if (!ctx->wait_for_ready() || last.code() == absl::StatusCode::kFailedPrecondition) {
        *out = Status(StatusCode::UNAVAILABLE, std::string(last.message()));
        co_return nullptr;
      }
      // Wait for the address's backoff (shared by all threads) to allow a
      // new attempt, or a little while, within the deadline.
      TimePoint retry = std::max(sc->record->next_attempt(), loop.Now() + milliseconds(5));
      co_await pool::SleepUntil(loop, std::min(deadline, retry));
      continue;
    }
    SubchannelLease leased = std::move(**lease);
    absl::StatusOr<std::unique_ptr<transport::Call>> call =
        (*leased)->StartCall({.path = method,
                              .deadline = deadline == TimePoint::max()
                                              ? std::nullopt
                                              : std::optional<TimePoint>(deadline),
                              .metadata = md});
    if (!call.ok()) {
      last = call.status();
      if (call.status().code() == absl::StatusCode::kUnavailable && attempt < 4) {
        leased.Poison();  // closed or draining: never lease it again
        continue;
      }
      *out = Status::FromAbsl(call.status());
      co_return nullptr;
    }
    auto impl = std::make_unique<ClientCall::Impl>();
    impl->channel = shared_from_this();
    impl->loop = &loop;
    impl->ctx = ctx;
    impl->cancel_state = cancel_state;
    impl->sc = sc;
    impl->lease = std::move(leased);
    impl->call = std::move(*call);
    impl->alive = std::make_shared<ClientCall::Impl::CancelTarget>(
        ClientCall::Impl::CancelTarget{impl->call.get(), &loop});
    {
      std::lock_guard<std::mutex> lock(cancel_state->mu);
      if (cancel_state->cancelled) {
        impl->call->Cancel();
      } else {
        cancel_state->running = impl->alive;
        cancel_state->cancel_running = [](const std::shared_ptr<void>& running) {
          auto target = std::static_pointer_cast<ClientCall::Impl::CancelTarget>(running);
          std::weak_ptr<ClientCall::Impl::CancelTarget> weak = target;
          target->loop->Post([weak] {
            if (auto t = weak.lock(); t && t->call) t->call->Cancel();
          });
        };
      }
    }
    *out = Status();
    co_return std::unique_ptr<ClientCall>(new ClientCall(std::move(impl)));
  }
}

}  // namespace channel

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
pool::Task<void> RunUnary(std::shared_ptr<channel::ChannelState> state, std::string method,
                          ClientContext* ctx, std::string request, std::string* response,
                          std::function<void(Status)> done) {
  Status s = co_await channel::ChannelState::Unary(std::move(state), std::move(method), ctx,
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

Status Channel::configuration_status() const { return Status::FromAbsl(state_->config_error); }

pool::Task<std::unique_ptr<ClientCall>> Channel::Open(std::string method, ClientContext* ctx,
                                                      Status* status) {
  return channel::ChannelState::OpenHolding(state_, std::move(method), ctx, status);
}

pool::Task<Status> Channel::Unary(std::string method, ClientContext* ctx, std::string request,
                                  std::string* response) {
  return channel::ChannelState::Unary(state_, std::move(method), ctx, std::move(request),
                                      response);
}

namespace channel {

pool::Task<Status> ChannelState::Unary(std::shared_ptr<ChannelState> self, std::string method,
                                       ClientContext* ctx, std::string request,
                                       std::string* response) {
  // gRFC A6: a call the server never processed (GOAWAY above its stream,
  // REFUSED_STREAM) is sent again once, transparently, on another
  // connection, within the same deadline.
  for (int attempt = 0;; ++attempt) {
    Status st;
    std::unique_ptr<ClientCall> call = co_await self->Open(method, ctx, &st);
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
      self->transparent_retries.fetch_add(1, std::memory_order_relaxed);
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

}  // namespace channel

void Channel::Spawn(pool::Task<void> task) {
  if (!state_->cq) return;  // the CQ threads could not start: nothing can run
  state_->Spawn(std::move(task));
}

Status Channel::SpawnOn(size_t cq_thread, pool::Task<void> task) {
  if (!state_->cq) {
    return Status::FromAbsl(state_->config_error.ok()
                                ? absl::UnavailableError("the channel has no CQ threads")
                                : state_->config_error);
  }
  if (cq_thread >= state_->cq->size()) {
    return Status(StatusCode::INVALID_ARGUMENT,
                  absl::StrCat("SpawnOn: CQ thread ", cq_thread, " does not exist (the channel has ",
                               state_->cq->size(), ")"));
  }
  state_->SpawnOn(cq_thread, std::move(task));
  return Status::OK;
}

size_t Channel::cq_thread_count() const { return state_->cq ? state_->cq->size() : 0; }

void Channel::UnaryCallAsync(const std::string& method, ClientContext* ctx, std::string request,
                             std::string* response, std::function<void(Status)> done) {
  if (!state_->config_error.ok() && !state_->cq) {
    done(Status::FromAbsl(state_->config_error));  // no thread to run it on
    return;
  }
  state_->Spawn(RunUnary(state_, method, ctx, std::move(request), response, std::move(done)));
}

std::unique_ptr<ClientCall> Channel::BlockingOpen(const std::string& method, ClientContext* ctx,
                                                  Status* status) {
  if (!state_->config_error.ok()) {
    *status = Status::FromAbsl(state_->config_error);
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
                   std::promise<std::unique_ptr<ClientCall>>* out) -> pool::Task<void> {
    out->set_value(co_await st->Open(method, ctx, status));
  }(state_, method, ctx, status, &promise));
  return result.get();
}

Status Channel::BlockingUnaryCall(const std::string& method, ClientContext* ctx,
                                  const std::string& request, std::string* response) {
  if (!state_->config_error.ok()) return Status::FromAbsl(state_->config_error);
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
  return static_cast<ConnectivityState>(static_cast<int>(s));
}

ConnectivityState Channel::GetState(bool try_to_connect) {
  if (!state_->config_error.ok()) return ConnectivityState::TRANSIENT_FAILURE;
  channel::ConnectivityState s = state_->Aggregate();
  if (s == channel::ConnectivityState::kIdle && try_to_connect) {
    auto st = state_;
    Spawn([](std::shared_ptr<channel::ChannelState> st) -> pool::Task<void> {
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
  std::unique_lock<std::mutex> lock(state_->mu);
  // Through ToLoopTime: saturating, so min()/max() do not overflow.
  const pool::TimePoint loop_now = pool::Clock::now();
  const pool::TimePoint loop_deadline = channel::ToLoopTime(deadline, loop_now);
  auto steady_deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          loop_deadline == pool::TimePoint::max() ? pool::Duration(std::chrono::hours(24 * 365))
                                            : loop_deadline - loop_now);
  for (;;) {
    lock.unlock();
    bool changed = Public(state_->Aggregate()) != last;
    lock.lock();
    if (changed) return true;
    // Records are shared between channels, so state changes are polled
    // (every 10 ms) as well as signalled by resolver updates.
    auto wake = std::min(steady_deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(10));
    if (state_->state_cv.wait_until(lock, wake) == std::cv_status::timeout &&
        std::chrono::steady_clock::now() >= steady_deadline) {
      lock.unlock();
      bool c = Public(state_->Aggregate()) != last;
      lock.lock();
      return c;
    }
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

void Channel::Invalidate() {
  std::vector<std::shared_ptr<channel::Subchannel>> all;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    all = state_->list;
  }
  for (auto& sc : all) sc->pool.Invalidate();
  if (state_->cq) {
    state_->PostToAll([all] {
      for (auto& sc : all) sc->pool.ReapLocalShard();
    });
  }
}

pool::PoolMetrics Channel::Metrics() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  pool::PoolMetrics sum = state_->gone_metrics;
  auto add = [&](const std::shared_ptr<channel::Subchannel>& sc) { sum += sc->pool.Metrics(); };
  for (auto& sc : state_->list) add(sc);
  for (auto& p : state_->removed) sum += p.Metrics();
  return sum;
}

std::string Channel::MetricsText() const {
  std::vector<std::pair<std::string, pool::PoolMetrics>> rows;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    for (auto& sc : state_->list) rows.emplace_back(sc->record->name(), sc->pool.Metrics());
  }
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
                  state_->transparent_retries.load(std::memory_order_relaxed), "\n");
  return out;
}

// ---- creation ------------------------------------------------------------------------

namespace {

std::shared_ptr<channel::ChannelState> NewState(const ChannelArguments& args) {
  auto state = std::make_shared<channel::ChannelState>();
  absl::StatusOr<channel::ChannelConfig> config = channel::ParseChannelArguments(args);
  if (!config.ok()) {
    state->config_error = config.status();
    // Still CQ threads (the process-wide ones): callbacks and reactors learn
    // of the error there, as they would of any other, never inside the
    // call that started them.
    absl::Status ignored;
    state->cq = channel::SharedCqThreads(&ignored);
    if (state->cq) state->per_thread.resize(state->cq->size());
    return state;
  }
  state->config = *config;
  state->listener = args.subchannel_event_listener();
  if (config->cq_threads == 0 && !config->poller) {
    state->cq = channel::SharedCqThreads(&state->config_error);
  } else {
    absl::StatusOr<std::unique_ptr<runtime::CqThreads>> cq =
        runtime::CqThreads::Start({.threads = config->cq_threads, .backend = config->poller});
    if (cq.ok()) {
      state->cq = std::move(*cq);
    } else {
      state->config_error = cq.status();
    }
  }
  if (state->cq) state->per_thread.resize(state->cq->size());
  return state;
}

void StartResolver(const std::shared_ptr<channel::ChannelState>& state,
                   std::shared_ptr<channel::Resolver> resolver) {
  state->resolver = std::move(resolver);
  std::weak_ptr<channel::ChannelState> weak = state;
  state->resolver->Start([weak](absl::StatusOr<channel::AddressList> update) {
    std::shared_ptr<channel::ChannelState> s = weak.lock();
    if (!s) return;
    s->OnResolverUpdate(std::move(update));
    // Never let the channel's last reference go here: its destructor shuts
    // this resolver down, which cannot be done from inside its own callback
    // (the DNS thread would join itself, a manual resolver re-lock its
    // mutex). A CQ thread lets go of it instead.
    runtime::CqThreads* cq = s->cq.get();
    cq->Post(0, [s = std::move(s)] {});
  });
}

}  // namespace

std::shared_ptr<Channel> CreateChannel(const std::string& target,
                                       const std::shared_ptr<ChannelCredentials>& creds) {
  return CreateCustomChannel(target, creds, ChannelArguments());
}

std::shared_ptr<Channel> CreateCustomChannel(const std::string& target,
                                             const std::shared_ptr<ChannelCredentials>& creds,
                                             const ChannelArguments& args) {
  std::shared_ptr<channel::ChannelState> state = NewState(args);
  std::shared_ptr<Channel> channel(new Channel(state));
  if (!state->config_error.ok()) return channel;
  absl::StatusOr<channel::Target> t = channel::ParseTarget(target);
  if (!t.ok()) {
    state->config_error = t.status();
    return channel;
  }
  if (!args.values().count("grpc.default_authority")) {
    state->config.connection.authority = t->authority;
  }
  if (absl::Status s = ApplyCredentials(creds.get(), state->config); !s.ok()) {
    state->config_error = s;
    return channel;
  }
  std::shared_ptr<channel::Resolver> resolver;
  if (t->kind == channel::Target::Kind::kStatic) {
    resolver = std::make_shared<channel::StaticResolver>(t->addresses);
  } else {
    resolver = std::make_shared<channel::DnsResolver>(
        t->host, t->port, state->config.dns_min_time_between_resolutions);
  }
  StartResolver(state, std::move(resolver));
  return channel;
}

std::shared_ptr<Channel> CreateChannelWithResolver(const std::string& authority,
                                                   std::shared_ptr<channel::Resolver> resolver,
                                                   const ChannelArguments& args) {
  std::shared_ptr<channel::ChannelState> state = NewState(args);
  std::shared_ptr<Channel> channel(new Channel(state));
  if (!state->config_error.ok()) return channel;
  if (!args.values().count("grpc.default_authority")) {
    state->config.connection.authority = authority;
  }
  StartResolver(state, std::move(resolver));
  return channel;
}

Status ValidateChannelArguments(const ChannelArguments& args) {
  return Status::FromAbsl(channel::ParseChannelArguments(args).status());
}

}  // namespace ringrpc
