// grpc's C names in ringrpc are grpc's own: this file includes grpc's
// headers first and ringrpc's after, grpc_types_after_test.cc the other
// way round; both compile to one definition, with grpc's values.
#include <grpc/compression.h>
#include <grpc/grpc.h>
#include <gtest/gtest.h>

#include <string>
#include <type_traits>

#include "ringrpc/ringrpc.h"

static_assert(std::is_same_v<ringrpc::ConnectivityState, grpc_connectivity_state>);
static_assert(std::is_same_v<ringrpc::CompressionAlgorithm, grpc_compression_algorithm>);
// LocalCredentials takes grpc's own grpc_local_connect_type.
static_assert(
    std::is_same_v<decltype(&ringrpc::experimental::LocalCredentials),
                   std::shared_ptr<ringrpc::ChannelCredentials> (*)(grpc_local_connect_type)>);

// Defined in grpc_types_after_test.cc, where ringrpc's header came first.
int ReadyAfter();
int GzipAfter();
std::string KeepaliveKeyAfter();
std::string TargetNameKeyAfter();
int LocalTcpAfter();

namespace {

TEST(GrpcTypes, OneDefinitionWhicheverHeaderComesFirst) {
  EXPECT_EQ(ReadyAfter(), GRPC_CHANNEL_READY);
  EXPECT_EQ(GzipAfter(), GRPC_COMPRESS_GZIP);
  EXPECT_EQ(KeepaliveKeyAfter(), GRPC_ARG_KEEPALIVE_TIME_MS);
  EXPECT_EQ(TargetNameKeyAfter(), GRPC_SSL_TARGET_NAME_OVERRIDE_ARG);
  EXPECT_EQ(LocalTcpAfter(), LOCAL_TCP);
}

TEST(GrpcTypes, RingrpcReadsTheKeysByGrpcsNames) {
  ringrpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 0);  // out of range: 1 .. INT_MAX
  ringrpc::Status s = ringrpc::ValidateChannelArguments(args);
  EXPECT_EQ(s.error_code(), ringrpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("grpc.keepalive_time_ms"), std::string::npos)
      << s.error_message();
}

}  // namespace
