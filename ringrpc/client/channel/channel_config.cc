#include "ringrpc/client/channel/channel_config.h"

#include <climits>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/lb/builtin.h"

namespace ringrpc::channel {
namespace {

using std::chrono::milliseconds;

class Reader {
 public:
  explicit Reader(const ChannelArguments& args) : args_(args) {}

  // Applies `set` to an int key in [lo, hi], if present.
  template <typename F>
  void Int(const std::string& key, int64_t lo, int64_t hi, F set) {
    if (!status_.ok()) return;
    auto it = args_.values().find(key);
    if (it == args_.values().end()) return;
    const int* v = std::get_if<int>(&it->second);
    if (v == nullptr) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat("channel argument ", key, " must be an integer, got a string"));
      return;
    }
    if (*v < lo || *v > hi) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat("channel argument ", key, " must be in [", lo, ", ", hi, "], got ", *v));
      return;
    }
    set(*v);
  }

  template <typename F>
  void String(const std::string& key, F set) {
    if (!status_.ok()) return;
    auto it = args_.values().find(key);
    if (it == args_.values().end()) return;
    const std::string* v = std::get_if<std::string>(&it->second);
    if (v == nullptr) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat("channel argument ", key, " must be a string, got an integer"));
      return;
    }
    absl::Status s = set(*v);
    if (!s.ok()) status_ = s;
  }

  absl::Status status() const { return status_; }

 private:
  const ChannelArguments& args_;
  absl::Status status_;
};

// Milliseconds from an integer argument.
Duration Ms(int v) { return Duration(milliseconds(v)); }

// grpc.* keys that shape one connection: limits and keepalive.
void ReadConnectionArgs(Reader& r, transport::ConnectionOptions& conn) {
  r.Int("grpc.max_receive_message_length", -1, INT_MAX,
        [&](int v) { conn.max_receive_message_size = v < 0 ? UINT32_MAX : uint32_t(v); });
  r.Int("grpc.max_send_message_length", -1, INT_MAX, [&](int v) {
    conn.max_send_message_size = v < 0 ? std::nullopt : std::optional<uint32_t>(v);
  });
  r.Int("grpc.max_metadata_size", 1, INT_MAX, [&](int v) { conn.max_metadata_size = v; });
  r.Int("grpc.keepalive_time_ms", 1, INT_MAX, [&](int v) {
    if (v != INT_MAX) conn.keepalive_time = Ms(v);  // INT_MAX: grpc's "off"
  });
  r.Int("grpc.keepalive_timeout_ms", 1, INT_MAX, [&](int v) { conn.keepalive_timeout = Ms(v); });
  r.Int("grpc.keepalive_permit_without_calls", 0, 1,
        [&](int v) { conn.keepalive_permit_without_calls = v == 1; });
  r.Int("grpc.http2.max_pings_without_data", 0, INT_MAX,
        [&](int v) { conn.max_pings_without_data = v; });
  // gRFC A18: with keepalive on, data unacknowledged for the keepalive
  // timeout ends the connection, as a PING unanswered that long does;
  // grpc.tcp_user_timeout_ms says otherwise (0: the kernel's default).
  if (conn.keepalive_time) {
    conn.tcp_user_timeout = std::chrono::duration_cast<milliseconds>(conn.keepalive_timeout);
  }
  r.Int("grpc.tcp_user_timeout_ms", 0, INT_MAX, [&](int v) {
    conn.tcp_user_timeout = v == 0 ? std::nullopt : std::optional<milliseconds>(v);
  });
}

// grpc.* keys about the channel: backoff, DNS, load balancing, service
// config, TLS name, authority and user agent.
void ReadChannelArgs(Reader& r, ChannelConfig& c) {
  auto& conn = c.connection;
  r.Int("grpc.initial_reconnect_backoff_ms", 1, INT_MAX, [&](int v) { c.backoff.initial = Ms(v); });
  r.Int("grpc.max_reconnect_backoff_ms", 1, INT_MAX, [&](int v) { c.backoff.max = Ms(v); });
  r.Int("grpc.min_reconnect_backoff_ms", 1, INT_MAX,
        [&](int v) { c.backoff.min_connect_timeout = Ms(v); });
  r.Int("grpc.dns_min_time_between_resolutions_ms", 0, INT_MAX,
        [&](int v) { c.dns_min_time_between_resolutions = Ms(v); });
  r.Int("grpc.use_local_subchannel_pool", 0, 1,
        [&](int v) { c.use_local_subchannel_pool = v == 1; });
  r.String("grpc.lb_policy_name", [&](const std::string& v) -> absl::Status {
    absl::StatusOr<std::shared_ptr<const LbConfig>> p = LbConfigNamed(v);
    if (!p.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("channel argument grpc.lb_policy_name: ", p.status().message()));
    }
    c.lb_config = *p;  // grpc.service_config's, read after, may name another
    c.lb_config_arg = *std::move(p);
    return absl::OkStatus();
  });
  r.Int("grpc.enable_retries", 0, 1, [&](int v) { c.enable_retries = v == 1; });
  r.Int("grpc.per_rpc_retry_buffer_size", 0, INT_MAX,
        [&](int v) { c.per_rpc_retry_buffer_size = size_t(v); });
  r.Int("grpc.inhibit_health_checking", 0, 1, [&](int v) { c.inhibit_health_checking = v == 1; });
  r.Int("grpc.service_config_disable_resolution", 0, 1, [&](int v) {
    c.service_config_disable_resolution = v == 1;
    c.dns_txt_service_config = v == 0;  // DNS asks for TXT only when told to, as grpc++
  });
  r.Int("grpc.dns_ares_query_timeout", 0, INT_MAX, [&](int v) { c.dns_query_timeout = Ms(v); });
  r.Int("grpc.enable_http_proxy", 0, 1, [&](int v) { c.enable_http_proxy = v == 1; });
  r.Int("grpc.client_idle_timeout_ms", 1, INT_MAX, [&](int v) {
    c.client_idle_timeout = v == INT_MAX ? std::nullopt : std::optional<Duration>(Ms(v));
  });
  r.String("grpc.http_proxy", [&](const std::string& v) -> absl::Status {
    c.http_proxy = v;
    return absl::OkStatus();
  });
  r.String("grpc.service_config", [&](const std::string& v) -> absl::Status {
    absl::StatusOr<ServiceConfig> sc = ParseServiceConfig(v, {.retries_enabled = c.enable_retries});
    if (!sc.ok()) return sc.status();
    if (sc->lb_config) c.lb_config = sc->lb_config;
    c.service_config = std::make_shared<const ServiceConfig>(std::move(*sc));
    return absl::OkStatus();
  });
  r.String("grpc.ssl_target_name_override", [&](const std::string& v) -> absl::Status {
    if (v.empty()) {
      return absl::InvalidArgumentError(
          "channel argument grpc.ssl_target_name_override must not be empty");
    }
    c.ssl_target_name_override = v;
    return absl::OkStatus();
  });
  r.String("grpc.default_authority", [&](const std::string& v) -> absl::Status {
    conn.authority = v;
    return absl::OkStatus();
  });
  r.String("grpc.primary_user_agent", [&](const std::string& v) -> absl::Status {
    conn.user_agent = absl::StrCat(v, " ", conn.user_agent);
    return absl::OkStatus();
  });
  // Requests' compression: grpc's algorithm numbers (0 none, 1 deflate,
  // 2 gzip) and levels (0 none, 1 low, 2 medium, 3 high -> zlib 1, 6, 9);
  // a level without an algorithm means gzip.
  std::optional<int> algorithm, level;
  r.Int("grpc.default_compression_algorithm", 0, 2, [&](int v) { algorithm = v; });
  r.Int("grpc.default_compression_level", 0, 3, [&](int v) { level = v; });
  if (level) {
    constexpr int kZlibLevel[] = {transport::kDefaultCompressionLevel, 1, 6, 9};
    c.compression_level = kZlibLevel[*level];
    if (!algorithm && *level > 0) algorithm = static_cast<int>(transport::Compression::kGzip);
  }
  if (algorithm) c.compression = static_cast<transport::Compression>(*algorithm);
}

// ringrpc.* keys: CQ threads, poller, the per-thread pool and the reservoir.
void ReadRingrpcArgs(Reader& r, ChannelConfig& c) {
  auto& conn = c.connection;
  r.Int("ringrpc.cq_threads", 0, 1024, [&](int v) { c.cq_threads = v; });
  r.Int("ringrpc.allow_insecure_call_credentials", 0, 1,
        [&](int v) { c.allow_insecure_call_credentials = v == 1; });
  r.Int("ringrpc.call_metrics", 0, 1, [&](int v) { c.call_metrics = v == 1; });
  r.String("ringrpc.poller", [&](const std::string& v) -> absl::Status {
    if (v == "io_uring")
      c.poller = runtime::Backend::kIoUring;
    else if (v == "epoll")
      c.poller = runtime::Backend::kEpoll;
    else
      return absl::InvalidArgumentError(absl::StrCat(
          "channel argument ringrpc.poller must be \"io_uring\" or \"epoll\", got \"", v, "\""));
    return absl::OkStatus();
  });
  // Read by least_request itself (ringrpc/client/lb/least_request.cc).
  r.String("ringrpc.least_request_scope", [&](const std::string& v) -> absl::Status {
    if (v != "thread" && v != "channel")
      return absl::InvalidArgumentError(absl::StrCat(
          "channel argument ringrpc.least_request_scope must be \"thread\" or \"channel\", got \"",
          v, "\""));
    return absl::OkStatus();
  });
  r.Int("ringrpc.connections_per_thread", 1, 1024, [&](int v) { c.pool.max_size = v; });
  r.Int("ringrpc.max_concurrent_streams", 1, INT_MAX, [&](int v) {
    conn.max_concurrent_streams = v;
    c.pool.max_leases_per_connection = v;
  });
  r.Int("ringrpc.connect_timeout_ms", 1, INT_MAX, [&](int v) { conn.connect_timeout = Ms(v); });
  r.Int("ringrpc.idle_timeout_ms", 1, INT_MAX, [&](int v) { c.pool.idle_timeout = Ms(v); });
  r.Int("ringrpc.max_connection_age_ms", 1, INT_MAX, [&](int v) { c.pool.max_lifetime = Ms(v); });
  r.Int("ringrpc.min_idle_per_thread", 0, 1024, [&](int v) { c.pool.min_idle = v; });
  r.Int("ringrpc.reservoir_capacity", 0, 1 << 20, [&](int v) { c.reservoir_capacity = v; });
  r.Int("ringrpc.reservoir_max_park_ms", 1, INT_MAX, [&](int v) { c.pool.max_park_time = Ms(v); });
  r.Int("ringrpc.reap_interval_ms", 1, 3600000, [&](int v) { c.pool.reap_interval = Ms(v); });
  r.Int("ringrpc.ssl_session_cache_size", 0, 65536,
        [&](int v) { c.ssl_session_cache_size = size_t(v); });
}

}  // namespace

std::optional<std::string> HealthCheckServiceFor(const ServiceConfig* sc, const LbConfig& policy,
                                                 bool inhibit) {
  if (inhibit || !policy.health_checks() || sc == nullptr) return std::nullopt;
  return sc->health_check_service;
}

absl::StatusOr<ChannelConfig> ParseChannelArguments(const ChannelArguments& args) {
  ChannelConfig c;
  c.pool.max_size = 2;
  c.pool.max_concurrent_connects = 1;  // gRPC A105: one attempt at a time
  c.pool.max_leases_per_connection = 1000;
  c.pool.lifetime_jitter = 0.05;
  // Unset: each attempt gets the backoff's connect deadline (gRPC's
  // connection-backoff.md); set, it bounds every attempt (subchannel.cc).
  c.connection.connect_timeout = Duration::max();
  Reader r(args);
  ReadConnectionArgs(r, c.connection);
  ReadChannelArgs(r, c);
  ReadRingrpcArgs(r, c);
  if (absl::Status s = r.status(); !s.ok()) return s;
  c.connection.socket_mutator = args.socket_mutator();
  if (c.lb_config_arg == nullptr) c.lb_config_arg = lb::PickFirstConfig();
  if (c.lb_config == nullptr) c.lb_config = c.lb_config_arg;
  if (c.pool.min_idle > c.pool.max_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("channel argument ringrpc.min_idle_per_thread (", c.pool.min_idle,
                     ") must be <= ringrpc.connections_per_thread (", c.pool.max_size, ")"));
  }
  if (absl::Status s = pool::ValidatePoolConfig(c.pool); !s.ok()) return s;
  return c;
}

}  // namespace ringrpc::channel
