#include "ringrpc/client/transport/keepalive.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace ringrpc::transport {
namespace {

using Action = KeepalivePolicy::Action;
using std::chrono::seconds;

const TimePoint kStart = TimePoint() + seconds(1000);

KeepaliveSettings Settings(bool permit = false, int max_pings = 2) {
  return {.time = seconds(10),
          .timeout = seconds(3),
          .permit_without_calls = permit,
          .max_pings_without_data = max_pings};
}

// Fires the timer at each deadline, `n` times, and writes what happened.
std::string Fire(KeepalivePolicy& ka, int n, bool has_calls) {
  std::string log;
  for (int i = 0; i < n; ++i) {
    TimePoint at = ka.deadline();
    Action a = ka.OnTimer(at, has_calls);
    absl::StrAppend(&log, (at - kStart) / seconds(1), "s:", std::string(KeepaliveActionName(a)),
                    " ");
    if (a == Action::kDeclareDead) break;
  }
  return log;
}

TEST(KeepalivePolicy, FirstPingIsKeepaliveTimeAfterTheStart) {
  KeepalivePolicy ka(Settings(), kStart);
  EXPECT_EQ(ka.deadline(), kStart + seconds(10));
  EXPECT_FALSE(ka.awaiting_ack());
}

TEST(KeepalivePolicy, UnansweredPingDeclaresThePeerDeadAfterTheTimeout) {
  KeepalivePolicy ka(Settings(), kStart);
  EXPECT_EQ(Fire(ka, 5, /*has_calls=*/true), "10s:send-ping 13s:declare-dead ");
}

TEST(KeepalivePolicy, AnsweredPingSchedulesTheNextOneKeepaliveTimeLater) {
  KeepalivePolicy ka(Settings(/*permit=*/false, /*max_pings=*/0), kStart);
  EXPECT_EQ(ka.OnTimer(kStart + seconds(10), true), Action::kSendPing);
  EXPECT_TRUE(ka.awaiting_ack());
  EXPECT_TRUE(ka.OnFrameReceived(kStart + seconds(11)));
  EXPECT_FALSE(ka.awaiting_ack());
  EXPECT_EQ(ka.deadline(), kStart + seconds(21));
  // A frame with no PING out changes nothing.
  EXPECT_FALSE(ka.OnFrameReceived(kStart + seconds(12)));
  EXPECT_EQ(ka.deadline(), kStart + seconds(21));
}

TEST(KeepalivePolicy, NoPingsWithoutCallsUnlessPermitted) {
  KeepalivePolicy idle(Settings(/*permit=*/false), kStart);
  EXPECT_EQ(Fire(idle, 3, /*has_calls=*/false), "10s:wait 20s:wait 30s:wait ");
  KeepalivePolicy permitted(Settings(/*permit=*/true), kStart);
  EXPECT_EQ(Fire(permitted, 2, /*has_calls=*/false), "10s:send-ping 13s:declare-dead ");
}

TEST(KeepalivePolicy, AtMostMaxPingsWithoutDataUntilDataIsSent) {
  KeepalivePolicy ka(Settings(/*permit=*/false, /*max_pings=*/2), kStart);
  std::string log;
  for (int i = 0; i < 4; ++i) {
    TimePoint at = ka.deadline();
    Action a = ka.OnTimer(at, true);
    absl::StrAppend(&log, std::string(KeepaliveActionName(a)), " ");
    if (a == Action::kSendPing) ka.OnFrameReceived(at + seconds(1));  // answered
  }
  EXPECT_EQ(log, "send-ping send-ping wait wait ");
  EXPECT_EQ(ka.pings_without_data(), 2);
  ka.OnDataSent();
  EXPECT_EQ(ka.OnTimer(ka.deadline(), true), Action::kSendPing);
}

TEST(KeepalivePolicy, RestartForgetsTheOutstandingPingButNotTheCount) {
  KeepalivePolicy ka(Settings(/*permit=*/true, /*max_pings=*/1), kStart);
  EXPECT_EQ(ka.OnTimer(ka.deadline(), false), Action::kSendPing);
  ka.Restart(kStart + seconds(100));
  EXPECT_FALSE(ka.awaiting_ack());
  EXPECT_EQ(ka.deadline(), kStart + seconds(110));
  EXPECT_EQ(ka.OnTimer(ka.deadline(), false),
            Action::kWait);  // 1 without data already
}

}  // namespace
}  // namespace ringrpc::transport
