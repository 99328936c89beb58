#include "ringrpc/client/transport/grpc_wire.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <fstream>
#include <string>

namespace ringrpc::transport {
namespace {

using std::chrono::milliseconds;

TEST(GrpcWire, FramingRoundTripsAcrossArbitraryChunking) {
  std::string wire;
  std::vector<std::string> msgs = {"", "a", std::string(70000, 'x'), "last"};
  for (auto& m : msgs) AppendFramedMessage(wire, m);
  for (bool from_blocks : {false, true}) {
    for (size_t chunk : {1, 3, 5, 4096, 5000, 1 << 20}) {
      MessageDecoder d(1 << 20);
      std::vector<std::string> got;
      for (size_t i = 0; i < wire.size(); i += chunk) {
        std::string_view piece = std::string_view(wire).substr(i, chunk);
        // As the connection feeds it: the bytes live in a receive block.
        RecvBlock::Ref block = RecvBlock::Make(std::vector<uint8_t>(piece.begin(), piece.end()));
        if (from_blocks) {
          d.Feed(
              std::string_view(reinterpret_cast<const char*>(block->bytes().data()), piece.size()),
              &block);
        } else {
          d.Feed(piece);
        }
        while (auto m = d.Next()) {
          EXPECT_FALSE(m->compressed);
          got.push_back(std::move(m->bytes).TakeString());
        }
      }
      EXPECT_EQ(got, msgs) << "chunk " << chunk << (from_blocks ? " from blocks" : "");
      EXPECT_TRUE(d.error().ok());
      EXPECT_FALSE(d.partial());
    }
  }
}

TEST(GrpcWire, LargeBodiesStayInTheirReceiveBlocksSmallOnesAreCopied) {
  std::string wire;
  AppendFramedMessage(wire, std::string(3 * MessageDecoder::kShareMin, 'x'));
  AppendFramedMessage(wire, "small");
  RecvBlock::Ref block = RecvBlock::Make(std::vector<uint8_t>(wire.begin(), wire.end()));
  const char* base = reinterpret_cast<const char*>(block->bytes().data());
  MessageDecoder d(1 << 20);
  d.Feed(std::string_view(base, wire.size()), &block);
  std::optional<ReceivedMessage> big = d.Next();
  std::optional<ReceivedMessage> small = d.Next();
  ASSERT_TRUE(big && small);
  ASSERT_EQ(big->bytes.slice_count(), 1u);
  EXPECT_EQ(big->bytes.slice(0).data(), base + 5);  // the block's own bytes
  EXPECT_EQ(big->bytes.size(), 3 * MessageDecoder::kShareMin);
  EXPECT_FALSE(block->Unshared());  // the message holds the block
  EXPECT_TRUE(small->bytes.flat());
  EXPECT_EQ(std::move(small->bytes).TakeString(), "small");
  big.reset();
  EXPECT_TRUE(block->Unshared());  // released with the message
}

TEST(GrpcWire, LengthPrefixOverTheLimitIsRefusedBeforeAnyAllocation) {
  MessageDecoder d(1000);
  // Claims 4 GiB - 1: must fail from the prefix alone.
  d.Feed(std::string("\x00\xff\xff\xff\xff", 5));
  EXPECT_EQ(d.error().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(d.error().message(), "received message larger than max (4294967295 vs. 1000)");
  EXPECT_FALSE(d.Next().has_value());
}

TEST(GrpcWire, CompressedFlagIsCarriedWithTheMessage) {
  std::string wire;
  AppendFramedMessage(wire, "zz", /*compressed=*/true);
  AppendFramedMessage(wire, "plain");
  EXPECT_EQ(wire.substr(0, 7), std::string("\x01\x00\x00\x00\x02zz", 7));
  MessageDecoder d(1000);
  d.Feed(wire);
  std::optional<ReceivedMessage> first = d.Next();
  std::optional<ReceivedMessage> second = d.Next();
  ASSERT_TRUE(first && second);
  EXPECT_TRUE(first->compressed);
  EXPECT_EQ(std::move(first->bytes).TakeString(), "zz");
  EXPECT_FALSE(second->compressed);
  EXPECT_EQ(std::move(second->bytes).TakeString(), "plain");
}

TEST(GrpcWire, FlagByteOtherThanZeroOrOneIsInternal) {
  MessageDecoder d(1000);
  d.Feed(std::string("\x02\x00\x00\x00\x01z", 6));
  EXPECT_EQ(d.error().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(d.error().message(), "invalid gRPC message flag byte 2");
}

TEST(GrpcWire, TruncatedMessageIsPartial) {
  MessageDecoder d(1000);
  d.Feed(
      std::string("\x00\x00\x00\x00\x05"
                  "abc",
                  8));
  EXPECT_TRUE(d.partial());
  EXPECT_FALSE(d.Next().has_value());
}

TEST(GrpcWire, TimeoutPicksTheFinestUnitThatFitsAndRoundsUp) {
  EXPECT_EQ(EncodeGrpcTimeout(std::chrono::nanoseconds(1500)), "1500n");
  EXPECT_EQ(EncodeGrpcTimeout(milliseconds(250)), "250000u");  // 9 digits in ns
  EXPECT_EQ(EncodeGrpcTimeout(std::chrono::seconds(100)), "100000m");
  EXPECT_EQ(EncodeGrpcTimeout(std::chrono::hours(1000)), "3600000S");
  EXPECT_EQ(EncodeGrpcTimeout(milliseconds(-5)), "1n");
  EXPECT_EQ(EncodeGrpcTimeout(std::chrono::nanoseconds(100000001)), "100001u");
}

TEST(GrpcWire, GrpcStatusParsing) {
  EXPECT_EQ(*ParseGrpcStatus("0"), absl::StatusCode::kOk);
  EXPECT_EQ(*ParseGrpcStatus("16"), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(*ParseGrpcStatus("17"), absl::StatusCode::kUnknown);
  EXPECT_EQ(*ParseGrpcStatus("999999"), absl::StatusCode::kUnknown);
  EXPECT_EQ(ParseGrpcStatus("abc").status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(ParseGrpcStatus("").status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(ParseGrpcStatus("-1").status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(ParseGrpcStatus("99999999999999").status().code(), absl::StatusCode::kInternal);
}

TEST(GrpcWire, PercentCodingRoundTripsNonAsciiAndPercent) {
  std::string msg = "bad % ünïcødé \x01 done";
  std::string enc = PercentEncode(msg);
  EXPECT_EQ(enc.find_first_of("\x01\xc3"), std::string::npos);
  EXPECT_EQ(PercentDecode(enc), msg);
  EXPECT_EQ(PercentDecode("100%"), "100%");    // dangling escape kept
  EXPECT_EQ(PercentDecode("%zz%4"), "%zz%4");  // invalid escapes kept
  EXPECT_EQ(PercentDecode("%41%62"), "Ab");
}

TEST(GrpcWire, HttpStatusMapping) {
  EXPECT_EQ(HttpStatusToGrpcCode(400), absl::StatusCode::kInternal);
  EXPECT_EQ(HttpStatusToGrpcCode(401), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(HttpStatusToGrpcCode(403), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(HttpStatusToGrpcCode(404), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(HttpStatusToGrpcCode(429), absl::StatusCode::kUnavailable);
  EXPECT_EQ(HttpStatusToGrpcCode(503), absl::StatusCode::kUnavailable);
  EXPECT_EQ(HttpStatusToGrpcCode(500), absl::StatusCode::kUnknown);
}

TEST(GrpcWire, BinaryHeadersBase64WithOrWithoutPadding) {
  std::string raw("\x00\x01\xfe\xff", 4);
  std::string enc = EncodeBinaryHeader(raw);
  EXPECT_EQ(enc, "AAH+/w==");
  EXPECT_EQ(*DecodeBinaryHeader(enc), raw);
  EXPECT_EQ(*DecodeBinaryHeader("AAH+/w"), raw);
  EXPECT_EQ(DecodeBinaryHeader("!!!").status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(IsBinaryHeader("x-trace-bin"));
  EXPECT_FALSE(IsBinaryHeader("-bin"));
  EXPECT_FALSE(IsBinaryHeader("x-binary"));
}

}  // namespace
}  // namespace ringrpc::transport

namespace ringrpc::transport {
namespace {

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// Issue 11: with no receive limit, a message that cannot be held (here the
// address space runs out) ends in RESOURCE_EXHAUSTED, not std::bad_alloc
// escaping into a CQ thread. (Sanitizers reserve terabytes of address
// space, so the limit cannot be lowered under them.)
TEST(GrpcWire, OutOfMemoryGrowingAMessageIsResourceExhausted) {
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &old), 0);
  MessageDecoder d(UINT32_MAX);
  std::string prefix = {0, char(0xff), char(0xff), char(0xff), char(0xf0)};  // ~4 GiB
  d.Feed(prefix);
  EXPECT_TRUE(d.error().ok());
  // Room for ~512 MiB more than the process has now.
  rlimit low = old;
  std::ifstream status("/proc/self/status");
  std::string line;
  unsigned long vm_kib = 0;
  while (std::getline(status, line)) {
    if (line.rfind("VmSize:", 0) == 0) vm_kib = std::stoul(line.substr(7));
  }
  ASSERT_GT(vm_kib, 0u);
  low.rlim_cur = (vm_kib + 512 * 1024) * 1024;
  ASSERT_EQ(setrlimit(RLIMIT_AS, &low), 0);
  const std::string chunk(1 << 20, 'x');
  bool failed = false;
  for (int i = 0; i < 4096 && !failed; ++i) {  // up to 4 GiB fed
    d.Feed(chunk);
    failed = !d.error().ok();
  }
  setrlimit(RLIMIT_AS, &old);
  ASSERT_TRUE(failed) << "4 GiB buffered under a 512 MiB address-space allowance?";
  EXPECT_EQ(d.error().code(), absl::StatusCode::kResourceExhausted) << d.error();
  EXPECT_NE(std::string(d.error().message()).find("out of memory"), std::string::npos);
  EXPECT_FALSE(d.Next().has_value());
}
#endif

}  // namespace
}  // namespace ringrpc::transport
