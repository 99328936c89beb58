// ringrpc/client/channel/channel_config.h — ChannelArguments checked and turned
// into typed settings. A known key with the wrong type or an out-of-range
// value is INVALID_ARGUMENT naming the key; unknown keys are ignored, as
// grpc does. docs/channel-args.md is the reference for every key here.
#ifndef RINGRPC_CLIENT_CHANNEL_CHANNEL_CONFIG_H_
#define RINGRPC_CLIENT_CHANNEL_CHANNEL_CONFIG_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ringrpc/base/time.h"
#include "ringrpc/client/channel/service_config.h"
#include "ringrpc/client/channel_arguments.h"
#include "ringrpc/client/runtime/event_loop.h"
#include "ringrpc/client/transport/http2_connection.h"
#include "ringrpc/pool/config.h"

namespace ringrpc {
class CallCredentials;  // ringrpc/client/call_credentials.h
namespace experimental {
class ClientInterceptorFactoryInterface;  // ringrpc/client/interceptor.h
}  // namespace experimental
}  // namespace ringrpc

namespace ringrpc::channel {

// gRPC's connection-backoff parameters.
struct BackoffConfig {
  Duration initial = std::chrono::seconds(1);
  double multiplier = 1.6;
  double jitter = 0.2;
  Duration max = std::chrono::seconds(120);
  Duration min_connect_timeout = std::chrono::seconds(20);
  bool operator==(const BackoffConfig&) const = default;
};

struct ChannelConfig {
  transport::ConnectionOptions connection;
  // grpc.ssl_target_name_override: the name TLS checks instead of the
  // authority's host.
  std::optional<std::string> ssl_target_name_override;
  // ringrpc.ssl_session_cache_size: how many addresses' TLS sessions the
  // channel keeps for its dials to resume (0: none).
  size_t ssl_session_cache_size = 64;
  BackoffConfig backoff;
  // The default service config's policy, else grpc.lb_policy_name's,
  // else pick_first (never null after ParseChannelArguments).
  std::shared_ptr<const LbConfig> lb_config;
  // grpc.lb_policy_name alone (else pick_first): the policy of a
  // resolver's service config that names none.
  std::shared_ptr<const LbConfig> lb_config_arg;
  Duration dns_min_time_between_resolutions = std::chrono::seconds(30);
  // grpc.client_idle_timeout_ms: a channel with no call this long goes
  // idle (connections closed, state IDLE). Unset: never (INT_MAX).
  std::optional<Duration> client_idle_timeout = std::chrono::minutes(30);
  // grpc.dns_ares_query_timeout: a DNS resolution's limit (0: c-ares' own
  // retries only).
  Duration dns_query_timeout = std::chrono::seconds(120);
  // The DNS resolver asks for _grpc_config TXT records: only when
  // grpc.service_config_disable_resolution is set to 0 (grpc++'s rule: off
  // unless asked for).
  bool dns_txt_service_config = false;
  // grpc.http_proxy (set: it wins over the environment; empty: no proxy)
  // and grpc.enable_http_proxy (false: no proxy at all). http_proxy.h.
  std::optional<std::string> http_proxy;
  bool enable_http_proxy = true;
  bool use_local_subchannel_pool = false;
  // CQ threads of the channel's own set; 0 = the process-wide shared set.
  size_t cq_threads = 0;
  std::optional<runtime::Backend> poller;
  // Per thread, per address: the pool's configuration.
  pool::PoolConfig pool;
  size_t reservoir_capacity = 0;  // 0: no reservoir
  // Requests' default encoding (a call's ClientContext may override it)
  // and zlib's level for it.
  transport::Compression compression = transport::Compression::kIdentity;
  int compression_level = transport::kDefaultCompressionLevel;
  // From CompositeChannelCredentials: run for every call.
  std::shared_ptr<CallCredentials> call_credentials;
  // ringrpc.allow_insecure_call_credentials: send call credentials over a
  // channel without TLS too (gRPC refuses to).
  bool allow_insecure_call_credentials = false;
  // ringrpc.call_metrics: per-call telemetry (gRFC A66's instruments, per
  // CQ thread; ringrpc/client/call_metrics.h). 0: none kept, a recorder still hears
  // every call.
  bool call_metrics = true;
  // grpc.service_config, parsed (null: none given); its methodConfig
  // entries apply per call (ringrpc/client/call_open.cc, ringrpc/client/unary_call.cc).
  std::shared_ptr<const ServiceConfig> service_config;
  // grpc.enable_retries: 0 turns off every retry (today the one
  // transparent retry of a unary call the server never saw).
  bool enable_retries = true;
  // grpc.per_rpc_retry_buffer_size: a unary request larger than this is
  // committed at once (never retried by a retryPolicy), as in grpc++.
  size_t per_rpc_retry_buffer_size = 256 << 10;
  // grpc.inhibit_health_checking: the service config's healthCheckConfig
  // is not acted on.
  bool inhibit_health_checking = false;
  // grpc.service_config_disable_resolution: a resolver's service config is
  // ignored; the default (service_config) always applies.
  bool service_config_disable_resolution = false;
  // CreateCustomChannelWithInterceptors' factories (null: none).
  std::shared_ptr<
      const std::vector<std::unique_ptr<experimental::ClientInterceptorFactoryInterface>>>
      interceptors;
};

absl::StatusOr<ChannelConfig> ParseChannelArguments(const ChannelArguments& args);

// The service to health-check addresses with under `sc` and `policy`
// (gRFC A17): sc's healthCheckConfig.serviceName, unless `inhibit` or a
// policy without health checks (pick_first, as in gRPC).
std::optional<std::string> HealthCheckServiceFor(const ServiceConfig* sc, const LbConfig& policy,
                                                 bool inhibit);

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_CHANNEL_CONFIG_H_
