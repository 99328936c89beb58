#include "ringrpc/client/runtime/inbox.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace ringrpc::runtime {
namespace {

TEST(Inbox, ReportsOnlyTheEmptyToNonEmptyTransition) {
  Inbox inbox;
  int x = 0;
  EXPECT_TRUE(inbox.Push([&] { x = x * 10 + 1; }));
  EXPECT_FALSE(inbox.Push([&] { x = x * 10 + 2; }));
  EXPECT_FALSE(inbox.Push([&] { x = x * 10 + 3; }));
  for (auto& fn : inbox.TakeAll()) fn();
  EXPECT_EQ(x, 123);  // in push order
  EXPECT_TRUE(inbox.empty());
  EXPECT_TRUE(inbox.Push([] {}));  // empty again: wake again
}

TEST(Inbox, ManyProducersLoseNothingAndKeepEachProducersOrder) {
  Inbox inbox;
  constexpr int kProducers = 4, kEach = 20000;
  std::vector<std::vector<int>> seen(kProducers);
  std::atomic<int> wakes{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kEach; ++i) {
        if (inbox.Push([&seen, p, i] { seen[p].push_back(i); })) wakes.fetch_add(1);
      }
    });
  }
  int taken = 0;
  while (taken < kProducers * kEach) {
    for (auto& fn : inbox.TakeAll()) {
      fn();
      ++taken;
    }
  }
  for (auto& t : producers) t.join();
  for (int p = 0; p < kProducers; ++p) {
    ASSERT_EQ(seen[p].size(), size_t{kEach});
    for (int i = 0; i < kEach; ++i) ASSERT_EQ(seen[p][i], i);
  }
  EXPECT_GE(wakes.load(), 1);
  EXPECT_LE(wakes.load(), kProducers * kEach);
}

}  // namespace
}  // namespace ringrpc::runtime
