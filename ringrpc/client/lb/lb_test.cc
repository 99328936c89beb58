// ringrpc's own policies through the public interface, and the registry;
// no channel, no sockets.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ringrpc/client/channel_arguments.h"
#include "ringrpc/client/lb/builtin.h"
#include "ringrpc/client/lb/lb_policy.h"

namespace ringrpc::lb {
namespace {

constexpr ConnectivityState I = GRPC_CHANNEL_IDLE;
constexpr ConnectivityState C = GRPC_CHANNEL_CONNECTING;
constexpr ConnectivityState R = GRPC_CHANNEL_READY;
constexpr ConnectivityState F = GRPC_CHANNEL_TRANSIENT_FAILURE;

// A list over plain vectors: "a0", "a1", ... with a shared counter each.
class Addresses final : public LbAddressList {
 public:
  explicit Addresses(std::vector<ConnectivityState> states)
      : states_(std::move(states)), counts_(states_.size()) {
    for (size_t i = 0; i < states_.size(); ++i) names_.push_back("a" + std::to_string(i));
  }
  size_t size() const override { return states_.size(); }
  ConnectivityState state(size_t i) const override { return states_[i]; }
  const std::string& address(size_t i) const override { return names_[i]; }
  const void* id(size_t i) const override { return &names_[i]; }
  std::atomic<uint32_t>& shared_count(size_t i) const override { return counts_[i]; }

 private:
  std::vector<ConnectivityState> states_;
  std::vector<std::string> names_;
  mutable std::vector<std::atomic<uint32_t>> counts_;
};

std::unique_ptr<LbPicker> PickerOf(const std::shared_ptr<const LbConfig>& c, uint64_t seed = 1,
                                   const ChannelArguments* args = nullptr) {
  static std::vector<std::shared_ptr<LbBalancer>> keep;  // trackers point into balancers
  keep.push_back(c->NewBalancer({.cq_threads = 1, .channel_args = args}));
  return keep.back()->NewPicker({.thread = 0, .seed = seed});
}

// `picks` picks over `states`, as a string of indices.
std::string Picks(LbPicker& p, const std::vector<ConnectivityState>& states, int picks) {
  Addresses a(states);
  std::string out;
  for (int k = 0; k < picks; ++k) {
    std::optional<LbPick> pick = p.Pick(a);
    out += pick ? std::to_string(pick->index) : "-";
  }
  return out;
}

TEST(PickFirst, TakesTheFirstReadyAddress) {
  auto p = PickerOf(PickFirstConfig());
  EXPECT_EQ(Picks(*p, {I, F, R, R}, 3), "222");
}

TEST(PickFirst, WithNoneReadyTakesTheFirstNotFailingElseTheFirst) {
  auto p = PickerOf(PickFirstConfig());
  EXPECT_EQ(Picks(*p, {F, C, I}, 2), "11");
  EXPECT_EQ(Picks(*p, {F, F, I}, 1), "2");
  EXPECT_EQ(Picks(*p, {F, F, F}, 2), "00");
}

TEST(PickFirst, HasNoHealthChecksAndRoundRobinHas) {
  EXPECT_FALSE(PickFirstConfig()->health_checks());
  EXPECT_TRUE(RoundRobinConfig()->health_checks());
  EXPECT_TRUE(LeastRequestConfig(2)->health_checks());
}

TEST(RoundRobin, RotatesOverEveryAddressIdleOnesIncluded) {
  auto p = PickerOf(RoundRobinConfig());
  EXPECT_EQ(Picks(*p, {R, I, C}, 7), "0120120");
}

TEST(RoundRobin, SkipsFailingAddressesAndRotatesWhenAllFail) {
  auto p = PickerOf(RoundRobinConfig());
  EXPECT_EQ(Picks(*p, {R, F, I, F}, 6), "020202");
  auto q = PickerOf(RoundRobinConfig());
  EXPECT_EQ(Picks(*q, {F, F, F}, 4), "0120");
}

TEST(RoundRobin, CursorCarriesOverAListChange) {
  auto p = PickerOf(RoundRobinConfig());
  EXPECT_EQ(Picks(*p, {R, R, R}, 2), "01");
  EXPECT_EQ(Picks(*p, {R, R, R, R}, 2), "23");
  EXPECT_EQ(Picks(*p, {R, R}, 1), "0");
}

TEST(LeastRequest, ComparesItsDrawsAndTakesTheLeastLoaded) {
  // Loads set through the trackers: each started call counts until it
  // finishes.
  Addresses a({R, R, R, R});
  std::vector<std::unique_ptr<LbCallTracker>> held;
  auto load = [&](LbPicker& p, size_t index, int n) {
    // Started calls on `index`: pick until it comes up, start those.
    while (n > 0) {
      std::optional<LbPick> pick = p.Pick(a);
      ASSERT_TRUE(pick && pick->tracker);
      if (pick->index != index) continue;
      pick->tracker->Start();
      held.push_back(std::move(pick->tracker));
      --n;
    }
  };
  // No calls yet: two draws spread the picks evenly.
  auto p = PickerOf(LeastRequestConfig(2), 7);
  int counts[4] = {0, 0, 0, 0};
  for (int k = 0; k < 4000; ++k) ++counts[p->Pick(a)->index];
  for (int c : counts) EXPECT_GT(c, 700);  // no load yet: uniform
  // 10 draws among 4: the unloaded address wins nearly always once the
  // others carry calls.
  auto q = PickerOf(LeastRequestConfig(10), 3);
  load(*q, 0, 5);
  load(*q, 2, 7);
  load(*q, 3, 3);
  int one = 0;
  for (int k = 0; k < 200; ++k) one += q->Pick(a)->index == 1;
  EXPECT_GE(one, 180);  // missing index 1 in all 10 draws: 0.75^10 = 6% of picks
  for (auto& t : held) t->Finish();
  held.clear();
  int spread[4] = {0, 0, 0, 0};
  for (int k = 0; k < 400; ++k) ++spread[q->Pick(a)->index];
  EXPECT_LT(spread[1], 200);  // finished calls count no more
}

TEST(LeastRequest, SkipsFailingAddressesUnlessAllFail) {
  auto p = PickerOf(LeastRequestConfig(2), 3);
  EXPECT_EQ(Picks(*p, {F, R}, 50), std::string(50, '1'));
  Addresses all_failing({F, F});
  EXPECT_TRUE(p->Pick(all_failing).has_value());
}

TEST(LeastRequest, ChannelScopeCountsInTheSharedCounter) {
  ChannelArguments args;
  args.SetString("ringrpc.least_request_scope", "channel");
  auto p = PickerOf(LeastRequestConfig(2), 5, &args);
  Addresses a({R, R});
  std::optional<LbPick> pick = p->Pick(a);
  ASSERT_TRUE(pick && pick->tracker);
  pick->tracker->Start();
  EXPECT_EQ(a.shared_count(pick->index).load(), 1u);
  pick->tracker->Finish();
  EXPECT_EQ(a.shared_count(pick->index).load(), 0u);
  // The thread scope leaves the shared counters alone.
  auto t = PickerOf(LeastRequestConfig(2), 5);
  std::optional<LbPick> other = t->Pick(a);
  other->tracker->Start();
  EXPECT_EQ(a.shared_count(other->index).load(), 0u);
  other->tracker->Finish();
}

TEST(LbRegistry, HasRingrpcsPoliciesAndParsesTheirConfigs) {
  std::vector<std::string> names = LbPolicyNames();
  for (const char* n :
       {"least_request", "least_request_experimental", "pick_first", "round_robin"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
  auto lr = FindLbPolicy("least_request_experimental");
  ASSERT_NE(lr, nullptr);
  absl::StatusOr<std::shared_ptr<const LbConfig>> c = lr->ParseConfig(R"({"choiceCount": 40})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->ToJson(), R"({"choiceCount":10})");  // A48's cap
  c = lr->ParseConfig(R"({"choiceCount": 1})");
  EXPECT_EQ(c.status().message(),
            "least_request_experimental.choiceCount: must be an integer of at least 2");
  c = FindLbPolicy("round_robin")->ParseConfig("[]");
  EXPECT_EQ(c.status().message(), "round_robin: the policy's config must be a JSON object, got []");
  EXPECT_EQ(FindLbPolicy("no_such_policy"), nullptr);
}

class AlwaysLast final : public LbPicker {
 public:
  std::optional<LbPick> Pick(const LbAddressList& a) override {
    return LbPick{.index = a.size() - 1};
  }
};

TEST(LbRegistry, ARegisteredPolicyIsFoundAndReplacesOneOfItsName) {
  struct Config final : LbConfig {
    std::string_view name() const override { return "always_last_test"; }
    std::string ToJson() const override { return "{}"; }
    std::shared_ptr<LbBalancer> NewBalancer(const LbBalancerArgs&) const override {
      struct B final : LbBalancer {
        std::unique_ptr<LbPicker> NewPicker(const LbPickerArgs&) override {
          return std::make_unique<AlwaysLast>();
        }
      };
      return std::make_shared<B>();
    }
  };
  RegisterLbPolicy(std::make_shared<PlainFactory>(std::make_shared<Config>()));
  auto f = FindLbPolicy("always_last_test");
  ASSERT_NE(f, nullptr);
  auto p = PickerOf(*f->ParseConfig("{}"));
  EXPECT_EQ(Picks(*p, {R, R, R}, 2), "22");
}

}  // namespace
}  // namespace ringrpc::lb
