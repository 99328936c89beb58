// Seeded property test: random operation sequences over three simulated
// threads' shards, every invariant checked after every step (see
// ringrpc/pool/testing/pool_driver.h for the operations and the invariants).
//
// RINGRPC_PROPERTY_STEPS sets the total number of steps (default 200,000,
// what CI runs); tools/pool-property.sh runs millions.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>

#include "ringrpc/pool/testing/pool_driver.h"

namespace ringrpc::pool {
namespace {

uint64_t TotalSteps() {
  const char* env = std::getenv("RINGRPC_PROPERTY_STEPS");
  return env ? std::strtoull(env, nullptr, 10) : 200000;
}

uint64_t BaseSeed() {
  const char* env = std::getenv("RINGRPC_PROPERTY_SEED");
  return env ? std::strtoull(env, nullptr, 10) : 20261129;
}

TEST(PoolProperty, InvariantsHoldAfterEveryStep) {
  const uint64_t total = TotalSteps();
  constexpr uint64_t kStepsPerRun = 400;
  uint64_t done = 0;
  PoolMetrics sum;
  for (uint64_t run = 0; done < total; ++run) {
    std::mt19937_64 rng(BaseSeed() + run);
    std::array<uint8_t, 4> cfg;
    for (uint8_t& b : cfg) b = static_cast<uint8_t>(rng());
    testing::PoolDriver d(cfg);
    for (uint64_t i = 0; i < kStepsPerRun && done < total; ++i, ++done) {
      uint8_t op = static_cast<uint8_t>(rng());
      uint8_t arg = static_cast<uint8_t>(rng());
      d.Step(op, arg);
      absl::Status s = d.Check();
      ASSERT_TRUE(s.ok()) << "seed " << BaseSeed() + run << " step " << i << " op " << int(op % 16)
                          << ": " << s;
    }
    absl::Status s = d.Finish();
    ASSERT_TRUE(s.ok()) << "seed " << BaseSeed() + run << " at finish: " << s;
    PoolMetrics m = d.Metrics();
    sum.created += m.created;
    sum.acquires += m.acquires;
    sum.waits += m.waits;
    sum.timeouts += m.timeouts;
    sum.parks += m.parks;
    sum.unparked += m.unparked;
    for (size_t i = 0; i < kRetireReasonCount; ++i) sum.retired[i] += m.retired[i];
  }
  // The operations reached the interesting paths (a property test that
  // never parks or times out proves little about parking or timeouts).
  std::printf("property test: %llu steps; %s\n", static_cast<unsigned long long>(done),
              sum.ToString().c_str());
  if (total >= 100000) {
    EXPECT_GT(sum.waits, 0u);
    EXPECT_GT(sum.timeouts, 0u);
    EXPECT_GT(sum.parks, 0u);
    EXPECT_GT(sum.unparked, 0u);
    for (RetireReason r :
         {RetireReason::kGeneration, RetireReason::kMaxLifetime, RetireReason::kIdleTimeout,
          RetireReason::kMaxUses, RetireReason::kPoisoned, RetireReason::kPoolClosed,
          RetireReason::kRecycleFailed, RetireReason::kDetachFailed, RetireReason::kAttachFailed,
          RetireReason::kShardGone}) {
      EXPECT_GT(sum.retired[size_t(r)], 0u) << RetireReasonName(r);
    }
  }
}

}  // namespace
}  // namespace ringrpc::pool
