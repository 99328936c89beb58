// ringrpc/client/lb/lb_policy.h — load-balancing policies as plug-ins: the
// interface a policy implements, and the registry a channel finds it in by
// the name a service config's loadBalancingConfig (or grpc.lb_policy_name)
// gives. ringrpc's own (pick_first, round_robin, least_request_experimental)
// are registered the same way; a program registers its own before it
// creates the channels that name it.
//
// The shapes, from the longest-lived down:
//   LbPolicyFactory  one per name, process-wide: parses a config.
//   LbConfig         one per service config in force: immutable, compared
//                    by its JSON text (a resolver repeating itself reuses
//                    the channel's balancer).
//   LbBalancer       one per channel per config: may hold state all of the
//                    channel's CQ threads share (any thread may call it).
//   LbPicker         one per CQ thread per address group: that thread's
//                    own (no locks), asked once per call attempt.
//   LbCallTracker    optional, one per picked call: told when the call has
//                    its stream and when it ends (least_request's counts).
//
// Threading: factories and configs are const and called from any thread;
// NewPicker runs on the CQ thread that will own the picker; a picker and
// the trackers it hands out are used on that thread only.
//
//   class MyFactory : public ringrpc::LbPolicyFactory { ... };
//   ringrpc::RegisterLbPolicy(std::make_shared<MyFactory>());
//   args.SetServiceConfigJSON(R"({"loadBalancingConfig": [{"my_policy": {}}]})");
#ifndef RINGRPC_CLIENT_LB_LB_POLICY_H_
#define RINGRPC_CLIENT_LB_LB_POLICY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ringrpc/client/grpc_types.h"

namespace ringrpc {

class ChannelArguments;

// The addresses one pick chooses among (the resolver's list, or the group
// its router sent the call to), in the resolver's order. Valid for the
// duration of the Pick call it is passed to.
class LbAddressList {
 public:
  virtual ~LbAddressList() = default;
  virtual size_t size() const = 0;
  // The address's state as the policy should see it: its connection
  // state, except that one whose health check (gRFC A17) has not answered
  // SERVING reads GRPC_CHANNEL_TRANSIENT_FAILURE.
  virtual ConnectivityState state(size_t i) const = 0;
  // "10.0.0.2:50051", "[::1]:443", "unix:/run/s.sock".
  virtual const std::string& address(size_t i) const = 0;
  // The address's identity: the same for as long as the address stays in
  // the channel's list or a call picked on it is in flight (a key for a
  // policy's per-address state).
  virtual const void* id(size_t i) const = 0;
  // A counter per address that every CQ thread of the channel sees, zero
  // when the address first appears, kept for the policy in force
  // (least_request's calls in flight at channel scope); nothing else in
  // ringrpc reads or writes it.
  virtual std::atomic<uint32_t>& shared_count(size_t i) const = 0;
};

// Follows one call on the address it was picked for. Start: the call has
// a stream there (a pick that found no free stream and was dropped never
// starts). Finish: the call ended; called once, only after Start, on the
// picker's thread. Destroyed after Finish, or unstarted.
class LbCallTracker {
 public:
  virtual ~LbCallTracker() = default;
  virtual void Start() = 0;
  virtual void Finish() = 0;
};

struct LbPick {
  size_t index = 0;                        // into the LbAddressList
  std::unique_ptr<LbCallTracker> tracker;  // null: the policy follows no calls
};

class LbPicker {
 public:
  virtual ~LbPicker() = default;
  // The address the next call goes to, or nullopt for none (the call then
  // waits or fails as for an empty list, by its wait_for_ready). Never
  // called with an empty list. A pick of an address that is not READY is
  // fine: the call connects it, or tries another if it fails.
  // The list may differ from one call to the next (the resolver answered
  // again): a cursor into it is taken modulo size().
  virtual std::optional<LbPick> Pick(const LbAddressList& addresses) = 0;
};

struct LbPickerArgs {
  size_t thread = 0;  // the CQ thread that will own the picker
  // Distinct per CQ thread: a random policy's generators should not draw
  // in step.
  uint64_t seed = 0;
};

class LbBalancer {
 public:
  virtual ~LbBalancer() = default;
  // A picker for one address group on CQ thread `args.thread` (called on
  // that thread, when the config comes into force there or a group is
  // first seen).
  virtual std::unique_ptr<LbPicker> NewPicker(const LbPickerArgs& args) = 0;
};

struct LbBalancerArgs {
  size_t cq_threads = 1;  // pickers are made for threads 0 .. cq_threads - 1
  // The channel's arguments (a policy may read its own keys); alive for
  // the balancer's life.
  const ChannelArguments* channel_args = nullptr;
};

class LbConfig {
 public:
  virtual ~LbConfig() = default;
  // The name the policy is registered under.
  virtual std::string_view name() const = 0;
  // The config as a loadBalancingConfig entry's value ("{}",
  // R"({"choiceCount":3})"): equal texts of one name are one config.
  virtual std::string ToJson() const = 0;
  // Health checks (gRFC A17's healthCheckConfig) apply to the addresses
  // this policy picks among; pick_first says no, as gRPC's.
  virtual bool health_checks() const { return true; }
  // The channel's state for this config (called once per channel and
  // config, on any thread).
  virtual std::shared_ptr<LbBalancer> NewBalancer(const LbBalancerArgs& args) const = 0;
};

class LbPolicyFactory {
 public:
  virtual ~LbPolicyFactory() = default;
  // The name service configs use: "round_robin", "my_policy".
  virtual std::string_view name() const = 0;
  // `json`: the JSON object the service config gives the policy ("{}"
  // when it is named by grpc.lb_policy_name or loadBalancingPolicy). An
  // error is INVALID_ARGUMENT naming the field; the service config is then
  // invalid as a whole (gRFC A21: the last valid one stays).
  virtual absl::StatusOr<std::shared_ptr<const LbConfig>> ParseConfig(
      std::string_view json) const = 0;
};

// Makes `factory` findable under its name (replacing one of the same
// name). Any thread; channels made afterwards see it.
void RegisterLbPolicy(std::shared_ptr<const LbPolicyFactory> factory);
// The factory registered as `name`, or null.
std::shared_ptr<const LbPolicyFactory> FindLbPolicy(std::string_view name);
// Every registered name, sorted (for error messages).
std::vector<std::string> LbPolicyNames();

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_LB_LB_POLICY_H_
