#include "ringrpc/client/transport/compression.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "tests/testing/process_stats.h"
#include "tests/testing/zlib_bomb.h"

namespace ringrpc::transport {
namespace {

std::string Text(size_t n) {  // compressible, not trivially
  std::mt19937 rng(7);
  std::string s;
  while (s.size() < n) s += "word" + std::to_string(rng() % 100) + " ";
  s.resize(n);
  return s;
}

TEST(Compression, NamesRoundTripAndUnknownNamesAreNotSpoken) {
  for (Compression c : {Compression::kIdentity, Compression::kDeflate, Compression::kGzip}) {
    EXPECT_EQ(ParseCompression(CompressionName(c)), c);
  }
  EXPECT_FALSE(ParseCompression("snappy").has_value());
  EXPECT_FALSE(ParseCompression("GZIP").has_value());
  EXPECT_EQ(std::string(kAcceptEncoding), "identity,deflate,gzip");
}

TEST(Compression, RoundTripsEverySizeInBothFormats) {
  for (Compression c : {Compression::kDeflate, Compression::kGzip}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{1000}, size_t{3} << 20}) {
      const std::string in = Text(n);
      std::string wire = "prefix";  // Compress appends
      ASSERT_TRUE(Compress(c, kDefaultCompressionLevel, in, wire).ok());
      ASSERT_EQ(wire.substr(0, 6), "prefix");
      if (n >= 1000) {
        EXPECT_LT(wire.size() - 6, n / 2) << CompressionName(c);
      }
      absl::StatusOr<std::string> out = Decompress(c, wire.substr(6), 4 << 20);
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_EQ(*out, in);
    }
  }
}

TEST(Compression, GzipAndDeflateAreTheFormatsGrpcMeans) {
  std::string gz, zl;
  ASSERT_TRUE(Compress(Compression::kGzip, 6, "hello", gz).ok());
  ASSERT_TRUE(Compress(Compression::kDeflate, 6, "hello", zl).ok());
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);  // RFC 1952 magic
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  EXPECT_EQ(static_cast<unsigned char>(zl[0]) & 0x0f, 8);  // RFC 1950 CM = deflate
  // One format is not the other.
  EXPECT_EQ(Decompress(Compression::kDeflate, gz, 100).status().code(),
            absl::StatusCode::kInternal);
}

TEST(Compression, TheLimitAppliesToTheInflatedSize) {
  const std::string in = Text(10000);
  std::string wire;
  ASSERT_TRUE(Compress(Compression::kGzip, 9, in, wire).ok());
  EXPECT_TRUE(Decompress(Compression::kGzip, wire, 10000).ok());  // exactly at the limit
  absl::StatusOr<std::string> over = Decompress(Compression::kGzip, wire, 9999);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(over.status().message(),
            "received message larger than max (more than 9999 bytes once gzip-decompressed)");
}

TEST(Compression, ABombStopsAtTheLimitWithBoundedMemory) {
  // ~4 MiB that would inflate to 4 GiB; the limit is 4 MiB.
  const std::string bomb = testing::ZlibBomb(/*gzip=*/true, uint64_t{4} << 30);
  ASSERT_LT(bomb.size(), size_t{8} << 20);
  const long before = testing::RssKiB();
  absl::StatusOr<std::string> out = Decompress(Compression::kGzip, bomb, 4 << 20);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_LT(testing::RssKiB() - before, 64 * 1024) << "KiB grown inflating a bomb";
}

TEST(Compression, CorruptTruncatedOrTrailingDataIsInternal) {
  std::string wire;
  ASSERT_TRUE(Compress(Compression::kDeflate, 6, Text(5000), wire).ok());
  std::string corrupt = wire;
  for (size_t i = 2; i < corrupt.size(); i += 7) corrupt[i] ^= 0x5a;
  absl::StatusOr<std::string> bad = Decompress(Compression::kDeflate, corrupt, 1 << 20);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(bad.status().message().find("corrupt deflate-compressed message"), std::string::npos)
      << bad.status();
  absl::StatusOr<std::string> cut =
      Decompress(Compression::kDeflate, wire.substr(0, wire.size() / 2), 1 << 20);
  EXPECT_EQ(cut.status().code(), absl::StatusCode::kInternal);
  absl::StatusOr<std::string> trailing = Decompress(Compression::kDeflate, wire + "xyz", 1 << 20);
  EXPECT_EQ(trailing.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(trailing.status().message().find("bytes after the end"), std::string::npos);
  EXPECT_EQ(Decompress(Compression::kGzip, "", 10).status().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace ringrpc::transport
