// ringrpc/client/channel/config_selector.h — which service config is in
// force on a channel (gRFC A21): the resolver's latest valid one, else the
// channel's default (grpc.service_config), else none; with neither a valid
// one nor a default after an invalid one, an error every call fails with.
// Also what follows from the config chosen: its retry throttle, its LB
// policy and that policy's balancer, its health-check service.
//
// No sockets, no threads of its own: a channel feeds it each resolver
// answer (ChannelState::OnResolverUpdate), a call reads active() once and
// keeps the reference for its whole life.
//
// Threading: Start and Apply from one thread at a time (the channel's
// resolver answers come one by one); active() from any thread (one
// acquire load); last_error() and errors() from any thread.
//
//   ConfigSelector selector;
//   selector.Start(config, args, cq_threads);           // the default
//   const ActiveConfig& a = selector.Apply(result);     // a resolver answer
//   if (!a.error.ok()) { /* every call fails with it */ }
#ifndef RINGRPC_CLIENT_CHANNEL_CONFIG_SELECTOR_H_
#define RINGRPC_CLIENT_CHANNEL_CONFIG_SELECTOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "ringrpc/base/mutex.h"
#include "ringrpc/client/channel/channel_config.h"
#include "ringrpc/client/channel/retry_throttle.h"
#include "ringrpc/client/channel/service_config.h"
#include "ringrpc/client/channel_arguments.h"
#include "ringrpc/client/lb/lb_policy.h"
#include "ringrpc/client/resolver.h"

namespace ringrpc::channel {

// The service config in force and what follows from it. Immutable once
// made, and never freed before its ConfigSelector: a call keeps a plain
// reference for its whole life, whatever config comes after it.
struct ActiveConfig {
  std::shared_ptr<const ServiceConfig> service_config;  // null: none
  std::unique_ptr<RetryThrottle> throttle;              // null: no retryThrottling
  // The LB policy in force and its state for this channel (null only in
  // the config of a channel not started).
  std::shared_ptr<const LbConfig> lb_config;
  std::shared_ptr<LbBalancer> balancer;
  std::optional<std::string> health_service;  // A17: null, no health checks
  // Not OK: the resolver's config is invalid and there is neither an
  // earlier valid one nor a default; calls fail UNAVAILABLE with it.
  absl::Status error;
};

class ConfigSelector {
 public:
  ConfigSelector() = default;
  ConfigSelector(const ConfigSelector&) = delete;
  ConfigSelector& operator=(const ConfigSelector&) = delete;

  // The channel's settings are final: its default config is the first in
  // force. `config` and `args` must outlive this; `cq_threads` is how many
  // pickers each balancer may be asked for.
  void Start(const ChannelConfig& config, const ChannelArguments& args, size_t cq_threads);
  // A resolver answer's service config (or its absence, or its error)
  // applied; returns the config now in force.
  const ActiveConfig& Apply(const ResolverResult& result);
  // The config in force: before Start, one with nothing in it.
  const ActiveConfig& active() const { return *active_.load(std::memory_order_acquire); }
  // The last resolver service config that could not be used (OK: the last
  // one could), and how many could not, in all.
  absl::Status last_error() const;
  uint64_t errors() const { return errors_.load(std::memory_order_relaxed); }

 private:
  // The ActiveConfig for `sc` made, or found among those made before (the
  // same JSON, error and policy: its balancer and the pickers made with it
  // carry on). `json` empty: the default. `lb`: the resolver's own policy,
  // over the config's.
  const ActiveConfig* ConfigFor(const std::string& json, std::shared_ptr<const ServiceConfig> sc,
                                absl::Status error, std::shared_ptr<const LbConfig> lb = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  static const ActiveConfig kNoConfig;
  const ChannelConfig* config_ = nullptr;   // set by Start
  const ChannelArguments* args_ = nullptr;  // LB policies read their own keys
  size_t cq_threads_ = 0;
  mutable Mutex mu_;
  // Every ActiveConfig made (the default first), by the JSON it came from;
  // active_ points at one.
  std::vector<std::pair<std::string, std::unique_ptr<ActiveConfig>>> configs_ ABSL_GUARDED_BY(mu_);
  std::atomic<const ActiveConfig*> active_{&kNoConfig};
  bool resolver_config_valid_ ABSL_GUARDED_BY(mu_) = false;  // the last one used was
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> errors_{0};
};

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_CONFIG_SELECTOR_H_
