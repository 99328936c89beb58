#include "ringrpc/pool/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

namespace ringrpc::pool {
namespace {

using std::chrono::seconds;

TEST(PoolConfig, DefaultsAreValid) { EXPECT_TRUE(ValidatePoolConfig(PoolConfig{}).ok()); }

struct BadCase {
  std::string name;
  std::function<void(PoolConfig&)> mutate;
  std::string message;
};

TEST(PoolConfig, EachOutOfRangeFieldIsNamedInTheError) {
  std::vector<BadCase> cases = {
      {"max_size", [](PoolConfig& c) { c.max_size = 0; }, "max_size must be >= 1, got 0"},
      {"min_idle",
       [](PoolConfig& c) {
         c.max_size = 2;
         c.min_idle = 3;
       },
       "min_idle (3) must be <= max_size (2)"},
      {"capacity", [](PoolConfig& c) { c.max_leases_per_connection = 0; },
       "max_leases_per_connection must be >= 1, got 0"},
      {"connects", [](PoolConfig& c) { c.max_concurrent_connects = 0; },
       "max_concurrent_connects must be >= 1 when set, got 0"},
      {"max_uses", [](PoolConfig& c) { c.max_uses = 0; }, "max_uses must be >= 1 when set, got 0"},
      {"acquire_timeout", [](PoolConfig& c) { c.acquire_timeout = seconds(0); },
       "acquire_timeout must be > 0 when set, got 0ms"},
      {"idle_timeout", [](PoolConfig& c) { c.idle_timeout = seconds(-1); },
       "idle_timeout must be > 0 when set, got -1000ms"},
      {"max_lifetime", [](PoolConfig& c) { c.max_lifetime = seconds(0); },
       "max_lifetime must be > 0 when set"},
      {"reap_interval", [](PoolConfig& c) { c.reap_interval = seconds(0); },
       "reap_interval must be > 0, got 0ms"},
      {"max_park_time", [](PoolConfig& c) { c.max_park_time = seconds(-2); },
       "max_park_time must be > 0"},
      {"jitter", [](PoolConfig& c) { c.lifetime_jitter = 0.75; },
       "lifetime_jitter must be in [0, 0.5], got 0.75"},
      {"jitter_nan", [](PoolConfig& c) { c.lifetime_jitter = std::nan(""); },
       "lifetime_jitter must be in [0, 0.5]"},
  };
  for (const BadCase& bad : cases) {
    PoolConfig c;
    bad.mutate(c);
    absl::Status s = ValidatePoolConfig(c);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad.name;
    EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr(bad.message)) << bad.name;
  }
}

TEST(PoolConfig, ReaperAndClockOnlyWhenATimeLimitOrMinIdleIsSet) {
  PoolConfig c;
  EXPECT_FALSE(c.NeedsReaper());
  EXPECT_FALSE(c.NeedsClock());
  c.min_idle = 1;
  EXPECT_TRUE(c.NeedsReaper());
  EXPECT_FALSE(c.NeedsClock());
  c = PoolConfig{};
  c.idle_timeout = seconds(1);
  EXPECT_TRUE(c.NeedsReaper());
  EXPECT_TRUE(c.NeedsClock());
  c = PoolConfig{};
  c.max_uses = 5;  // counted, not timed
  EXPECT_FALSE(c.NeedsReaper());
}

}  // namespace
}  // namespace ringrpc::pool
