#include "ringrpc/client/channel/address_states.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ringrpc::channel {
namespace {

constexpr ConnectivityState I = ConnectivityState::kIdle;
constexpr ConnectivityState C = ConnectivityState::kConnecting;
constexpr ConnectivityState R = ConnectivityState::kReady;
constexpr ConnectivityState F = ConnectivityState::kTransientFailure;

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

}  // namespace
}  // namespace ringrpc::channel
