#include "client/channel/lb_policy.h"

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
    return AggregateState(s.size(), [&](size_t i) { return s[i]; }, true);
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

}  // namespace
}  // namespace ringrpc::channel
