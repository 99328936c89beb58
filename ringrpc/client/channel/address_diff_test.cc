// A resolver's new address list against the old: what stays keeps its
// subchannel, what is new is attached, what went is detached.
#include "ringrpc/client/channel/address_diff.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ringrpc::channel {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Optional;

TEST(AddressDiff, OrderAndRepeatsDoNotChangeTheSet) {
  EXPECT_TRUE(SameAddressSet({"a:1", "b:2"}, {"b:2", "a:1", "a:1"}));
  EXPECT_TRUE(SameAddressSet({}, {}));
  EXPECT_FALSE(SameAddressSet({"a:1", "b:2"}, {"a:1"}));
  EXPECT_FALSE(SameAddressSet({}, {"a:1"}));
}

TEST(AddressDiff, WhatStaysKeepsItsIndexWhatWentIsGone) {
  AddressDiff d = DiffAddresses({"a:1", "b:2", "c:3"}, {"c:3", "d:4", "a:1"}, false);
  EXPECT_THAT(d.keep, ElementsAre(Optional(2u), std::nullopt, Optional(0u)));
  EXPECT_THAT(d.gone, ElementsAre(1u));
}

TEST(AddressDiff, TheFirstResolutionIsAllNew) {
  AddressDiff d = DiffAddresses({}, {"a:1", "b:2"}, false);
  EXPECT_THAT(d.keep, ElementsAre(std::nullopt, std::nullopt));
  EXPECT_THAT(d.gone, IsEmpty());
  // And an empty answer takes all away.
  d = DiffAddresses({"a:1", "b:2"}, {}, false);
  EXPECT_THAT(d.keep, IsEmpty());
  EXPECT_THAT(d.gone, ElementsAre(0u, 1u));
}

TEST(AddressDiff, ARepeatedAddressKeepsTheFirst) {
  AddressDiff d = DiffAddresses({"a:1", "a:1"}, {"a:1", "b:2", "a:1"}, false);
  EXPECT_THAT(d.keep, ElementsAre(Optional(0u), std::nullopt, Optional(0u)));
  EXPECT_THAT(d.gone, IsEmpty());  // neither copy went
}

TEST(AddressDiff, ReattachKeepsNothing) {
  AddressDiff d = DiffAddresses({"a:1", "b:2"}, {"a:1", "b:2"}, true);
  EXPECT_THAT(d.keep, ElementsAre(std::nullopt, std::nullopt));
  EXPECT_THAT(d.gone, ElementsAre(0u, 1u));
}

}  // namespace
}  // namespace ringrpc::channel
