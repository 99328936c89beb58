// ringrpc/client/lb/builtin.h — ringrpc's own LB policies, for the code that
// makes their configs without JSON (the channel's default, the xDS
// resolver) and for the registry that registers them. Private to ringrpc:
// users find them by name (lb_policy.h).
//
//   std::shared_ptr<const LbConfig> c = lb::LeastRequestConfig(3);
#ifndef RINGRPC_CLIENT_LB_BUILTIN_H_
#define RINGRPC_CLIENT_LB_BUILTIN_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "ringrpc/client/lb/lb_policy.h"

namespace ringrpc::lb {

// pick_first: the first READY address, else the first not in
// TRANSIENT_FAILURE, else the first. No health checks (gRFC A17).
std::shared_ptr<const LbPolicyFactory> PickFirstFactory();
std::shared_ptr<const LbConfig> PickFirstConfig();

// round_robin: the next address from the picker's cursor that is not in
// TRANSIENT_FAILURE (IDLE ones included: ours connect lazily, per thread,
// so an IDLE address is one this rotation is about to connect), else
// simply the next one.
std::shared_ptr<const LbPolicyFactory> RoundRobinFactory();
std::shared_ptr<const LbConfig> RoundRobinConfig();

// least_request_experimental (gRFC A48; also found as "least_request"):
// `choice_count` random addresses not in TRANSIENT_FAILURE, the one with
// the fewest calls in flight (the first drawn on a tie). Counted per CQ
// thread, or over the channel with ringrpc.least_request_scope=channel.
// choice_count: 2 .. 10 (more is capped at 10, as A48 says).
std::shared_ptr<const LbPolicyFactory> LeastRequestFactory(std::string name);
std::shared_ptr<const LbConfig> LeastRequestConfig(int choice_count);

// A policy without parameters: its config, "{}" and the picker type it
// makes. Picker: an LbPicker constructible from LbPickerArgs.
template <typename Picker>
class PlainConfig final : public LbConfig {
 public:
  PlainConfig(std::string_view name, bool health_checks)
      : name_(name), health_checks_(health_checks) {}
  std::string_view name() const override { return name_; }
  std::string ToJson() const override { return "{}"; }
  bool health_checks() const override { return health_checks_; }
  std::shared_ptr<LbBalancer> NewBalancer(const LbBalancerArgs&) const override {
    return std::make_shared<Balancer>();
  }

 private:
  struct Balancer final : LbBalancer {
    std::unique_ptr<LbPicker> NewPicker(const LbPickerArgs& args) override {
      return std::make_unique<Picker>(args);
    }
  };
  const std::string name_;
  const bool health_checks_;
};

// The one config of the parameterless policy whose picker is `Picker`.
template <typename Picker>
std::shared_ptr<const LbConfig> PlainConfigOf(std::string_view name, bool health_checks) {
  static const auto* config = new std::shared_ptr<const LbConfig>(
      std::make_shared<PlainConfig<Picker>>(name, health_checks));  // never destroyed
  return *config;
}

// A parameterless policy's factory: any JSON object is its config.
class PlainFactory final : public LbPolicyFactory {
 public:
  explicit PlainFactory(std::shared_ptr<const LbConfig> config) : config_(std::move(config)) {}
  std::string_view name() const override { return config_->name(); }
  absl::StatusOr<std::shared_ptr<const LbConfig>> ParseConfig(std::string_view json) const override;

 private:
  const std::shared_ptr<const LbConfig> config_;
};

// INVALID_ARGUMENT unless `json` is a JSON object; names `policy`.
absl::Status CheckObject(std::string_view policy, std::string_view json);

}  // namespace ringrpc::lb

#endif  // RINGRPC_CLIENT_LB_BUILTIN_H_
