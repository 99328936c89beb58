// grpc++ names a ported program uses, spelled and behaving as in grpc++
// 1.51: ChannelArguments setters and grpc's key macros, the C enums of
// connectivity and compression, ClientContext::set_fail_fast, StatusCode
// printed as its number, ChannelInterface, StubOptions.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <string>

#include "ringrpc/ringrpc.h"

namespace ringrpc {
namespace {

TEST(GrpcppNames, ChannelArgumentSettersWriteGrpcsKeys) {
  ChannelArguments args;
  args.SetCompressionAlgorithm(GRPC_COMPRESS_GZIP);
  args.SetSslTargetNameOverride("foo.test.google.fr");
  EXPECT_EQ(args.GetSslTargetNameOverride(), "foo.test.google.fr");
  EXPECT_EQ(std::get<int>(args.values().at("grpc.default_compression_algorithm")), 2);
  EXPECT_EQ(std::get<std::string>(args.values().at("grpc.ssl_target_name_override")),
            "foo.test.google.fr");
  EXPECT_TRUE(ValidateChannelArguments(args).ok()) << ValidateChannelArguments(args).ToString();
}

TEST(GrpcppNames, GrpcArgMacrosAreGrpcsKeys) {
  ChannelArguments args;
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 1024);
  args.SetString(GRPC_ARG_LB_POLICY_NAME, "round_robin");
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  EXPECT_EQ(std::get<int>(args.values().at("grpc.max_receive_message_length")), 1024);
  EXPECT_EQ(std::get<std::string>(args.values().at("grpc.lb_policy_name")), "round_robin");
  EXPECT_TRUE(ValidateChannelArguments(args).ok());
  args.SetString(GRPC_ARG_LB_POLICY_NAME, "grpclb");  // a policy ringrpc lacks: named
  Status s = ValidateChannelArguments(args);
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("grpc.lb_policy_name"), std::string::npos) << s.error_message();
}

TEST(GrpcppNames, PointersAreKeptNotRead) {
  int quota = 0;
  ChannelArguments args;
  args.SetPointer(GRPC_ARG_RESOURCE_QUOTA, &quota);
  EXPECT_EQ(args.pointers().at("grpc.resource_quota"), &quota);
  EXPECT_TRUE(ValidateChannelArguments(args).ok());
  ChannelArguments other;
  other.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 5000);
  args.Swap(other);
  EXPECT_EQ(args.pointers().count("grpc.resource_quota"), 0u);
  EXPECT_EQ(std::get<int>(args.values().at("grpc.keepalive_time_ms")), 5000);
  EXPECT_EQ(other.pointers().at("grpc.resource_quota"), &quota);
}

TEST(GrpcppNames, ConnectivityStateIsGrpcsEnum) {
  std::shared_ptr<ChannelInterface> channel =
      CreateChannel("127.0.0.1:1", InsecureChannelCredentials());
  grpc_connectivity_state state = channel->GetState(/*try_to_connect=*/false);
  EXPECT_EQ(state, GRPC_CHANNEL_IDLE);
  switch (state) {
    case GRPC_CHANNEL_IDLE:
    case GRPC_CHANNEL_CONNECTING:
    case GRPC_CHANNEL_READY:
    case GRPC_CHANNEL_TRANSIENT_FAILURE:
    case GRPC_CHANNEL_SHUTDOWN:
      break;
  }
  // Nothing listens on port 1: asked to connect, the state leaves IDLE.
  channel->GetState(/*try_to_connect=*/true);
  EXPECT_TRUE(channel->WaitForStateChange(
      GRPC_CHANNEL_IDLE, std::chrono::system_clock::now() + std::chrono::seconds(30)));
  EXPECT_NE(channel->GetState(false), GRPC_CHANNEL_IDLE);
  EXPECT_NE(channel->GetState(false), GRPC_CHANNEL_READY);
}

TEST(GrpcppNames, CompressionIsGrpcsEnum) {
  ClientContext ctx;
  EXPECT_EQ(ctx.compression_algorithm(), GRPC_COMPRESS_NONE);
  ctx.set_compression_algorithm(GRPC_COMPRESS_DEFLATE);
  grpc_compression_algorithm algorithm = ctx.compression_algorithm();
  EXPECT_EQ(algorithm, GRPC_COMPRESS_DEFLATE);
}

TEST(GrpcppNames, StubOptionsKeepTheirSuffix) {
  StubOptions options("canary");
  EXPECT_STREQ(options.suffix_for_stats(), "canary");
  options.set_suffix_for_stats("main");
  EXPECT_STREQ(options.suffix_for_stats(), "main");
  EXPECT_EQ(StubOptions().suffix_for_stats(), nullptr);
}

TEST(GrpcppNames, FailFastIsTheOppositeOfWaitForReady) {
  ClientContext ctx;
  EXPECT_FALSE(ctx.wait_for_ready());
  ctx.set_fail_fast(false);
  EXPECT_TRUE(ctx.wait_for_ready());
  ctx.set_fail_fast(true);
  EXPECT_FALSE(ctx.wait_for_ready());
}

TEST(GrpcppNames, AStatusCodePrintsAsItsNumber) {
  std::ostringstream out;
  Status s(StatusCode::UNAVAILABLE, "down");
  out << s.error_code() << ": " << s.error_message();
  EXPECT_EQ(out.str(), "14: down");
}

}  // namespace
}  // namespace ringrpc
