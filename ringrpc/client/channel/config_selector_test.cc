// gRFC A21's choice of the service config in force, without a channel: a
// resolver's valid config wins, an invalid one keeps the last valid one or
// falls back to the default, and with neither every call gets an error.
#include "ringrpc/client/channel/config_selector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ringrpc::channel {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kDefault[] = R"({"methodConfig": [{"name": [{}], "timeout": "1s"}]})";
constexpr char kTwoSeconds[] = R"({"methodConfig": [{"name": [{}], "timeout": "2s"}]})";
constexpr char kInvalid[] = R"({"methodConfig": [{"name": [{}], "timeout": "soon"}]})";

// A selector started with `args` (kept alive beside it, as a channel does).
struct Selector {
  explicit Selector(ChannelArguments a) : args(std::move(a)) {
    absl::StatusOr<ChannelConfig> parsed = ParseChannelArguments(args);
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    if (parsed.ok()) config = *parsed;
    selector.Start(config, args, 2);
  }
  ChannelArguments args;
  ChannelConfig config;
  ConfigSelector selector;
};

ChannelArguments WithDefault(const char* json) {
  ChannelArguments args;
  args.SetServiceConfigJSON(json);
  return args;
}

ResolverResult WithConfig(std::optional<std::string> json) {
  ResolverResult r;
  r.service_config = std::move(json);
  return r;
}

// The timeout the config in force gives every method (nullopt: none).
std::optional<Duration> Timeout(const ActiveConfig& a) {
  if (a.service_config == nullptr) return std::nullopt;
  const MethodConfig* m = a.service_config->Find("/pkg.S/M");
  return m != nullptr ? m->timeout : std::nullopt;
}

TEST(ConfigSelector, NotStartedHasNothingInForce) {
  ConfigSelector selector;
  EXPECT_EQ(selector.active().service_config, nullptr);
  EXPECT_EQ(selector.active().lb_config, nullptr);
  EXPECT_EQ(selector.Apply(WithConfig(kTwoSeconds)).lb_config, nullptr);
  EXPECT_EQ(selector.errors(), 0u);
}

TEST(ConfigSelector, TheDefaultIsInForceUntilTheResolverGivesOne) {
  Selector s(WithDefault(kDefault));
  EXPECT_EQ(Timeout(s.selector.active()), std::chrono::seconds(1));
  ASSERT_NE(s.selector.active().lb_config, nullptr);
  EXPECT_EQ(s.selector.active().lb_config->name(), "pick_first");
  EXPECT_NE(s.selector.active().balancer, nullptr);

  const ActiveConfig& a = s.selector.Apply(WithConfig(kTwoSeconds));
  EXPECT_EQ(&a, &s.selector.active());
  EXPECT_EQ(Timeout(a), std::chrono::seconds(2));
  // The resolver stops giving one: the default again.
  EXPECT_EQ(Timeout(s.selector.Apply(WithConfig(std::nullopt))), std::chrono::seconds(1));
  EXPECT_TRUE(s.selector.last_error().ok());
}

TEST(ConfigSelector, TheSameConfigAgainIsTheSameActiveConfig) {
  Selector s(ChannelArguments{});
  const ActiveConfig* first = &s.selector.Apply(WithConfig(kTwoSeconds));
  s.selector.Apply(WithConfig(kDefault));
  // Its balancer (and the pickers each thread made with it) carry on.
  EXPECT_EQ(&s.selector.Apply(WithConfig(kTwoSeconds)), first);
  EXPECT_NE(&s.selector.Apply(WithConfig(kDefault)), first);
}

TEST(ConfigSelector, AnInvalidConfigKeepsTheLastValidOne) {
  Selector s(WithDefault(kDefault));
  const ActiveConfig* valid = &s.selector.Apply(WithConfig(kTwoSeconds));
  EXPECT_EQ(&s.selector.Apply(WithConfig(kInvalid)), valid);
  EXPECT_EQ(s.selector.errors(), 1u);
  EXPECT_EQ(s.selector.last_error().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(s.selector.last_error().message()),
              AllOf(HasSubstr("the resolver's service config is invalid: "), HasSubstr("timeout")));
  // A valid one clears the error, not the count.
  s.selector.Apply(WithConfig(kDefault));
  EXPECT_TRUE(s.selector.last_error().ok());
  EXPECT_EQ(s.selector.errors(), 1u);
}

TEST(ConfigSelector, AnInvalidFirstConfigFallsBackToTheDefault) {
  Selector s(WithDefault(kDefault));
  const ActiveConfig& a = s.selector.Apply(WithConfig(kInvalid));
  EXPECT_TRUE(a.error.ok());
  EXPECT_EQ(Timeout(a), std::chrono::seconds(1));
}

TEST(ConfigSelector, WithNoDefaultAnInvalidFirstConfigFailsCalls) {
  Selector s(ChannelArguments{});
  const ActiveConfig& a = s.selector.Apply(WithConfig(kInvalid));
  EXPECT_EQ(a.error.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(a.error.message()), HasSubstr("timeout"));
  // The resolver's own error (a TXT record it could not read) counts the same.
  ResolverResult unreadable;
  unreadable.service_config_error = absl::InvalidArgumentError("TXT record is not JSON");
  EXPECT_THAT(std::string(s.selector.Apply(unreadable).error.message()),
              HasSubstr("TXT record is not JSON"));
  EXPECT_EQ(s.selector.errors(), 2u);
  // A valid one ends it.
  EXPECT_TRUE(s.selector.Apply(WithConfig(kTwoSeconds)).error.ok());
}

TEST(ConfigSelector, DisabledResolutionKeepsTheDefault) {
  ChannelArguments args = WithDefault(kDefault);
  args.SetInt("grpc.service_config_disable_resolution", 1);
  Selector s(std::move(args));
  EXPECT_EQ(Timeout(s.selector.Apply(WithConfig(kTwoSeconds))), std::chrono::seconds(1));
  EXPECT_EQ(Timeout(s.selector.Apply(WithConfig(kInvalid))), std::chrono::seconds(1));
  EXPECT_EQ(s.selector.errors(), 0u);
}

TEST(ConfigSelector, ThePolicyComesFromTheResolverThenTheConfigThenTheArgument) {
  ChannelArguments args;
  args.SetLoadBalancingPolicyName("round_robin");
  Selector s(std::move(args));
  EXPECT_EQ(s.selector.active().lb_config->name(), "round_robin");
  // The config names its own policy.
  const ActiveConfig& named = s.selector.Apply(
      WithConfig(R"({"loadBalancingConfig": [{"least_request_experimental": {}}]})"));
  EXPECT_EQ(named.lb_config->name(), "least_request_experimental");
  // A config that names none: the argument's.
  EXPECT_EQ(s.selector.Apply(WithConfig(kTwoSeconds)).lb_config->name(), "round_robin");
  // The resolver's own typed policy wins over both.
  absl::StatusOr<std::shared_ptr<const LbConfig>> pick_first =
      FindLbPolicy("pick_first")->ParseConfig("{}");
  ASSERT_TRUE(pick_first.ok());
  ResolverResult r = WithConfig(R"({"loadBalancingConfig": [{"round_robin": {}}]})");
  r.lb_config = *pick_first;
  EXPECT_EQ(s.selector.Apply(r).lb_config->name(), "pick_first");
  // And without a config of the resolver's, over the default.
  ResolverResult bare;
  bare.lb_config = *pick_first;
  const ActiveConfig& own = s.selector.Apply(bare);
  EXPECT_EQ(own.lb_config->name(), "pick_first");
  EXPECT_EQ(own.service_config, nullptr);
}

TEST(ConfigSelector, HealthChecksAndThrottleFollowTheConfig) {
  Selector s(ChannelArguments{});
  EXPECT_EQ(s.selector.active().health_service, std::nullopt);
  EXPECT_EQ(s.selector.active().throttle, nullptr);
  const ActiveConfig& a = s.selector.Apply(WithConfig(R"({
    "loadBalancingConfig": [{"round_robin": {}}],
    "healthCheckConfig": {"serviceName": "pkg.Svc"},
    "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.5}})"));
  EXPECT_EQ(a.health_service, "pkg.Svc");
  EXPECT_NE(a.throttle, nullptr);
  // pick_first does not health-check (A17).
  EXPECT_EQ(s.selector.Apply(WithConfig(R"({"healthCheckConfig": {"serviceName": "pkg.Svc"}})"))
                .health_service,
            std::nullopt);
}

}  // namespace
}  // namespace ringrpc::channel
