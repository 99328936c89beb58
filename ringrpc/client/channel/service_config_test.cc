// The service config parser: grpc++ 1.51's client schema, every problem
// named by its JSON path, unimplemented fields refused, unknown ones ignored.
#include "ringrpc/client/channel/service_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/channel/retry_throttle.h"

namespace ringrpc::channel {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

TEST(ServiceConfig, MethodEntriesMatchMethodThenServiceThenDefault) {
  absl::StatusOr<ServiceConfig> sc = ParseServiceConfig(R"({
    "loadBalancingConfig": [{"grpclb": {}}, {"round_robin": {}}],
    "methodConfig": [
      {"name": [{"service": "pkg.S", "method": "Slow"}], "timeout": "2.5s"},
      {"name": [{"service": "pkg.S"}, {"service": "pkg.T", "method": ""}],
       "waitForReady": true, "maxRequestMessageBytes": "1024",
       "maxResponseMessageBytes": 99999999999},
      {"name": [{}], "timeout": "0.000000001s"}
    ],
    "someFutureField": {"ignored": true}
  })");
  ASSERT_TRUE(sc.ok()) << sc.status();
  ASSERT_NE(sc->lb_config, nullptr);
  EXPECT_EQ(sc->lb_config->name(), "round_robin");  // the first one registered
  const MethodConfig* slow = sc->Find("/pkg.S/Slow");
  ASSERT_NE(slow, nullptr);
  EXPECT_EQ(slow->timeout, milliseconds(2500));
  EXPECT_FALSE(slow->wait_for_ready.has_value());  // the method's entry alone, not merged
  const MethodConfig* other = sc->Find("/pkg.S/Other");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->wait_for_ready, true);
  EXPECT_EQ(other->max_request_message_bytes, 1024u);
  EXPECT_EQ(other->max_response_message_bytes, 4294967295u);  // capped at uint32
  EXPECT_EQ(sc->Find("/pkg.T/Any"), other == nullptr ? nullptr : sc->Find("/pkg.T/Any"));
  EXPECT_EQ(sc->Find("/pkg.T/Any")->wait_for_ready, true);
  const MethodConfig* fallback = sc->Find("/elsewhere.U/M");
  ASSERT_NE(fallback, nullptr);
  EXPECT_EQ(fallback->timeout, std::chrono::nanoseconds(1));
}

TEST(ServiceConfig, LeastRequestWithItsChoiceCount) {
  absl::StatusOr<ServiceConfig> sc = ParseServiceConfig(
      R"({"loadBalancingConfig": [{"least_request_experimental": {"choiceCount": 3}}]})");
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_EQ(sc->lb_config->name(), "least_request_experimental");
  EXPECT_EQ(sc->lb_config->ToJson(), R"({"choiceCount":3})");
  sc = ParseServiceConfig(R"({"loadBalancingConfig": [{"least_request": {"choiceCount": 50}}]})");
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_EQ(sc->lb_config->ToJson(), R"({"choiceCount":10})");  // capped, as gRFC A48 says
  sc = ParseServiceConfig(
      R"({"loadBalancingConfig": [{"least_request_experimental": {"choiceCount": 1}}]})");
  ASSERT_FALSE(sc.ok());
  EXPECT_THAT(std::string(sc.status().message()),
              HasSubstr("loadBalancingConfig[0]: least_request_experimental.choiceCount"));
}

TEST(ServiceConfig, HealthCheckConfigNamesTheServiceToCheck) {
  absl::StatusOr<ServiceConfig> sc =
      ParseServiceConfig(R"({"healthCheckConfig": {"serviceName": "pkg.Svc"}})");
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_EQ(sc->health_check_service, "pkg.Svc");
  sc = ParseServiceConfig(R"({"healthCheckConfig": {"serviceName": ""}})");
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_EQ(sc->health_check_service, "");  // the whole server
  // As in gRPC: no serviceName, no health checking.
  sc = ParseServiceConfig(R"({"healthCheckConfig": {}})");
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_FALSE(sc->health_check_service.has_value());
}

TEST(ServiceConfig, NoDefaultEntryMeansNoConfigForOtherMethods) {
  absl::StatusOr<ServiceConfig> sc =
      ParseServiceConfig(R"({"methodConfig": [{"name": [{"service": "a.B"}], "timeout": "1s"}]})");
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_NE(sc->Find("/a.B/C"), nullptr);
  EXPECT_EQ(sc->Find("/a.Bx/C"), nullptr);
  EXPECT_EQ(sc->lb_config, nullptr);
}

TEST(ServiceConfig, ProblemsAreNamedByTheirJsonPath) {
  struct Case {
    const char* json;
    const char* says;
  } cases[] = {
      {"[1]", "not a JSON object"},
      {"{\"methodConfig\": {}}", "methodConfig: must be an array"},
      {R"({"methodConfig": [{"name": [{"service": "a.B"}], "timeout": "1.5"}]})",
       "methodConfig[0].timeout: \"1.5\" is not a duration"},
      {R"({"methodConfig": [{"name": [{"service": "a.B"}], "timeout": "-1s"}]})",
       "methodConfig[0].timeout"},
      {R"({"methodConfig": [{"name": [{"service": "a.B"}], "timeout": 5}]})",
       "methodConfig[0].timeout: 5 is not a duration"},
      {R"({"methodConfig": [{"name": [{"service": "a.B"}], "waitForReady": "yes"}]})",
       "methodConfig[0].waitForReady: must be true or false"},
      {R"({"methodConfig": [{"name": [{"service": "a.B"}], "maxRequestMessageBytes": -1}]})",
       "methodConfig[0].maxRequestMessageBytes: must be a non-negative integer"},
      {R"({"methodConfig": [{"name": [{"method": "M"}]}]})",
       "methodConfig[0].name[0]: method \"M\" without a service"},
      {R"({"methodConfig": [{"name": [{"service": "a.B"}]}, {"name": [{"service": "a.B"}]}]})",
       "methodConfig[1].name[0]: the name \"a.B/\" is also in methodConfig[0]"},
      {R"({"methodConfig": [{"name": [{"service": "a.B"}], "retryPolicy": {"maxAttempts": 3}}]})",
       "methodConfig[0].retryPolicy.initialBackoff: is required"},
      {R"({"methodConfig": [{"name": [{"service": "a.B"}], "retryPolicy": {"maxAttempts": 1,
          "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 2,
          "retryableStatusCodes": ["UNAVAILABLE"]}}]})",
       "methodConfig[0].retryPolicy.maxAttempts: is required and must be an integer of at least 2"},
      {R"({"methodConfig": [{"name": [{"service": "a.B"}], "retryPolicy": {"maxAttempts": 2,
          "initialBackoff": "0s", "maxBackoff": "1s", "backoffMultiplier": 2,
          "retryableStatusCodes": ["UNAVAILABLE"]}}]})",
       "methodConfig[0].retryPolicy.initialBackoff: \"0s\" is not a positive duration"},
      {R"({"methodConfig": [{"name": [{"service": "a.B"}], "retryPolicy": {"maxAttempts": 2,
          "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 2,
          "retryableStatusCodes": ["UNAVAILABLE", "NOPE"]}}]})",
       "methodConfig[0].retryPolicy.retryableStatusCodes[1]: \"NOPE\" is not a status code"},
      {R"({"methodConfig": [{"name": [{"service": "a.B"}], "retryPolicy": {"maxAttempts": 2,
          "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 2,
          "retryableStatusCodes": []}}]})",
       "methodConfig[0].retryPolicy.retryableStatusCodes: is required and must be a non-empty"},
      {R"({"methodConfig": [{"name": [{"service": "a.B"}], "hedgingPolicy": {}}]})",
       "methodConfig[0].hedgingPolicy.maxAttempts: is required"},
      {R"({"methodConfig": [{"hedgingPolicy": {"maxAttempts": 2, "hedgingDelay": "1"}}]})",
       "methodConfig[0].hedgingPolicy.hedgingDelay: \"1\" is not a duration (want e.g. \"1.5s\")"},
      {R"({"methodConfig": [{"hedgingPolicy": {"maxAttempts": 2,
           "nonFatalStatusCodes": ["UNAVAILABLE", "NOPE"]}}]})",
       "methodConfig[0].hedgingPolicy.nonFatalStatusCodes[1]: \"NOPE\" is not a status code"},
      {R"({"methodConfig": [{"hedgingPolicy": {"maxAttempts": 2},
           "retryPolicy": {"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s",
                           "backoffMultiplier": 2, "retryableStatusCodes": [14]}}]})",
       "methodConfig[0].hedgingPolicy: cannot be set with retryPolicy"},
      {R"({"retryThrottling": {"maxTokens": 1001, "tokenRatio": 0.1}})",
       "retryThrottling.maxTokens: is required and must be in (0, 1000]"},
      {R"({"retryThrottling": {"maxTokens": 10}})",
       "retryThrottling.tokenRatio: is required and must be above 0"},
      {R"({"healthCheckConfig": {"serviceName": 7}})",
       "healthCheckConfig.serviceName: must be a string"},
      {R"({"healthCheckConfig": []})", "healthCheckConfig: must be an object"},
      {R"({"loadBalancingConfig": [{"grpclb": {}}]})",
       "loadBalancingConfig: none of its policies is registered (registered: least_request, "
       "least_request_experimental, pick_first, round_robin)"},
      {R"({"loadBalancingPolicy": "weighted"})",
       "loadBalancingPolicy: unknown load balancing policy \"weighted\""},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ServiceConfig> sc = ParseServiceConfig(c.json);
    ASSERT_FALSE(sc.ok()) << c.json;
    EXPECT_EQ(sc.status().code(), absl::StatusCode::kInvalidArgument) << c.json;
    EXPECT_THAT(std::string(sc.status().message()), HasSubstr("grpc.service_config: ")) << c.json;
    EXPECT_THAT(std::string(sc.status().message()), HasSubstr(c.says)) << c.json;
  }
}

TEST(ServiceConfig, RetryPolicyAndThrottlingAsA6SaysThem) {
  absl::StatusOr<ServiceConfig> sc = ParseServiceConfig(
      R"({"methodConfig": [{"name": [{"service": "a.B"}],
          "retryPolicy": {"maxAttempts": 7, "initialBackoff": "0.1s", "maxBackoff": "2s",
                          "backoffMultiplier": 1.5,
                          "retryableStatusCodes": ["unavailable", 4, "RESOURCE_EXHAUSTED"]}}],
          "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}})");
  ASSERT_TRUE(sc.ok()) << sc.status();
  const RetryPolicy& r = *sc->Find("/a.B/C")->retry_policy;
  EXPECT_EQ(r.max_attempts, 5);  // capped as gRPC caps it
  EXPECT_EQ(r.initial_backoff, milliseconds(100));
  EXPECT_EQ(r.max_backoff, std::chrono::seconds(2));
  EXPECT_DOUBLE_EQ(r.backoff_multiplier, 1.5);
  EXPECT_TRUE(r.Retryable(14));
  EXPECT_TRUE(r.Retryable(4));
  EXPECT_TRUE(r.Retryable(8));
  EXPECT_FALSE(r.Retryable(13));
  ASSERT_TRUE(sc->retry_throttling.has_value());
  EXPECT_EQ(sc->retry_throttling->max_tokens_milli, 10000);
  EXPECT_EQ(sc->retry_throttling->token_ratio_milli, 100);
}

TEST(ServiceConfig, PerAttemptRecvTimeoutIsAPositiveDurationAndAllowsNoCodes) {
  absl::StatusOr<ServiceConfig> sc = ParseServiceConfig(
      R"({"methodConfig": [{"name": [{}],
          "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
                          "backoffMultiplier": 2, "retryableStatusCodes": [],
                          "perAttemptRecvTimeout": "0.25s"}}]})");
  ASSERT_TRUE(sc.ok()) << sc.status();
  const RetryPolicy& r = *sc->Find("/a.B/C")->retry_policy;
  EXPECT_EQ(r.per_attempt_recv_timeout, milliseconds(250));
  EXPECT_EQ(r.retryable_codes, 0u);
  for (const char* bad : {R"("0s")", R"("-1s")", "5"}) {
    absl::StatusOr<ServiceConfig> refused = ParseServiceConfig(absl::StrCat(
        R"({"methodConfig": [{"name": [{}],
            "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
                            "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"],
                            "perAttemptRecvTimeout": )",
        bad, "}}]}"));
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_THAT(std::string(refused.status().message()),
                HasSubstr("methodConfig[0].retryPolicy.perAttemptRecvTimeout"))
        << bad;
  }
  // Without it, the codes must name one.
  absl::StatusOr<ServiceConfig> empty = ParseServiceConfig(
      R"({"methodConfig": [{"name": [{}],
          "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
                          "backoffMultiplier": 2, "retryableStatusCodes": []}}]})");
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(std::string(empty.status().message()), HasSubstr("retryableStatusCodes"));
}

TEST(RetryThrottle, TakesATokenPerFailureAndStopsAtHalf) {
  RetryThrottle t(RetryThrottling{.max_tokens_milli = 4000, .token_ratio_milli = 500});
  EXPECT_TRUE(t.RecordFailure());   // 3 > 2
  EXPECT_FALSE(t.RecordFailure());  // 2, not above half
  EXPECT_FALSE(t.RecordFailure());  // 1
  t.RecordSuccess();                // 1.5
  t.RecordSuccess();                // 2
  t.RecordSuccess();                // 2.5
  EXPECT_EQ(t.tokens_milli(), 2500);
  for (int i = 0; i < 10; ++i) t.RecordSuccess();
  EXPECT_EQ(t.tokens_milli(), 4000);  // never above max
  for (int i = 0; i < 10; ++i) t.RecordFailure();
  EXPECT_EQ(t.tokens_milli(), 0);  // never below zero
}

TEST(ServiceConfig, HedgingPolicyAsA6SaysIt) {
  absl::StatusOr<ServiceConfig> sc = ParseServiceConfig(R"({"methodConfig": [{"name": [{}],
      "hedgingPolicy": {"maxAttempts": 9, "hedgingDelay": "0.02s",
                        "nonFatalStatusCodes": ["unavailable", 4]}}]})");
  ASSERT_TRUE(sc.ok()) << sc.status();
  const MethodConfig* mc = sc->Find("/a.B/C");
  ASSERT_NE(mc, nullptr);
  ASSERT_TRUE(mc->hedging_policy.has_value());
  EXPECT_EQ(mc->hedging_policy->max_attempts, 5);  // capped, as gRPC does
  EXPECT_EQ(mc->hedging_policy->hedging_delay, milliseconds(20));
  EXPECT_TRUE(mc->hedging_policy->NonFatal(14));
  EXPECT_TRUE(mc->hedging_policy->NonFatal(4));
  EXPECT_FALSE(mc->hedging_policy->NonFatal(13));
  // No delay: every copy at once; no codes: every failure is fatal.
  sc = ParseServiceConfig(
      R"({"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 3}}]})");
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_EQ(sc->Find("/a.B/C")->hedging_policy->hedging_delay, Duration::zero());
  EXPECT_EQ(sc->Find("/a.B/C")->hedging_policy->non_fatal_codes, 0u);
  // Retries off: ignored, as grpc++ ignores it.
  sc = ParseServiceConfig(
      R"({"methodConfig": [{"name": [{}], "hedgingPolicy": {"maxAttempts": 3}}]})",
      {.retries_enabled = false});
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_FALSE(sc->Find("/a.B/C")->hedging_policy.has_value());
}

TEST(ServiceConfig, RetryFieldsAreIgnoredWhenRetriesAreOffAsGrpcDoes) {
  absl::StatusOr<ServiceConfig> sc = ParseServiceConfig(
      R"({"methodConfig": [{"name": [{"service": "a.B"}], "timeout": "1s",
                            "retryPolicy": {"maxAttempts": 3, "initialBackoff": "1s",
                                            "maxBackoff": "1s", "backoffMultiplier": 2,
                                            "retryableStatusCodes": ["UNAVAILABLE"]}}],
          "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}})",
      {.retries_enabled = false});
  ASSERT_TRUE(sc.ok()) << sc.status();
  EXPECT_EQ(sc->Find("/a.B/C")->timeout, std::chrono::seconds(1));
  EXPECT_FALSE(sc->Find("/a.B/C")->retry_policy.has_value());
  EXPECT_FALSE(sc->retry_throttling.has_value());
}

TEST(ServiceConfig, JsonDurations) {
  EXPECT_EQ(ParseJsonDuration("1s"), std::chrono::seconds(1));
  EXPECT_EQ(ParseJsonDuration("0.5s"), milliseconds(500));
  EXPECT_EQ(ParseJsonDuration("86400.000000001s"),
            std::chrono::seconds(86400) + std::chrono::nanoseconds(1));
  // google.protobuf.Duration's largest: more than Duration holds, so forever.
  EXPECT_EQ(ParseJsonDuration("315576000000s"), Duration::max());
  for (const char* bad :
       {"", "s", "1", "1.s", ".5s", "1.0000000001s", "-1s", "1m", "1.5 s", "315576000001s"}) {
    EXPECT_FALSE(ParseJsonDuration(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace ringrpc::channel
