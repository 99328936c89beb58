// gRFC A21's choice of the service config in force (config_selector.h).
#include "ringrpc/client/channel/config_selector.h"

#include "absl/strings/str_cat.h"

namespace ringrpc::channel {

const ActiveConfig ConfigSelector::kNoConfig{};

void ConfigSelector::Start(const ChannelConfig& config, const ChannelArguments& args,
                           size_t cq_threads) {
  MutexLock lock(&mu_);
  config_ = &config;
  args_ = &args;
  cq_threads_ = cq_threads;
  active_.store(ConfigFor("", config.service_config, absl::OkStatus()), std::memory_order_release);
}

const ActiveConfig* ConfigSelector::ConfigFor(const std::string& json,
                                              std::shared_ptr<const ServiceConfig> sc,
                                              absl::Status error,
                                              std::shared_ptr<const LbConfig> lb) {
  // The default's policy was settled when the arguments were read; a
  // resolver names its own, or its config does, or grpc.lb_policy_name's
  // stays.
  if (lb == nullptr) {
    lb = json.empty()                                ? config_->lb_config
         : sc != nullptr && sc->lb_config != nullptr ? sc->lb_config
                                                     : config_->lb_config_arg;
  }
  const std::string lb_json = lb->ToJson();
  for (const auto& [key, c] : configs_) {
    if (key == json && c->error == error && c->lb_config->name() == lb->name() &&
        c->lb_config->ToJson() == lb_json) {
      return c.get();
    }
  }
  auto c = std::make_unique<ActiveConfig>();
  c->error = std::move(error);
  if (sc != nullptr && sc->retry_throttling) {
    c->throttle = std::make_unique<RetryThrottle>(*sc->retry_throttling);
  }
  c->balancer = lb->NewBalancer({.cq_threads = cq_threads_, .channel_args = args_});
  c->health_service = HealthCheckServiceFor(sc.get(), *lb, config_->inhibit_health_checking);
  c->lb_config = std::move(lb);
  c->service_config = std::move(sc);
  configs_.emplace_back(json, std::move(c));
  return configs_.back().second.get();
}

const ActiveConfig& ConfigSelector::Apply(const ResolverResult& result) {
  MutexLock lock(&mu_);
  if (configs_.empty()) return kNoConfig;                    // not started
  const ActiveConfig* next = configs_.front().second.get();  // the default
  const std::optional<std::string>& json = result.service_config;
  if ((json || !result.service_config_error.ok()) && !config_->service_config_disable_resolution) {
    absl::StatusOr<ServiceConfig> parsed =
        !result.service_config_error.ok()
            ? absl::StatusOr<ServiceConfig>(result.service_config_error)
            : ParseServiceConfig(*json, {.retries_enabled = config_->enable_retries});
    if (parsed.ok()) {
      next = ConfigFor(*json, std::make_shared<const ServiceConfig>(std::move(*parsed)),
                       absl::OkStatus(), result.lb_config);
      resolver_config_valid_ = true;
      last_error_ = absl::OkStatus();
    } else {
      // Keep the last valid config; with none, the default; with no
      // default either, the channel fails its calls with the error.
      last_error_ = absl::UnavailableError(
          absl::StrCat("the resolver's service config is invalid: ", parsed.status().message()));
      errors_.fetch_add(1, std::memory_order_relaxed);
      if (resolver_config_valid_) return active();
      if (config_->service_config == nullptr) next = ConfigFor("!error", nullptr, last_error_);
    }
  } else {
    resolver_config_valid_ = false;
    // A policy of the resolver's own with the default service config.
    if (result.lb_config != nullptr) {
      next = ConfigFor("", config_->service_config, absl::OkStatus(), result.lb_config);
    }
  }
  active_.store(next, std::memory_order_release);
  return *next;
}

absl::Status ConfigSelector::last_error() const {
  MutexLock lock(&mu_);
  return last_error_;
}

}  // namespace ringrpc::channel
