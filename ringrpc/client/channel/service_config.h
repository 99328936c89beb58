// ringrpc/client/channel/service_config.h — a gRPC service config (the JSON of
// grpc.service_config) as grpc++ 1.51 reads it for a client, checked whole:
// a field ringrpc does not implement is an error naming it, never ignored;
// fields gRPC does not know are ignored, as gRPC does. docs/service-config.md
// says what each field does here.
//
//   {"loadBalancingConfig": [{"round_robin": {}}],
//    "methodConfig": [{"name": [{"service": "pkg.Greeter"}],
//                      "timeout": "1.5s", "waitForReady": true,
//                      "maxRequestMessageBytes": 1048576}]}
#ifndef RINGRPC_CLIENT_CHANNEL_SERVICE_CONFIG_H_
#define RINGRPC_CLIENT_CHANNEL_SERVICE_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "ringrpc/base/time.h"
#include "ringrpc/client/lb/lb_policy.h"

namespace ringrpc::channel {

// gRFC A6's retryPolicy.
struct RetryPolicy {
  int max_attempts = 2;  // 2 .. 5 (more is capped at 5, as gRPC does)
  Duration initial_backoff{};
  Duration max_backoff{};
  double backoff_multiplier = 1;
  uint32_t retryable_codes = 0;  // bit i: status code i
  // An attempt without the server's first answer (headers) this long
  // after it started is cancelled and retried, whatever the codes.
  std::optional<Duration> per_attempt_recv_timeout;
  bool Retryable(int code) const { return code >= 0 && code < 32 && (retryable_codes >> code & 1); }
  bool operator==(const RetryPolicy&) const = default;
};

// gRFC A6's hedgingPolicy: up to max_attempts copies of a call, one every
// hedging_delay; the first answer (or a fatal status) wins.
struct HedgingPolicy {
  int max_attempts = 2;  // 2 .. 5 (more is capped at 5)
  Duration hedging_delay{};
  uint32_t non_fatal_codes = 0;  // bit i: status code i
  bool NonFatal(int code) const { return code >= 0 && code < 32 && (non_fatal_codes >> code & 1); }
  bool operator==(const HedgingPolicy&) const = default;
};

// gRFC A6's retryThrottling, in thousandths (tokenRatio has three decimals).
struct RetryThrottling {
  int64_t max_tokens_milli = 0;   // maxTokens in (0, 1000]
  int64_t token_ratio_milli = 0;  // tokenRatio > 0
  bool operator==(const RetryThrottling&) const = default;
};

// One methodConfig entry's settings (each absent unless the entry set it).
struct MethodConfig {
  std::optional<Duration> timeout;
  std::optional<bool> wait_for_ready;
  std::optional<uint32_t> max_request_message_bytes;
  std::optional<uint32_t> max_response_message_bytes;
  std::optional<RetryPolicy> retry_policy;      // never set with retries off
  std::optional<HedgingPolicy> hedging_policy;  // likewise; never with retry_policy
  bool operator==(const MethodConfig&) const = default;
};

struct ServiceConfig {
  // loadBalancingConfig's first registered policy (ringrpc/client/lb),
  // else loadBalancingPolicy's; null: the config names none.
  std::shared_ptr<const LbConfig> lb_config;
  std::optional<RetryThrottling> retry_throttling;  // never set with retries off
  // healthCheckConfig.serviceName (gRFC A17): set, health checking is on
  // (under round_robin and least_request; "" checks the whole server).
  std::optional<std::string> health_check_service;
  // By name: "pkg.Service/Method", "pkg.Service/" (the service's default)
  // and "" (the channel's default).
  absl::flat_hash_map<std::string, MethodConfig> methods;

  // The entry for a call to `path` ("/pkg.Service/Method"): the method's,
  // else its service's, else the default; null if none.
  const MethodConfig* Find(std::string_view path) const;
};

struct ServiceConfigOptions {
  // grpc.enable_retries=0: retryPolicy and retryThrottling are ignored
  // (grpc++ ignores them then).
  bool retries_enabled = true;
};

// INVALID_ARGUMENT naming the JSON path of the first problem, e.g.
// "grpc.service_config: methodConfig[0].timeout: \"1.5\" is not a duration
// (want \"1.5s\")".
absl::StatusOr<ServiceConfig> ParseServiceConfig(std::string_view json,
                                                 const ServiceConfigOptions& options = {});

// The registered policy `name` with its default config ("{}");
// INVALID_ARGUMENT naming the registered policies otherwise.
absl::StatusOr<std::shared_ptr<const LbConfig>> LbConfigNamed(const std::string& name);

// gRPC's JSON duration ("1.5s", up to nine fractional digits), >= 0.
std::optional<Duration> ParseJsonDuration(std::string_view text);

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_SERVICE_CONFIG_H_
