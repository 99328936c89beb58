#include "client/channel/resolver.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace ringrpc::channel {
namespace {

using std::chrono::milliseconds;

TEST(DnsResolver, ResolvesOffTheCallersThreadAndRateLimitsReresolution) {
  DnsResolver r("127.0.0.1", 8080, milliseconds(300));
  std::atomic<int> updates{0};
  std::atomic<bool> ok{false};
  std::thread::id caller = std::this_thread::get_id(), resolver_thread;
  r.Start([&](absl::StatusOr<AddressList> a) {
    resolver_thread = std::this_thread::get_id();
    ok = a.ok() && a->size() == 1 && (*a)[0].ToString() == "127.0.0.1:8080";
    ++updates;
  });
  for (int i = 0; i < 100 && updates == 0; ++i) std::this_thread::sleep_for(milliseconds(5));
  ASSERT_EQ(updates.load(), 1);
  EXPECT_TRUE(ok.load());
  EXPECT_NE(resolver_thread, caller);
  for (int i = 0; i < 5; ++i) r.RequestReresolution();  // a burst of failures
  std::this_thread::sleep_for(milliseconds(150));
  EXPECT_EQ(updates.load(), 1);  // not before the minimum interval
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(updates.load(), 2);  // and the burst made one resolution
  r.Shutdown();
  EXPECT_EQ(r.resolutions(), 2);
}

TEST(ManualResolver, UpdatesPushedBeforeStartAreDelivered) {
  ManualResolver r;
  r.Push(AddressList{*transport::Address::Parse("127.0.0.1:1")});
  int got = 0;
  r.Start([&](absl::StatusOr<AddressList> a) { got += a.ok() ? int(a->size()) : -100; });
  EXPECT_EQ(got, 1);
  r.Push(absl::UnavailableError("gone"));
  EXPECT_EQ(got, -99);
  r.Shutdown();
  r.Push(AddressList{});  // after Shutdown: no call (kept as pending)
  EXPECT_EQ(got, -99);
}

}  // namespace
}  // namespace ringrpc::channel
