// The write batch: copied bytes and held messages come out in order, a
// sendmsg never gets more iovecs than Linux takes, and a connection whose
// server opens huge windows sends megabytes of held messages in one pass
// (more than one sendmsg's worth of iovecs) without loss.
#include "ringrpc/client/transport/internal/send_batch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "ringrpc/client/transport/http2_connection.h"
#include "ringrpc/client/transport/testing/raw_server.h"

namespace ringrpc::transport {
namespace {

std::string Joined(const std::vector<iovec>& iov) {
  std::string out;
  for (const iovec& v : iov) out.append(static_cast<const char*>(v.iov_base), v.iov_len);
  return out;
}

TEST(SendBatch, CopiedAndHeldPiecesComeOutInOrderFromAnyOffset) {
  SendBatch b;
  auto big = std::make_shared<const std::string>("HELD-BYTES");
  b.Copy("ab", 2);
  b.Copy("cd", 2);  // joins the piece before
  b.Hold(big, std::string_view(*big).substr(0, 4));
  b.Copy("ef", 2);
  b.Hold(big, std::string_view(*big).substr(4));
  ASSERT_EQ(b.pieces.size(), 4u);
  EXPECT_EQ(b.keep.size(), 1u);  // one reference per run of the same string
  EXPECT_EQ(b.size(), 16u);
  EXPECT_EQ(Joined(b.Iovecs(0)), "abcdHELDef-BYTES");
  for (size_t skip = 0; skip <= 16; ++skip) {
    EXPECT_EQ(Joined(b.Iovecs(skip)), std::string("abcdHELDef-BYTES").substr(skip)) << skip;
  }
}

TEST(SendBatch, NoMoreIovecsThanOneSendmsgTakes) {
  SendBatch b;
  auto big = std::make_shared<const std::string>(8192, 'x');
  for (int i = 0; i < 3000; ++i) {
    b.Copy("h", 1);
    b.Hold(big, *big);
  }
  std::vector<iovec> first = b.Iovecs(0);
  EXPECT_EQ(first.size(), SendBatch::kMaxIovecs);
  size_t sent = 0;
  for (const iovec& v : first) sent += v.iov_len;
  // What the first sendmsg leaves is the next one's.
  EXPECT_EQ(b.Iovecs(sent).size(), SendBatch::kMaxIovecs);
  EXPECT_EQ(b.Iovecs(b.size() - 1).size(), 1u);
}

std::string Settings(uint16_t id, uint32_t value) {
  std::string p;
  p.push_back(char(id >> 8));
  p.push_back(char(id));
  for (int shift : {24, 16, 8, 0}) p.push_back(char(value >> shift));
  return testing::Frame(testing::kSettings, 0, 0, p);
}

std::string WindowUpdate(uint32_t increment) {
  std::string p;
  for (int shift : {24, 16, 8, 0}) p.push_back(char(increment >> shift));
  return testing::Frame(testing::kWindowUpdate, 0, 0, p);
}

// Regression: with 16 calls of 1 MiB on one connection, one pass's batch
// held more than 1024 pieces and sendmsg failed with EMSGSIZE ("Message too
// long"), ending every call on the connection.
TEST(SendBatch, MegabytesOfHeldMessagesInOnePassAllArrive) {
  // A server granting the largest windows: the whole queue goes in one pass.
  testing::RawServer server(Settings(0x4, 0x7fffffff) + WindowUpdate(0x7fffffff - 65535));
  auto loop = EventLoop::Create();
  ASSERT_TRUE(loop.ok()) << loop.status();
  int fd = testing::ConnectNonBlocking(server.port());
  ASSERT_GE(fd, 0);
  auto conn = Http2Connection::Adopt(**loop, fd, *Address::Parse(server.address()), {});
  ASSERT_TRUE(conn.ok()) << conn.status();
  auto call = (*conn)->StartCall({.path = "/x.Y/Z"});
  ASSERT_TRUE(call.ok()) << call.status();
  // 10 MiB in 64 KiB messages: 640 frames of 16 KiB, two pieces each.
  constexpr int kMessages = 160;
  constexpr size_t kSize = 64 << 10;
  OutgoingMessage m(std::string(kSize, 'm'));
  for (int i = 0; i < kMessages; ++i) ASSERT_TRUE((*call)->Enqueue(m, false).ok());
  (*call)->WritesDone();
  const size_t want = kMessages * (kSize + 5);  // at least: frame headers come on top
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (server.bytes_received() < want && !(*call)->finished() &&
         std::chrono::steady_clock::now() < deadline) {
    (*loop)->RunOnce(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE((*call)->finished()) << (*call)->status()->ToString();
  EXPECT_GE(server.bytes_received(), want);
  EXPECT_EQ((*call)->sent_message_bytes(), uint64_t(kMessages) * kSize);
  call->reset();
  conn->reset();
}

}  // namespace
}  // namespace ringrpc::transport
