#include "ringrpc/client/channel/backoff.h"

#include <gtest/gtest.h>

namespace ringrpc::channel {
namespace {

using std::chrono::milliseconds;

TEST(Backoff, FollowsTheConnectionBackoffSpec) {
  BackoffConfig cfg;  // 1 s, x1.6, jitter 0.2, max 120 s
  ConnectionBackoff b(cfg);
  const uint64_t mid = uint64_t{1} << 63;  // u = 0.5: no jitter
  EXPECT_EQ(b.NextDelay(mid), std::chrono::seconds(1));
  EXPECT_EQ(b.NextDelay(mid), milliseconds(1600));
  EXPECT_EQ(b.NextDelay(mid), milliseconds(2560));
  for (int i = 0; i < 20; ++i) b.NextDelay(mid);
  EXPECT_EQ(b.NextDelay(mid), std::chrono::seconds(120));  // capped
  EXPECT_EQ(b.ConnectDeadline(), std::chrono::seconds(120));
  b.Reset();
  EXPECT_EQ(b.ConnectDeadline(), std::chrono::seconds(20));  // min connect timeout
  // Jitter stays within +-20%.
  ConnectionBackoff lo(cfg), hi(cfg);
  EXPECT_EQ(lo.NextDelay(0), milliseconds(800));
  EXPECT_GT(hi.NextDelay(~uint64_t{0}), milliseconds(1199));
}

}  // namespace
}  // namespace ringrpc::channel
