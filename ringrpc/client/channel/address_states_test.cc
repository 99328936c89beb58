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

TEST(CountNoPick, CountsEachAddressOnceAndNamesWhatTheCallDoes) {
  using H = HealthReading;
  auto count = [](std::vector<AddressReading> r) {
    return CountNoPick(r.size(), [&](size_t i) { return r[i]; });
  };
  // A health answer that came after the pick looked (UNKNOWN, then
  // SERVING) reads usable: the call picks again rather than failing.
  NoPickCounts c = count({{C, H::kServing}, {F, H::kServing}, {R, H::kNotServing}});
  EXPECT_EQ(c.usable, 1);
  EXPECT_EQ(c.unreachable, 1);
  EXPECT_EQ(c.not_serving, 1);
  EXPECT_EQ(c.kind(), NoPickCounts::kUsable);
  EXPECT_EQ(count({{R, H::kUnchecked}}).kind(), NoPickCounts::kUsable);
  // Waiting for a first answer: the call waits, even beside a NOT_SERVING.
  c = count({{C, H::kUnknown}, {R, H::kNotServing}});
  EXPECT_EQ(c.waiting, 1);
  EXPECT_EQ(c.kind(), NoPickCounts::kHealthPending);
  // An unreachable address's stale answer counts for nothing.
  c = count({{F, H::kUnknown}, {F, H::kServing}, {R, H::kNotServing}});
  EXPECT_EQ(c.unreachable, 2);
  EXPECT_EQ(c.kind(), NoPickCounts::kNone);
  EXPECT_EQ(count({}).kind(), NoPickCounts::kNone);
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
