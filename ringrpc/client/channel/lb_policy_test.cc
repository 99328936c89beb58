#include "ringrpc/client/channel/lb_policy.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ringrpc::channel {
namespace {

constexpr ConnectivityState I = ConnectivityState::kIdle;
constexpr ConnectivityState C = ConnectivityState::kConnecting;
constexpr ConnectivityState R = ConnectivityState::kReady;
constexpr ConnectivityState F = ConnectivityState::kTransientFailure;

// `picks` picks over `states`, as a string of indices ("-" for none).
std::string Picks(AddressPicker& p, const std::vector<ConnectivityState>& states, int picks) {
  std::string out;
  for (int k = 0; k < picks; ++k) {
    std::optional<size_t> i = p.Pick(states.size(), [&](size_t j) { return states[j]; });
    out += i ? std::to_string(*i) : "-";
  }
  return out;
}

TEST(PickFirst, TakesTheFirstReadyAddress) {
  AddressPicker p(LbPolicy::kPickFirst);
  EXPECT_EQ(Picks(p, {I, F, R, R}, 3), "222");
}

TEST(PickFirst, WithNoneReadyTakesTheFirstNotFailing) {
  AddressPicker p(LbPolicy::kPickFirst);
  EXPECT_EQ(Picks(p, {F, C, I}, 2), "11");
  EXPECT_EQ(Picks(p, {F, F, I}, 1), "2");
}

TEST(PickFirst, WithEveryAddressFailingTakesTheFirst) {
  AddressPicker p(LbPolicy::kPickFirst);
  EXPECT_EQ(Picks(p, {F, F, F}, 2), "00");
}

TEST(AddressPicker, NoAddressesIsNoPick) {
  AddressPicker pf(LbPolicy::kPickFirst), rr(LbPolicy::kRoundRobin);
  EXPECT_EQ(Picks(pf, {}, 1), "-");
  EXPECT_EQ(Picks(rr, {}, 1), "-");
}

TEST(RoundRobin, RotatesOverEveryAddressIdleOnesIncluded) {
  AddressPicker p(LbPolicy::kRoundRobin);
  EXPECT_EQ(Picks(p, {R, I, C}, 7), "0120120");
}

TEST(RoundRobin, SkipsFailingAddresses) {
  AddressPicker p(LbPolicy::kRoundRobin);
  EXPECT_EQ(Picks(p, {R, F, I, F}, 6), "020202");
}

TEST(RoundRobin, WithEveryAddressFailingStillRotates) {
  AddressPicker p(LbPolicy::kRoundRobin);
  EXPECT_EQ(Picks(p, {F, F, F}, 4), "0120");
}

TEST(RoundRobin, CursorCarriesOverAListChangeUntilReset) {
  AddressPicker p(LbPolicy::kRoundRobin);
  EXPECT_EQ(Picks(p, {R, R, R}, 2), "01");
  EXPECT_EQ(Picks(p, {R, R, R, R}, 2), "23");
  p.Reset();
  EXPECT_EQ(Picks(p, {R, R}, 1), "0");
}

TEST(AnotherUsable, LooksAtEveryAddressButTheOneGiven) {
  std::vector<ConnectivityState> s = {F, R, F};
  auto of = [&](size_t i) { return s[i]; };
  EXPECT_TRUE(AnotherUsable(3, 0, of));
  EXPECT_FALSE(AnotherUsable(3, 1, of));
  EXPECT_TRUE(AnotherUsable(3, 3, of));  // `except` not in the list
  EXPECT_FALSE(AnotherUsable(0, 0, of));
}

TEST(AggregateState, FollowsGrpcsOrderReadyConnectingIdleFailure) {
  auto agg = [](std::vector<ConnectivityState> s) {
    return AggregateState(
        s.size(), [&](size_t i) { return s[i]; }, true);
  };
  EXPECT_EQ(agg({F, I, C, R}), R);
  EXPECT_EQ(agg({F, I, C}), C);
  EXPECT_EQ(agg({F, I}), I);
  EXPECT_EQ(agg({F, F}), F);
  EXPECT_EQ(agg({ConnectivityState::kShutdown}), F);
}

TEST(AggregateState, NoAddressesIsIdleBeforeTheFirstAnswerAndFailureAfter) {
  auto none = [](size_t) { return R; };
  EXPECT_EQ(AggregateState(0, none, false), I);
  EXPECT_EQ(AggregateState(0, none, true), F);
}

TEST(LeastRequest, ComparesItsDrawsAndTakesTheLeastLoaded) {
  // With as many draws as addresses (and more), the least loaded one wins
  // nearly always; with two draws the most loaded is never taken when it
  // is drawn alongside any other.
  std::vector<uint32_t> load = {5, 0, 7, 3};
  std::vector<ConnectivityState> states = {R, R, R, R};
  AddressPicker wide(LbPolicy::kLeastRequest, 10, 42);
  int zero = 0;
  for (int k = 0; k < 200; ++k) {
    std::optional<size_t> i = wide.Pick(
        4, [&](size_t j) { return states[j]; }, [&](size_t j) { return load[j]; });
    ASSERT_TRUE(i.has_value());
    zero += *i == 1;
  }
  EXPECT_GE(zero, 180);  // missing index 1 in all 10 draws: 0.75^10 = 6% of picks
  AddressPicker p2c(LbPolicy::kLeastRequest, 2, 7);
  int counts[4] = {0, 0, 0, 0};
  for (int k = 0; k < 4000; ++k) {
    ++counts[*p2c.Pick(
        4, [&](size_t j) { return states[j]; }, [&](size_t j) { return load[j]; })];
  }
  // Index 2 (load 7) is taken only when both draws are 2: 1/16 of picks.
  EXPECT_LT(counts[2], 400);
  EXPECT_GT(counts[1], counts[3]);
  EXPECT_GT(counts[3], counts[0]);
}

TEST(LeastRequest, SkipsFailingAddressesUnlessAllFail) {
  std::vector<uint32_t> load = {0, 9};
  AddressPicker p(LbPolicy::kLeastRequest, 2, 3);
  std::vector<ConnectivityState> states = {F, R};
  for (int k = 0; k < 50; ++k) {
    EXPECT_EQ(p.Pick(
                  2, [&](size_t j) { return states[j]; }, [&](size_t j) { return load[j]; }),
              1u);
  }
  states = {F, F};
  EXPECT_TRUE(p.Pick(
                   2, [&](size_t j) { return states[j]; }, [&](size_t j) { return load[j]; })
                  .has_value());
  EXPECT_FALSE(p.Pick(
                    0, [&](size_t j) { return states[j]; }, [&](size_t j) { return load[j]; })
                   .has_value());
}

}  // namespace
}  // namespace ringrpc::channel
