// The channel core (channel_state.h): creation, threads, resolver updates
// and the service config in force, connectivity and idleness, metrics.
// The per-thread view and the pick are in channel_pick.cc.
#include "ringrpc/client/channel/channel_state.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/channel/address_diff.h"
#include "ringrpc/client/channel/idle_policy.h"
#include "ringrpc/client/runtime/event_loop.h"

namespace ringrpc::channel {
namespace {

using runtime::CqThreads;
using runtime::EventLoop;

// The process-wide CQ threads: made on first use, gone with the last
// channel that holds them.
std::shared_ptr<CqThreads> SharedCqThreads(absl::Status* error) {
  static Mutex mu;
  static std::weak_ptr<CqThreads> shared ABSL_GUARDED_BY(mu);
  MutexLock lock(&mu);
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

// No subtraction of two arbitrary time points, so nothing overflows.
TimePoint ToLoopTime(std::chrono::system_clock::time_point deadline, TimePoint now) {
  const auto wall = std::chrono::system_clock::now();
  if (deadline <= wall) return now;
  constexpr auto kFar = std::chrono::hours(24 * 365);
  if (deadline - wall > kFar) return TimePoint::max();  // deadline > wall: no overflow
  return now + std::chrono::duration_cast<Duration>(deadline - wall);
}

std::shared_ptr<ChannelState> ChannelState::Create(const ChannelArguments& args) {
  std::shared_ptr<ChannelState> state(new ChannelState());
  absl::StatusOr<ChannelConfig> config = ParseChannelArguments(args);
  if (!config.ok()) {
    state->config_error_ = config.status();
    absl::Status ignored;
    state->cq_ = SharedCqThreads(&ignored);
  } else {
    state->config_ = *config;
    state->args_ = args;
    state->listener_ = args.subchannel_event_listener();
    if (const std::shared_ptr<CqThreadSet>& set = args.cq_thread_set()) {
      if (config->cq_threads != 0 || config->poller) {
        state->config_error_ = absl::InvalidArgumentError(
            "channel arguments ringrpc.cq_threads / ringrpc.poller and SetCqThreadSet both say "
            "which threads the channel runs on: set one");
      }
      state->cq_ = set->threads();
    } else if (config->cq_threads == 0 && !config->poller) {
      state->cq_ = SharedCqThreads(&state->config_error_);
    } else {
      absl::StatusOr<std::unique_ptr<CqThreads>> cq =
          CqThreads::Start({.threads = config->cq_threads, .backend = config->poller});
      if (cq.ok()) {
        state->cq_ = std::move(*cq);
      } else {
        state->config_error_ = cq.status();
      }
    }
  }
  state->changes_ = ChangeSignal::Create(state->cq_ ? state->cq_->size() : 0);
  if (state->cq_) {
    state->per_thread_ = std::vector<PerThread>(state->cq_->size());
    if (state->config_.call_metrics || args.call_metrics_recorder()) {
      state->call_metrics_ = std::make_unique<CallMetricsTable>(
          state->cq_->size(), args.call_metrics_recorder(), state->config_.call_metrics);
    }
  }
  return state;
}

// Every event of an address this channel uses: the connectivity state may
// have changed (WaitForStateChange wakes). A connection to one of the
// addresses was lost (GOAWAY, a failure) or a dial failed: the addresses
// may have moved, so resolve again (the resolver keeps its own minimum
// interval). As gRPC's LB policies do.
class ChannelState::SubchannelWatcher final : public SubchannelEventListener {
 public:
  SubchannelWatcher(std::weak_ptr<Resolver> r, std::shared_ptr<ChangeSignal> signal)
      : resolver_(std::move(r)), signal_(std::move(signal)) {}
  void OnSubchannelEvent(const SubchannelEvent& e) override {
    if (e.kind == SubchannelEvent::Kind::kConnectionLost ||
        e.kind == SubchannelEvent::Kind::kConnectFailed) {
      if (std::shared_ptr<Resolver> r = resolver_.lock()) r->RequestReresolution();
    }
    signal_->Ring();
  }

 private:
  const std::weak_ptr<Resolver> resolver_;
  const std::shared_ptr<ChangeSignal> signal_;
};

void ChannelState::Start(const std::shared_ptr<ChannelState>& state,
                         std::shared_ptr<Resolver> resolver) {
  // The configuration is final now (Create's caller may have adjusted it):
  // the default service config is the first in force.
  state->selector_.Start(state->config_, state->args_, state->per_thread_.size());
  // Each thread's pickers are made on it, at its first pick.
  uint64_t seed = 0x9e3779b97f4a7c15ULL;
  for (PerThread& pt : state->per_thread_) {
    pt.seed = seed;
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  }
  state->resolver_ = std::move(resolver);
  state->watcher_ = std::make_shared<SubchannelWatcher>(state->resolver_, state->changes_);
  std::weak_ptr<ChannelState> weak = state;
  if (state->config_.client_idle_timeout && state->cq_) {
    state->SpawnOn(0, IdleWatch(state, state->cq_->loop(0), *state->config_.client_idle_timeout));
  }
  state->resolver_->Start([weak](absl::StatusOr<ResolverResult> update) {
    std::shared_ptr<ChannelState> s = weak.lock();
    if (!s) return;
    s->OnResolverUpdate(std::move(update));
    // Never let the channel's last reference go here: its destructor shuts
    // this resolver down, which cannot be done from inside its own callback
    // (the DNS thread would join itself, a manual resolver re-lock its
    // mutex). A CQ thread lets go of it instead.
    CqThreads* cq = s->cq_.get();
    cq->Post(0, [s = std::move(s)] {});
  });
}

ChannelState::~ChannelState() {
  if (resolver_) resolver_->Shutdown();
  if (!cq_) return;
  // Detach: a subchannel no other channel uses closes its pool (each CQ
  // thread its own shard). Nothing here waits: this may run on a CQ thread
  // (a call's end released the last reference) or the resolver's.
  std::vector<std::shared_ptr<Subchannel>> all;
  {
    MutexLock lock(&mu_);
    all.swap(list_);
  }
  for (auto& sc : all) SubchannelRegistry::Global().Detach(sc, *cq_, {listener_, watcher_});
}

// ---- threads ------------------------------------------------------------------------

std::optional<size_t> ChannelState::CurrentIndex() const {
  EventLoop* loop = EventLoop::Current();
  if (loop == nullptr || cq_ == nullptr) return std::nullopt;
  size_t i = loop->cq_index();
  if (i < cq_->size() && &cq_->loop(i) == loop) return i;
  return std::nullopt;
}

size_t ChannelState::IndexForCaller() const {
  return std::hash<std::thread::id>()(std::this_thread::get_id()) % cq_->size();
}

void ChannelState::SpawnOn(size_t i, Task<void> task) { cq_->loop(i).PostSpawn(std::move(task)); }

size_t ChannelState::NextIndexForAsync() const {
  // Starts at the thread's own index (IndexForCaller's hash), so that many
  // application threads do not all begin on CQ thread 0; wraps harmlessly.
  thread_local size_t next = std::hash<std::thread::id>()(std::this_thread::get_id());
  return next++ % cq_->size();
}

void ChannelState::Spawn(Task<void> task) {
  std::optional<size_t> here = CurrentIndex();
  SpawnOn(here ? *here : NextIndexForAsync(), std::move(task));
}

void ChannelState::SpawnForBlocking(Task<void> task) { SpawnOn(IndexForCaller(), std::move(task)); }

void ChannelState::PostToAll(std::function<void()> fn) {
  for (size_t i = 0; i < cq_->size(); ++i) cq_->Post(i, fn);
}

// ---- resolver updates -------------------------------------------------------------------

void ChannelState::OnResolverUpdate(absl::StatusOr<ResolverResult> result) {
  struct MarkResolved {
    std::atomic<bool>& flag;
    ChangeSignal& signal;
    ~MarkResolved() {
      flag.store(true, std::memory_order_release);
      signal.Ring();  // the state may have changed: WaitForStateChange looks
    }
  } mark{resolved_once_, *changes_};
  if (!result.ok()) {
    MutexLock lock(&mu_);
    resolver_error_ = result.status();
    return;
  }
  const AddressList* update = &result->addresses;
  std::vector<std::string> names;
  for (const auto& a : *update) names.push_back(a.ToString());
  std::vector<std::shared_ptr<Subchannel>> kept, gone, fresh;
  bool first;
  {
    MutexLock lock(&mu_);
    const std::optional<std::string> health_before = active().health_service;
    selector_.Apply(*result);
    const std::optional<std::string>& health = active().health_service;
    resolver_error_ = update->empty() ? absl::UnavailableError("the resolver returned no addresses")
                                      : absl::OkStatus();
    std::vector<std::string> before;
    for (auto& sc : list_) before.push_back(sc->record->name());
    // Same set and same health checks: nothing to bump but the routing, if
    // that changed. Another health service: every address is attached
    // again (checked the new way).
    if (SameAddressSet(before, names) && health == health_before) {
      if (SetRouting(*result, names)) version_.fetch_add(1, std::memory_order_acq_rel);
      return;
    }
    first = list_.empty() && removed_.empty();
    const AddressDiff diff = DiffAddresses(before, names, health != health_before);
    for (size_t i = 0; i < update->size(); ++i) {
      if (diff.keep[i]) {
        fresh.push_back(list_[*diff.keep[i]]);
        kept.push_back(fresh.back());
        continue;
      }
      absl::StatusOr<std::shared_ptr<Subchannel>> sc = SubchannelRegistry::Global().Attach(
          (*update)[i], config_, *cq_, config_.use_local_subchannel_pool, seed_++,
          {listener_, watcher_}, health);
      if (!sc.ok()) continue;  // config was validated: cannot happen
      fresh.push_back(*sc);
    }
    for (size_t i : diff.gone) gone.push_back(list_[i]);
    list_ = fresh;
    // Subchannels removed earlier whose connections are all gone: keep
    // their counters, drop them (a flapping resolver must not grow this).
    std::erase_if(removed_, [&](const SubchannelPool& p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      pool::PoolMetrics m = p.Metrics();
      if (m.live != 0 || m.leases != 0 || m.parked != 0) return false;
      gone_metrics_ += m;
      return true;
    });
    for (auto& sc : gone) removed_.push_back(sc->pool);
    SetRouting(*result, names);
    version_.fetch_add(1, std::memory_order_acq_rel);
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
  for (auto& sc : gone) SubchannelRegistry::Global().Detach(sc, *cq_, {listener_, watcher_});
}

bool ChannelState::SetRouting(const ResolverResult& result, const std::vector<std::string>& names) {
  std::map<std::string, std::vector<std::shared_ptr<Subchannel>>, std::less<>> groups;
  if (result.router != nullptr) {
    for (const auto& [name, members] : result.groups) {
      std::vector<std::shared_ptr<Subchannel>>& g = groups[name];
      for (size_t i : members) {
        if (i >= names.size()) continue;  // a resolver's slip: not an address
        auto it = std::find_if(list_.begin(), list_.end(),
                               [&](auto& sc) { return sc->record->name() == names[i]; });
        if (it != list_.end() && std::find(g.begin(), g.end(), *it) == g.end()) g.push_back(*it);
      }
    }
  }
  std::map<std::string, std::string, std::less<>> fallback;
  if (result.router != nullptr) fallback.insert(result.fallback.begin(), result.fallback.end());
  if (result.router == router_ && groups == groups_ && fallback == fallback_) return false;
  router_ = result.router;
  groups_ = std::move(groups);
  fallback_ = std::move(fallback);
  return true;
}

absl::Status ChannelState::NoAddressError() const {
  MutexLock lock(&mu_);
  return absl::UnavailableError(absl::StrCat("no address to call: ", resolver_error_.message()));
}

ConnectivityState ChannelState::Aggregate() const {
  MutexLock lock(&mu_);
  return AggregateState(
      list_.size(),
      [&](size_t k) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        ConnectivityState s = list_[k]->PickState();
        // Connected once, but no connection left on any thread (closed when
        // idle, lost, or the channel went idle): IDLE again, as in gRPC. A
        // lost one counts as gone at once, though its pool may still hold
        // it until its next checkout.
        if (s == ConnectivityState::kReady) {
          pool::PoolMetrics m = list_[k]->pool.Metrics();
          if (m.live + m.parked == 0 || list_[k]->record->open_connections() == 0) {
            s = ConnectivityState::kIdle;
          }
        }
        return s;
      },
      resolved_once());
}

void ChannelState::NotifyStateChange() { changes_->Ring(); }

ConnectivityState ChannelState::WaitForStateOtherThan(ConnectivityState last,
                                                      TimePoint until) const {
  uint64_t epoch = changes_->epoch();
  for (;;) {
    // Read after the epoch: a change after this read rings a newer one.
    const ConnectivityState now = Aggregate();
    const TimePoint t = Clock::now();
    if (now != last || t >= until) return now;
    epoch = changes_->WaitOtherThan(epoch, std::min(until, t + std::chrono::milliseconds(100)));
  }
}

Task<void> ChannelState::IdleWatch(std::weak_ptr<ChannelState> weak, runtime::EventLoop& loop,
                                   Duration timeout) {
  IdlePolicy policy(timeout, loop.Now());
  const Duration every = policy.every();
  // Woken at least every 10 s to see whether the channel is gone: a
  // program that makes and drops channels often leaves no pile of
  // sleeping watches behind (at most 10 s of them).
  const Duration slice = std::min<Duration>(every, std::chrono::seconds(10));
  TimePoint next_look = loop.Now() + every;
  for (;;) {
    co_await SleepUntil(loop, std::min(next_look, loop.Now() + slice));
    if (weak.expired()) co_return;
    if (loop.Now() < next_look) continue;
    next_look = loop.Now() + every;
    std::shared_ptr<ChannelState> st = weak.lock();
    if (st == nullptr) co_return;
    const pool::PoolMetrics m = st->Metrics();
    if (policy.Look(m.acquires, m.leases, st->idle(), loop.Now())) {
      // Idle mode: every connection closes (each CQ thread its own, as an
      // address change does); the next call leaves it.
      st->idle_.store(true, std::memory_order_relaxed);
      st->counters_.Count(ChannelCounter::kIdleEntries);
      st->Invalidate();
      st->NotifyStateChange();
    }
    // Never the last reference here: the channel's end (its own CQ threads
    // among it) must not run inside this task. A posted task lets go.
    runtime::CqThreads* cq = st->cq();
    cq->Post(0, [s = std::move(st)] {});
  }
}

std::vector<std::shared_ptr<Subchannel>> ChannelState::Subchannels() const {
  MutexLock lock(&mu_);
  return list_;
}

void ChannelState::Invalidate() {
  std::vector<std::shared_ptr<Subchannel>> all = Subchannels();
  for (auto& sc : all) sc->pool.Invalidate();
  if (cq_) {
    PostToAll([all] {
      for (auto& sc : all) sc->pool.ReapLocalShard();
    });
  }
}

// ---- metrics ------------------------------------------------------------------------------

pool::PoolMetrics ChannelState::Metrics() const {
  MutexLock lock(&mu_);
  pool::PoolMetrics sum = gone_metrics_;
  for (auto& sc : list_) sum += sc->pool.Metrics();
  for (auto& p : removed_) sum += p.Metrics();
  return sum;
}

std::vector<std::pair<std::string, pool::PoolMetrics>> ChannelState::MetricsByAddress() const {
  std::vector<std::pair<std::string, pool::PoolMetrics>> rows;
  MutexLock lock(&mu_);
  for (auto& sc : list_) rows.emplace_back(sc->record->name(), sc->pool.Metrics());
  return rows;
}

}  // namespace ringrpc::channel
