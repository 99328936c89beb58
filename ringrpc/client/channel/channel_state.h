// ringrpc/client/channel/channel_state.h — the channel's core: its configuration,
// CQ threads, resolver, the list of subchannels (one per address) and the
// pick over them. `ringrpc::Channel` is a thin handle on it; opening a call
// (ringrpc/client/channel.cc) asks it for a CQ thread and a subchannel.
//
// Lifetime: shared. The user's Channel holds it, and so does everything
// that runs on it — a queued or running call (its task, its ClientCall),
// a blocking stream, a reactor (through the Channel), a connect task from
// GetState(true). Dropping the Channel lets those finish; the last holder,
// on whatever thread, runs the destructor, which shuts down without
// waiting: the resolver stops, every subchannel is detached (a pool no
// other channel uses is closed by each CQ thread on its own shard), and
// CQ threads owned by this channel stop (see CqThreads::Shutdown for a
// thread releasing its own set). The resolver holds it weakly and never
// drops the last reference inside its own callback.
//
// Threads: configuration (config(), config_error()) is written only
// before Start() and read-only afterwards. `mu_` guards the address list
// and what goes with it; the atomics are read without it; per_thread_[i]
// is touched only by CQ thread i (PickForCall, Pick, AnotherUsable and
// their private helpers: debug builds abort when another thread
// calls them with i). Everything else may be called
// from any thread.
//
//   auto state = ChannelState::Create(args);        // threads, config
//   ChannelState::Start(state, resolver);           // addresses flow in
//   std::optional<size_t> i = state->CurrentIndex(); // on a CQ thread
//   ChannelState::CallPick p = state->PickForCall(*i, {.method = m, ...});
#ifndef RINGRPC_CLIENT_CHANNEL_CHANNEL_STATE_H_
#define RINGRPC_CLIENT_CHANNEL_CHANNEL_STATE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "ringrpc/base/check.h"
#include "ringrpc/base/mutex.h"
#include "ringrpc/base/task.h"
#include "ringrpc/base/time.h"
#include "ringrpc/client/channel/address_states.h"
#include "ringrpc/client/channel/call_metrics_table.h"
#include "ringrpc/client/channel/change_signal.h"
#include "ringrpc/client/channel/channel_config.h"
#include "ringrpc/client/channel/channel_counters.h"
#include "ringrpc/client/channel/config_selector.h"
#include "ringrpc/client/channel/subchannel.h"
#include "ringrpc/client/channel_arguments.h"
#include "ringrpc/client/lb/lb_policy.h"
#include "ringrpc/client/resolver.h"
#include "ringrpc/client/runtime/cq_threads.h"
#include "ringrpc/client/transport/metadata.h"
#include "ringrpc/pool/metrics.h"

namespace ringrpc::channel {

// A deadline on the wall clock as a loop time point, saturating: at or
// before now (time_point::min() included) is `now`; more than a year ahead
// (time_point::max() included) is TimePoint::max(), no deadline.
TimePoint ToLoopTime(std::chrono::system_clock::time_point deadline, TimePoint now);

class ChannelState : public std::enable_shared_from_this<ChannelState> {
 public:
  // Parses `args` and starts (or joins) the CQ threads. Bad arguments are
  // kept as config_error(); such a channel still gets the process-wide CQ
  // threads, so its callbacks learn of the error on one of them.
  static std::shared_ptr<ChannelState> Create(const ChannelArguments& args);
  // Addresses start flowing: `resolver`'s answers go to OnResolverUpdate.
  static void Start(const std::shared_ptr<ChannelState>& state, std::shared_ptr<Resolver> resolver);
  ~ChannelState();
  ChannelState(const ChannelState&) = delete;
  ChannelState& operator=(const ChannelState&) = delete;

  // ---- configuration (before Start: written; after: read-only) -------------
  const absl::Status& config_error() const { return config_error_; }
  void Fail(absl::Status error) { config_error_ = std::move(error); }
  const ChannelConfig& config() const { return config_; }
  ChannelConfig& mutable_config() { return config_; }

  // ---- threads ---------------------------------------------------------------
  // Null only when no CQ thread could start.
  runtime::CqThreads* cq() const { return cq_.get(); }
  // The CQ thread index of the calling thread, if it is one of ours.
  std::optional<size_t> CurrentIndex() const;
  // A foreign thread's blocking calls keep to one CQ thread (its
  // connections stay warm).
  size_t IndexForCaller() const;
  // A foreign thread's async work goes round the CQ threads, starting from
  // its own (a counter per application thread: nothing shared).
  size_t NextIndexForAsync() const;
  // Runs `task` on CQ thread `i` (< cq()->size()). Any thread.
  void SpawnOn(size_t i, Task<void> task);
  // On the calling CQ thread if it is one of ours, else the next CQ thread
  // in the caller's round (async work: callbacks, reactors, Spawn).
  void Spawn(Task<void> task);
  // On the caller's own CQ thread (a blocking call, WaitForConnected:
  // where this thread's blocking calls go).
  void SpawnForBlocking(Task<void> task);

  // ---- addresses and picking ------------------------------------------------------
  // The resolver's answer: a new address set replaces the list (keeping
  // the subchannels of addresses that stay), bumps the version each CQ
  // thread's view follows, invalidates what stays and detaches what went.
  void OnResolverUpdate(absl::StatusOr<ResolverResult> update);
  // The service config in force (gRFC A21; any thread, one acquire load).
  const ActiveConfig& active() const { return selector_.active(); }
  // The last resolver service config that could not be used (OK: none),
  // and how many there were.
  absl::Status resolver_config_error() const { return selector_.last_error(); }
  uint64_t resolver_config_errors() const { return selector_.errors(); }
  // The resolver has answered at least once (set after the list).
  bool resolved_once() const { return resolved_once_.load(std::memory_order_acquire); }
  void RequestReresolution() {
    if (resolver_) resolver_->RequestReresolution();
  }

  // ---- idleness and state changes -------------------------------------------
  // grpc.client_idle_timeout_ms: no lease taken and none held for that long
  // puts the channel in idle mode (its connections closed, its state
  // IDLE); the next call leaves it (the resolver is asked again). One
  // relaxed load per call.
  void LeaveIdle() {
    if (idle_.load(std::memory_order_relaxed) && idle_.exchange(false)) RequestReresolution();
  }
  bool idle() const { return idle_.load(std::memory_order_relaxed); }
  // Something the connectivity state is made of may have changed (an
  // address's connection, dial, health or list): wakes WaitForStateChange.
  void NotifyStateChange();
  // The connectivity state, waiting until it is not `last` or `until`
  // passes (woken by NotifyStateChange; re-checked every 100 ms besides,
  // as a pool's live count may drop just after its event). Any thread but
  // the channel's own CQ threads.
  ConnectivityState WaitForStateOtherThan(ConnectivityState last, TimePoint until) const;
  // What a call's pick goes by.
  struct CallPickArgs {
    std::string_view method;  // what the resolver's CallRouter routes by
    const transport::Metadata* metadata = nullptr;
    bool wait_for_ready = false;  // the context's, else the service config's
    TimePoint now;                // the loop's (backoff is checked with it)
  };
  // One pick for a call, typed as gRPC's picker answers: picked (an
  // address, and the policy's tracker for the call, null if it follows
  // none: Start it once the call has its stream), queue until a change
  // (watch changes(), made before asking again, then ask again), or fail
  // with a status.
  struct CallPick {
    enum Kind { kPicked, kQueue, kFail };
    Kind kind = kFail;
    std::shared_ptr<Subchannel> sc;
    std::unique_ptr<LbCallTracker> tracker;
    // The route's group after failover ("": the whole list), and the
    // route's limit on the call's length (A31), if it has one.
    std::string group;
    std::optional<std::chrono::milliseconds> max_duration;
    // kFail: the call's status (UNAVAILABLE naming why: no route, no
    // address, none healthy). kQueue: why none was picked, for the call's
    // final message if it waits out its deadline.
    absl::Status error;
    // Not picked, though an address is usable now (a health answer came in
    // after the pick, or the policy chose none): the call may pick again
    // at once, within its own bound; `kind` says what to do once it may
    // not.
    bool usable_now = false;
    // kQueue: no change may come to end the wait (the policy chose none of
    // the usable addresses): ask again after a while as well.
    bool recheck = false;
    bool resolved = false;  // the resolver had answered (read before the pick)
  };
  // CQ thread `thread` only: route, failover, the LB policy's pick and, if
  // it found nothing, the decision from one reading of each address (so
  // the counts, the decision and the message agree): before the
  // resolver's first answer or a health check's, every call queues; after
  // a resolver error or with every address unhealthy, only wait_for_ready
  // ones do.
  CallPick PickForCall(size_t thread, const CallPickArgs& args);
  // CQ thread `thread` only: the LB policy's pick among the addresses of
  // `group` (Route's answer; "" the whole list), with the thread's picker
  // for that group, for what is not a call (GetState(true)'s dial).
  // Null: no addresses, or the policy picked none, or an unhealthy one. `tracker`, if given,
  // receives the policy's tracker for the call (Start it once the call has its stream; null if the
  // policy follows no calls).
  std::shared_ptr<Subchannel> Pick(size_t thread, std::string_view group = {},
                                   std::unique_ptr<LbCallTracker>* tracker = nullptr);
  // CQ thread `thread` only: the list (of `group`) has an address other
  // than `sc` that is not in TRANSIENT_FAILURE, or `group` has a fallback.
  bool AnotherUsable(size_t thread, const std::shared_ptr<Subchannel>& sc,
                     std::string_view group = {}) const;
  // What a call whose pick found nothing waits on (a Watch made on its CQ
  // thread): any change to the list, an address's connection, dial or
  // health answer rings it.
  ChangeSignal& changes() const { return *changes_; }
  // The channel's connectivity state from its addresses' records.
  ConnectivityState Aggregate() const;
  // The current subchannels (a copy).
  std::vector<std::shared_ptr<Subchannel>> Subchannels() const;
  // Retires every connection made so far, on every thread, lazily.
  void Invalidate();
  // UNAVAILABLE naming why there is no address (the resolver's error).
  absl::Status NoAddressError() const;

  // ---- metrics -----------------------------------------------------------------------
  // Summed over current addresses, removed ones still draining and those
  // already dropped.
  pool::PoolMetrics Metrics() const;
  std::vector<std::pair<std::string, pool::PoolMetrics>> MetricsByAddress() const;
  // Per-call telemetry: null when neither kept (ringrpc.call_metrics=0)
  // nor heard by a recorder, or when the channel has no CQ thread.
  CallMetricsTable* call_metrics() const { return call_metrics_.get(); }
  // The channel's own event counts (retries, hedges, idle entries).
  ChannelCounters& counters() { return counters_; }
  const ChannelCounters& counters() const { return counters_; }

 private:
  class SubchannelWatcher;
  // CQ thread `thread` only: the group of the resolver's addresses a call
  // goes to (its CallRouter's answer; "" without one, every call to the
  // whole list), or the status it fails with.
  absl::StatusOr<CallRoute> Route(size_t thread, std::string_view method,
                                  const transport::Metadata& metadata);
  // CQ thread `thread` only: `group`, or while every address of it is
  // failing at `now` (the time the caller checks backoff with: the loop's),
  // its fallback (ResolverResult::fallback), down the chain.
  std::string_view Failover(size_t thread, std::string_view group, TimePoint now);
  // Why Pick found nothing, from one reading of each address of the list
  // (of `group`): kUsable, one is usable now (a health check answered
  // since the pick, or the policy chose none); kHealthPending, none is,
  // but one waits for its first health answer (A17's CONNECTING: calls
  // wait rather than fail); kNone, none is. `error`: UNAVAILABLE naming
  // why (no address, or none healthy), for the call that fails on it.
  struct NoPick {
    using Kind = NoPickCounts::Kind;
    Kind kind = NoPickCounts::kNone;
    absl::Status error;
  };
  // CQ thread `thread` only. Reads the thread's view brought up to date:
  // made after a ChangeSignal::Watch, it sees every change the Watch would
  // not wake for.
  NoPick WhyNoPick(size_t thread, std::string_view group = {});
  ChannelState() = default;
  void PostToAll(std::function<void()> fn);

  absl::Status config_error_;
  ChannelConfig config_;
  ChannelArguments args_;  // as given (LB policies read their own keys)
  std::shared_ptr<runtime::CqThreads> cq_;
  std::shared_ptr<Resolver> resolver_;
  std::shared_ptr<SubchannelEventListener> listener_;
  // Hears every subchannel event: rings changes_; a lost connection
  // or a failed dial also asks the resolver (held weakly: it may be gone)
  // to resolve again.
  std::shared_ptr<SubchannelEventListener> watcher_;
  std::unique_ptr<CallMetricsTable> call_metrics_;

  mutable Mutex mu_;
  std::vector<std::shared_ptr<Subchannel>> list_ ABSL_GUARDED_BY(mu_);  // resolver order
  // The resolver's per-call routing (ResolverResult::router, groups).
  std::shared_ptr<const CallRouter> router_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<std::shared_ptr<Subchannel>>, std::less<>> groups_
      ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string, std::less<>> fallback_ ABSL_GUARDED_BY(mu_);
  std::vector<SubchannelPool> removed_ ABSL_GUARDED_BY(mu_);  // addresses gone, draining
  pool::PoolMetrics gone_metrics_ ABSL_GUARDED_BY(mu_);       // removed ones already dropped
  absl::Status resolver_error_ ABSL_GUARDED_BY(mu_) =
      absl::UnavailableError("no addresses resolved yet");
  uint64_t seed_ ABSL_GUARDED_BY(mu_) = 0x5eed;
  std::atomic<uint64_t> version_{0};  // bumped on every list change
  std::atomic<bool> resolved_once_{false};
  std::atomic<bool> idle_{false};
  // Rung by NotifyStateChange, by resolver answers and by the subchannels'
  // events (shared with the listener on their EventHubs, which may outlive
  // this). Made in Create, once the number of CQ threads is known.
  std::shared_ptr<ChangeSignal> changes_;
  // Watches for grpc.client_idle_timeout_ms on CQ thread 0.
  static Task<void> IdleWatch(std::weak_ptr<ChannelState> weak, runtime::EventLoop& loop,
                              Duration timeout);
  ConfigSelector selector_;  // started in Start
  ChannelCounters counters_;
  // The result's router and groups (of `names`, its addresses as strings)
  // over list_; true if they changed.
  bool SetRouting(const ResolverResult& result, const std::vector<std::string>& names)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Each CQ thread's view of the list and its pickers (one per group, made
  // by the balancer of the config in force); touched only by that thread.
  struct Group {
    std::vector<std::shared_ptr<Subchannel>> list;
    std::unique_ptr<LbPicker> picker;  // null until the first pick
  };
  struct alignas(64) PerThread {
    uint64_t version = ~uint64_t{0};
    std::vector<std::shared_ptr<Subchannel>> list;
    // The config whose balancer made the pickers (null: none made yet).
    const ActiveConfig* pickers_of = nullptr;
    std::unique_ptr<LbPicker> picker;
    uint64_t seed = 0;  // the pickers'
    std::shared_ptr<const CallRouter> router;
    std::map<std::string, Group, std::less<>> groups;
    std::map<std::string, std::string, std::less<>> fallback;
    uint64_t route_rng = 0;  // NextRandom's state for CallRouteInfo::random
  };
  std::vector<PerThread> per_thread_;
  // CQ thread `thread`'s view: that thread's alone (debug builds check the
  // caller is it).
  PerThread& Own(size_t thread) {
    RINGRPC_DCHECK(CurrentIndex() == thread);
    return per_thread_[thread];
  }
  const PerThread& Own(size_t thread) const {
    RINGRPC_DCHECK(CurrentIndex() == thread);
    return per_thread_[thread];
  }
  // CQ thread `pt`'s own: its copy of the list, groups and router brought
  // up to the current version.
  void Refresh(PerThread& pt);
  // The addresses `group` names in `pt` ("": the whole list; a group the
  // resolver did not give: none).
  static const std::vector<std::shared_ptr<Subchannel>>& ListFor(const PerThread& pt,
                                                                 std::string_view group);
};

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_CHANNEL_STATE_H_
