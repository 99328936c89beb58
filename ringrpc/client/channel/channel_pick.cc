// The channel core's per-thread half (channel_state.h): each CQ thread's
// view of the address list, groups and router, and a call's pick from it:
// route, failover, the LB policy's pick with that thread's picker, and
// what the call does when it found nothing. Every function here runs on
// the CQ thread it is given.
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "ringrpc/base/random.h"
#include "ringrpc/client/channel/channel_state.h"
#include "ringrpc/client/channel/health_check.h"

namespace ringrpc::channel {

void ChannelState::Refresh(PerThread& pt) {
  if (pt.version == version_.load(std::memory_order_acquire)) return;
  MutexLock lock(&mu_);
  pt.list = list_;
  pt.router = router_;
  pt.fallback = fallback_;
  // Each group keeps its cursor while it stays.
  std::erase_if(pt.groups, [&](const auto& g) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !groups_.contains(g.first);
  });
  for (const auto& [name, list] : groups_) {
    pt.groups[name].list = list;  // a new group gets its picker at its first pick
  }
  pt.version = version_.load(std::memory_order_acquire);
}

const std::vector<std::shared_ptr<Subchannel>>& ChannelState::ListFor(const PerThread& pt,
                                                                      std::string_view group) {
  static const std::vector<std::shared_ptr<Subchannel>> kNone;
  if (group.empty()) return pt.list;
  auto it = pt.groups.find(group);
  return it == pt.groups.end() ? kNone : it->second.list;
}

absl::StatusOr<CallRoute> ChannelState::Route(size_t thread, std::string_view method,
                                              const transport::Metadata& metadata) {
  PerThread& pt = Own(thread);
  Refresh(pt);
  if (pt.router == nullptr) return CallRoute{};
  if (pt.route_rng == 0) pt.route_rng = pt.seed | 1;
  return pt.router->Route(
      CallRouteInfo{.method = method, .metadata = metadata, .random = NextRandom(pt.route_rng)});
}

std::string_view ChannelState::Failover(size_t thread, std::string_view group, TimePoint now) {
  PerThread& pt = Own(thread);
  Refresh(pt);
  if (pt.fallback.empty()) return group;
  // Failing: unhealthy, or in TRANSIENT_FAILURE and not to be dialled yet.
  auto failing = [&](const std::shared_ptr<Subchannel>& sc) {
    return !sc->Healthy() || (sc->record->state() == ConnectivityState::kTransientFailure &&
                              !sc->record->CheckBackoff(now).ok());
  };
  for (size_t hops = 0; hops < pt.fallback.size(); ++hops) {
    auto next = pt.fallback.find(group);
    if (next == pt.fallback.end()) break;
    const std::vector<std::shared_ptr<Subchannel>>& list = ListFor(pt, group);
    if (!std::all_of(list.begin(), list.end(), failing)) break;
    group = next->second;
  }
  return group;
}

namespace {

static_assert(static_cast<int>(ConnectivityState::kReady) == GRPC_CHANNEL_READY &&
              static_cast<int>(ConnectivityState::kTransientFailure) ==
                  GRPC_CHANNEL_TRANSIENT_FAILURE &&
              static_cast<int>(ConnectivityState::kShutdown) == GRPC_CHANNEL_SHUTDOWN);

// One group's subchannels as the LB policy sees them.
class SubchannelList final : public LbAddressList {
 public:
  explicit SubchannelList(const std::vector<std::shared_ptr<Subchannel>>& list) : list_(list) {}
  size_t size() const override { return list_.size(); }
  // With health checks, an address not answered SERVING is never picked.
  ::ringrpc::ConnectivityState state(size_t i) const override {
    const Subchannel& sc = *list_[i];
    return static_cast<::ringrpc::ConnectivityState>(
        sc.Healthy() ? sc.record->state() : ConnectivityState::kTransientFailure);
  }
  const std::string& address(size_t i) const override { return list_[i]->record->name(); }
  const void* id(size_t i) const override { return list_[i].get(); }
  std::atomic<uint32_t>& shared_count(size_t i) const override { return list_[i]->lb_count; }

 private:
  const std::vector<std::shared_ptr<Subchannel>>& list_;
};

}  // namespace

std::shared_ptr<Subchannel> ChannelState::Pick(size_t thread, std::string_view group,
                                               std::unique_ptr<LbCallTracker>* tracker) {
  PerThread& pt = Own(thread);
  Refresh(pt);
  // A resolver's service config may have changed the policy: its balancer
  // makes this thread's pickers anew.
  const ActiveConfig& active = this->active();
  if (pt.pickers_of != &active) {
    pt.pickers_of = &active;
    pt.picker.reset();
    for (auto& [name, g] : pt.groups) g.picker.reset();
  }
  const std::vector<std::shared_ptr<Subchannel>>& list = ListFor(pt, group);
  std::unique_ptr<LbPicker>* picker = &pt.picker;
  if (!group.empty()) {
    auto it = pt.groups.find(group);
    if (it == pt.groups.end()) return nullptr;
    picker = &it->second.picker;
  }
  if (list.empty() || active.balancer == nullptr) return nullptr;
  if (*picker == nullptr) *picker = active.balancer->NewPicker({.thread = thread, .seed = pt.seed});
  std::optional<LbPick> pick = (*picker)->Pick(SubchannelList(list));
  if (!pick || pick->index >= list.size() || !list[pick->index]->Healthy()) return nullptr;
  if (tracker != nullptr) *tracker = std::move(pick->tracker);
  return list[pick->index];
}

ChannelState::CallPick ChannelState::PickForCall(size_t thread, const CallPickArgs& args) {
  CallPick p;
  // Read before picking: once set, the list the pick sees is the
  // resolver's answer (resolved_once is set after the list).
  p.resolved = resolved_once();
  // Routed again each pick: a new resolver answer may have moved the
  // groups (a channel without a router gets "" at the cost of a compare).
  absl::StatusOr<CallRoute> route = Route(thread, args.method, *args.metadata);
  if (!route.ok()) {
    p.error = route.status();
    return p;
  }
  p.max_duration = route->max_duration;
  p.group = std::string(Failover(thread, route->group, args.now));
  p.sc = Pick(thread, p.group, &p.tracker);
  if (p.sc != nullptr) {
    p.kind = CallPick::kPicked;
    return p;
  }
  const NoPick why = WhyNoPick(thread, p.group);
  p.error = why.error;
  p.usable_now = why.kind == NoPickCounts::kUsable;
  // Before the resolver's first answer, or a health check's, every call
  // waits (the channel is not failing, just starting); after a resolver
  // error, or with every address unhealthy, only wait_for_ready calls do.
  const bool health_pending = why.kind == NoPickCounts::kHealthPending;
  if (!args.wait_for_ready && p.resolved && !health_pending) return p;  // kFail
  p.kind = CallPick::kQueue;
  // A policy that chose none of the usable addresses may choose otherwise
  // later with no change to wake the call.
  p.recheck = p.usable_now;
  return p;
}

bool ChannelState::AnotherUsable(size_t thread, const std::shared_ptr<Subchannel>& sc,
                                 std::string_view group) const {
  const PerThread& pt = Own(thread);
  if (!group.empty() && pt.fallback.contains(group)) return true;
  const std::vector<std::shared_ptr<Subchannel>>& list = ListFor(pt, group);
  size_t except = std::find(list.begin(), list.end(), sc) - list.begin();
  return channel::AnotherUsable(list.size(), except, [&](size_t k) {
    return list[k]->Healthy() ? list[k]->record->state() : ConnectivityState::kTransientFailure;
  });
}

ChannelState::NoPick ChannelState::WhyNoPick(size_t thread, std::string_view group) {
  PerThread& pt = Own(thread);
  Refresh(pt);
  const std::vector<std::shared_ptr<Subchannel>>& list = ListFor(pt, group);
  if (list.empty() && !group.empty()) {
    return {.error = absl::UnavailableError(
                absl::StrCat("no address to call: the resolver routed the call to \"",
                             std::string(group), "\", which has no addresses"))};
  }
  if (list.empty()) return {.error = NoAddressError()};
  // Each address's states read once: the counts, the kind and the message
  // agree.
  const HealthWatch* checked = nullptr;
  const NoPickCounts c = CountNoPick(list.size(), [&](size_t k) {
    const Subchannel& sc = *list[k];
    AddressReading r{.state = sc.record->state()};
    if (sc.health == nullptr) return r;
    if (checked == nullptr) checked = sc.health.get();
    switch (sc.health->state()) {
      case Health::kUnknown:
        r.health = HealthReading::kUnknown;
        break;
      case Health::kServing:
        r.health = HealthReading::kServing;
        break;
      case Health::kNotServing:
        r.health = HealthReading::kNotServing;
        break;
    }
    return r;
  });
  NoPick why{.kind = c.kind()};
  if (c.usable > 0) {
    const std::string policy =
        active().lb_config != nullptr ? std::string(active().lb_config->name()) : std::string();
    why.error = absl::UnavailableError(
        absl::StrCat("no address to call: the load-balancing policy \"", policy,
                     "\" chose none of ", list.size(), " addresses (", c.usable, " usable)"));
  } else if (checked == nullptr) {
    why.error = NoAddressError();
  } else {
    why.error = absl::UnavailableError(
        absl::StrCat("no healthy address to call: the health check of service \"",
                     checked->service(), "\" (healthCheckConfig, gRFC A17) has ", c.not_serving,
                     " of ", list.size(), " addresses not SERVING, ", c.waiting,
                     " not answered yet, ", c.unreachable, " unreachable"));
  }
  return why;
}

}  // namespace ringrpc::channel
