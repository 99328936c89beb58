#include "ringrpc/client/channel/subchannel.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ringrpc/client/channel/channel_config.h"
#include "ringrpc/client/runtime/cq_threads.h"

namespace ringrpc::channel {
namespace {

using std::chrono::seconds;

// One change per entry, each to a field that shapes a connection.
std::vector<std::pair<std::string, std::function<void(ChannelConfig&)>>> Changes() {
  return {
      {"authority", [](ChannelConfig& c) { c.connection.authority = "other"; }},
      {"max_receive", [](ChannelConfig& c) { c.connection.max_receive_message_size = 1; }},
      {"keepalive_time", [](ChannelConfig& c) { c.connection.keepalive_time = seconds(9); }},
      {"backoff.max", [](ChannelConfig& c) { c.backoff.max = seconds(3); }},
      {"pool.max_size", [](ChannelConfig& c) { c.pool.max_size = 3; }},
      // The two the hand-written key once left out.
      {"pool.max_uses", [](ChannelConfig& c) { c.pool.max_uses = 7; }},
      {"pool.lifetime_jitter", [](ChannelConfig& c) { c.pool.lifetime_jitter = 0.25; }},
      {"pool.acquire_timeout", [](ChannelConfig& c) { c.pool.acquire_timeout = seconds(1); }},
      {"reservoir_capacity", [](ChannelConfig& c) { c.reservoir_capacity = 4; }},
  };
}

TEST(SharingKey, EqualConfigsGiveEqualKeys) {
  ChannelConfig a, b;
  auto key = [](const char* address, const ChannelConfig& c, const void* cq,
                std::optional<std::string> health = std::nullopt) {
    return SharingKey::Of(address, c, cq, std::move(health));
  };
  EXPECT_TRUE(key("127.0.0.1:1", a, nullptr) == key("127.0.0.1:1", b, nullptr));
  EXPECT_FALSE(key("127.0.0.1:1", a, nullptr) == key("127.0.0.1:2", b, nullptr));
  int cq = 0;
  EXPECT_FALSE(key("127.0.0.1:1", a, nullptr) == key("127.0.0.1:1", b, &cq));
  // Health checked another way (or not at all): not the same subchannel.
  EXPECT_FALSE(key("127.0.0.1:1", a, nullptr, "svc") == key("127.0.0.1:1", b, nullptr));
  EXPECT_FALSE(key("127.0.0.1:1", a, nullptr, "svc") == key("127.0.0.1:1", b, nullptr, ""));
  EXPECT_TRUE(key("127.0.0.1:1", a, nullptr, "svc") == key("127.0.0.1:1", b, nullptr, "svc"));
}

TEST(SharingKey, EveryConnectionShapingFieldIsPartOfTheKey) {
  ChannelConfig base;
  for (const auto& [name, change] : Changes()) {
    ChannelConfig changed = base;
    change(changed);
    EXPECT_FALSE(SharingKey::Of("a:1", base, nullptr, std::nullopt) ==
                 SharingKey::Of("a:1", changed, nullptr, std::nullopt))
        << name << " is not part of the sharing key";
  }
}

TEST(SubchannelRegistry, ChannelsDifferingOnlyInMaxUsesGetTheirOwnSubchannel) {
  auto cq = runtime::CqThreads::Start({.threads = 1});
  ASSERT_TRUE(cq.ok()) << cq.status();
  absl::StatusOr<transport::Address> addr = transport::Address::Parse("127.0.0.1:1");
  ASSERT_TRUE(addr.ok());
  ChannelConfig plain, limited;
  limited.pool.max_uses = 5;
  SubchannelRegistry& registry = SubchannelRegistry::Global();
  size_t before = registry.shared_count();
  auto a = registry.Attach(*addr, plain, **cq, false, 1, {});
  auto b = registry.Attach(*addr, plain, **cq, false, 2, {});
  auto c = registry.Attach(*addr, limited, **cq, false, 3, {});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_NE(a->get(), c->get());
  EXPECT_EQ(registry.shared_count(), before + 2);
  for (auto* sc : {&*a, &*b, &*c}) registry.Detach(*sc, **cq, {});
  EXPECT_EQ(registry.shared_count(), before);
  (*cq)->Shutdown();
}

}  // namespace
}  // namespace ringrpc::channel
