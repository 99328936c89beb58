#include "ringrpc/client/resolver.h"

#include <gtest/gtest.h>

namespace ringrpc {
namespace {

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
}  // namespace ringrpc
