// least_request (issue 13, part 6) end to end: two grpc++ backends, one
// five times slower than the other; calls kept in flight from two CQ
// threads. Prints the share of calls each backend got under round_robin
// and least_request counted per thread and channel-wide (the numbers in
// docs/performance.md come from this test's output), and checks that
// least_request sends most calls to the fast backend.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "ringrpc/client/channel.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/server_process.h"

namespace ringrpc {
namespace {

using test::EchoRequest;
using test::EchoResponse;
using test::ring::TestService;

std::unique_ptr<testing::ServerProcess> Backend(int delay_ms) {
  auto s = testing::ServerProcess::Start("127.0.0.1:0", "tests/server/test_server",
                                         {absl::StrCat("--unary_delay_ms=", delay_ms)});
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

int64_t Calls(const testing::ServerProcess& server) {
  auto stub = TestService::NewStub(CreateChannel(server.address(), InsecureChannelCredentials()));
  ClientContext ctx;
  test::StatsResponse stats;
  EXPECT_TRUE(stub->Stats(&ctx, test::StatsRequest(), &stats).ok());
  return stats.calls();
}

// `total` calls from two CQ threads, `in_flight` at a time on each; the
// share of them the fast backend served.
double FastShare(const std::string& lb_config, const std::string& scope, int total, int in_flight) {
  auto fast = Backend(5);
  auto slow = Backend(25);
  ChannelArguments args;
  args.SetInt("ringrpc.cq_threads", 2);
  args.SetServiceConfigJSON(lb_config);
  if (!scope.empty()) args.SetString("ringrpc.least_request_scope", scope);
  auto channel = CreateCustomChannel(absl::StrCat("ipv4:", fast->address(), ",", slow->address()),
                                     InsecureChannelCredentials(), args);
  EXPECT_TRUE(channel->configuration_status().ok())
      << channel->configuration_status().error_message();
  auto stub = TestService::NewStub(channel);
  std::atomic<int> started{0}, failed{0};
  std::vector<std::future<void>> lanes;
  for (size_t thread = 0; thread < 2; ++thread) {
    for (int lane = 0; lane < in_flight; ++lane) {
      auto done = std::make_shared<std::promise<void>>();
      lanes.push_back(done->get_future());
      EXPECT_TRUE(channel
                      ->SpawnOn(thread,
                                [](TestService::Stub* stub, std::atomic<int>* started,
                                   std::atomic<int>* failed, int total,
                                   std::shared_ptr<std::promise<void>> done) -> Task<void> {
                                  while (started->fetch_add(1) < total) {
                                    ClientContext ctx;
                                    EchoRequest req;
                                    req.set_payload("x");
                                    EchoResponse resp;
                                    if (!(co_await stub->co_Unary(&ctx, req, &resp)).ok()) {
                                      ++*failed;
                                    }
                                  }
                                  done->set_value();
                                }(stub.get(), &started, &failed, total, done))
                      .ok());
    }
  }
  for (auto& f : lanes) f.wait();
  EXPECT_EQ(failed.load(), 0);
  const double f = double(Calls(*fast)), s = double(Calls(*slow));
  return f / (f + s);
}

TEST(LeastRequest, SendsMostCallsToTheFasterBackend) {
  constexpr int kTotal = 600, kInFlight = 8;
  const double rr =
      FastShare(R"({"loadBalancingConfig": [{"round_robin": {}}]})", "", kTotal, kInFlight);
  const std::string lr = R"({"loadBalancingConfig": [{"least_request_experimental": {}}]})";
  const double per_thread = FastShare(lr, "thread", kTotal, kInFlight);
  const double channel_wide = FastShare(lr, "channel", kTotal, kInFlight);
  std::printf(
      "backends: fast 5 ms, slow 25 ms per call; %d calls, %d in flight on each of 2 "
      "CQ threads\nshare of calls on the fast backend: round_robin %.2f, "
      "least_request per thread %.2f, least_request channel-wide %.2f\n",
      kTotal, kInFlight, rr, per_thread, channel_wide);
  // Clearly more than round robin's half, even on a slow or sanitized
  // build where the servers' own overhead narrows the gap.
  EXPECT_NEAR(rr, 0.5, 0.1);
  EXPECT_GT(per_thread, 0.6);
  EXPECT_GT(channel_wide, 0.6);
}

}  // namespace
}  // namespace ringrpc
