#include "ringrpc/client/channel/channel_config.h"

#include <gtest/gtest.h>

namespace ringrpc::channel {
namespace {

using std::chrono::milliseconds;

TEST(ChannelConfig, DefaultsFollowGrpc) {
  absl::StatusOr<ChannelConfig> c = ParseChannelArguments(ChannelArguments());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->connection.max_receive_message_size, 4u << 20);
  EXPECT_FALSE(c->connection.max_send_message_size.has_value());
  EXPECT_FALSE(c->connection.keepalive_time.has_value());
  EXPECT_EQ(c->lb_config->name(), "pick_first");
  EXPECT_EQ(c->backoff.initial, std::chrono::seconds(1));
  EXPECT_EQ(c->backoff.max, std::chrono::seconds(120));
  EXPECT_EQ(c->pool.max_concurrent_connects, 1u);  // A105
}

TEST(ChannelConfig, KnownKeysAreRead) {
  ChannelArguments a;
  a.SetInt("grpc.keepalive_time_ms", 30000);
  a.SetInt("grpc.keepalive_permit_without_calls", 1);
  a.SetMaxReceiveMessageSize(-1);
  a.SetMaxSendMessageSize(1024);
  a.SetLoadBalancingPolicyName("round_robin");
  a.SetInt("ringrpc.connections_per_thread", 4);
  a.SetInt("ringrpc.max_concurrent_streams", 50);
  a.SetString("not.a.known.key", "ignored");
  absl::StatusOr<ChannelConfig> c = ParseChannelArguments(a);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c->connection.keepalive_time, milliseconds(30000));
  EXPECT_TRUE(c->connection.keepalive_permit_without_calls);
  EXPECT_EQ(c->connection.max_receive_message_size, UINT32_MAX);
  EXPECT_EQ(*c->connection.max_send_message_size, 1024u);
  EXPECT_EQ(c->lb_config->name(), "round_robin");
  EXPECT_EQ(c->pool.max_size, 4u);
  EXPECT_EQ(c->pool.max_leases_per_connection, 50u);
  EXPECT_EQ(c->connection.max_concurrent_streams, 50u);
}

TEST(ChannelConfig, WrongTypeOrRangeNamesTheKey) {
  struct Case {
    std::function<void(ChannelArguments&)> set;
    std::string message;
  };
  std::vector<Case> cases = {
      {[](auto& a) { a.SetString("grpc.keepalive_time_ms", "10s"); },
       "grpc.keepalive_time_ms must be an integer"},
      {[](auto& a) { a.SetInt("grpc.keepalive_timeout_ms", 0); },
       "grpc.keepalive_timeout_ms must be in [1, "},
      {[](auto& a) { a.SetInt("grpc.keepalive_permit_without_calls", 2); },
       "grpc.keepalive_permit_without_calls must be in [0, 1], got 2"},
      {[](auto& a) { a.SetInt("grpc.max_receive_message_length", -2); },
       "grpc.max_receive_message_length must be in [-1, "},
      {[](auto& a) { a.SetInt("grpc.lb_policy_name", 1); }, "grpc.lb_policy_name must be a string"},
      {[](auto& a) { a.SetLoadBalancingPolicyName("weighted"); },
       "unknown load balancing policy \"weighted\""},
      {[](auto& a) { a.SetServiceConfigJSON("{not json"); }, "not a JSON object"},
      {[](auto& a) { a.SetInt("ringrpc.connections_per_thread", 0); },
       "ringrpc.connections_per_thread must be in [1, 1024], got 0"},
      {[](auto& a) { a.SetString("ringrpc.poller", "kqueue"); }, "ringrpc.poller"},
      {[](auto& a) { a.SetInt("ringrpc.reap_interval_ms", 0); },
       "ringrpc.reap_interval_ms must be in [1, 3600000], got 0"},
      {[](auto& a) { a.SetInt("ringrpc.reservoir_max_park_ms", 0); },
       "ringrpc.reservoir_max_park_ms must be in [1, "},
      {[](auto& a) { a.SetInt("ringrpc.reservoir_capacity", -1); },
       "ringrpc.reservoir_capacity must be in [0, 1048576], got -1"},
      {[](auto& a) {
         a.SetInt("ringrpc.min_idle_per_thread", 3);
         a.SetInt("ringrpc.connections_per_thread", 2);
       },
       "ringrpc.min_idle_per_thread (3) must be <= ringrpc.connections_per_thread (2)"},
  };
  for (const Case& c : cases) {
    ChannelArguments a;
    c.set(a);
    absl::StatusOr<ChannelConfig> r = ParseChannelArguments(a);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(r.status().message()).find(c.message), std::string::npos) << r.status();
  }
}

TEST(ChannelConfig, HealthCheckingNeedsAPolicyThatUsesItAndNoInhibition) {
  auto service = [](const char* json, int inhibit) {
    ChannelArguments a;
    a.SetServiceConfigJSON(json);
    if (inhibit >= 0) a.SetInt("grpc.inhibit_health_checking", inhibit);
    absl::StatusOr<ChannelConfig> c = ParseChannelArguments(a);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? HealthCheckServiceFor(c->service_config.get(), *c->lb_config,
                                          c->inhibit_health_checking)
                  : std::nullopt;
  };
  constexpr const char* kRoundRobin =
      R"({"loadBalancingConfig": [{"round_robin": {}}], "healthCheckConfig": {"serviceName": "s"}})";
  EXPECT_EQ(service(kRoundRobin, -1), "s");
  EXPECT_EQ(service(kRoundRobin, 0), "s");
  EXPECT_EQ(service(kRoundRobin, 1), std::nullopt);
  // pick_first never health-checks (gRFC A17, as gRPC).
  EXPECT_EQ(service(R"({"healthCheckConfig": {"serviceName": "s"}})", -1), std::nullopt);
  EXPECT_EQ(service(R"({"loadBalancingConfig": [{"least_request_experimental": {}}],
                        "healthCheckConfig": {"serviceName": ""}})",
                    -1),
            "");
}

TEST(ChannelConfig, ServiceConfigLoadBalancing) {
  ChannelArguments a;
  a.SetServiceConfigJSON(R"({"loadBalancingConfig":[{"weighted_target":{}},{"round_robin":{}}]})");
  EXPECT_EQ(ParseChannelArguments(a)->lb_config->name(), "round_robin");  // first registered
  ChannelArguments b;
  b.SetServiceConfigJSON(R"({"loadBalancingPolicy":"ROUND_ROBIN"})");
  EXPECT_EQ(ParseChannelArguments(b)->lb_config->name(), "round_robin");
  ChannelArguments c;
  c.SetServiceConfigJSON(R"({"loadBalancingConfig":[{"grpclb":{}}]})");
  EXPECT_EQ(ParseChannelArguments(c).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ringrpc::channel
