// grpc++ names a ported program uses, spelled and behaving as in grpc++
// 1.51: ChannelArguments setters, ClientContext::set_fail_fast, StatusCode
// printed as its number.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "client/channel.h"

namespace ringrpc {
namespace {

TEST(GrpcppNames, ChannelArgumentSettersWriteGrpcsKeys) {
  ChannelArguments args;
  args.SetCompressionAlgorithm(CompressionAlgorithm::kGzip);
  args.SetSslTargetNameOverride("foo.test.google.fr");
  EXPECT_EQ(std::get<int>(args.values().at("grpc.default_compression_algorithm")), 2);
  EXPECT_EQ(std::get<std::string>(args.values().at("grpc.ssl_target_name_override")),
            "foo.test.google.fr");
  EXPECT_TRUE(ValidateChannelArguments(args).ok()) << ValidateChannelArguments(args).ToString();
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
