// A user's gMock test built against the installed ringrpc: the
// Mock<Service>Stub that ringrpc_generate(... GENERATE_MOCKS) wrote, and
// the installed ringrpc/testing/mock_stream.h.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ringrpc/testing/mock_stream.h"
#include "status_mock.ringrpc.pb.h"

namespace {

using ::testing::_;
using ::testing::DoAll;
using ::testing::Return;
using ::testing::SetArgPointee;

std::string Check(user::app::Status::StubInterface* stub) {
  ringrpc::ClientContext ctx;
  user::app::CheckReply reply;
  ringrpc::Status s = stub->Check(&ctx, google::protobuf::Empty(), &reply);
  return s.ok() ? reply.state() : "failed: " + s.error_message();
}

TEST(InstalledMocks, AScriptedReplyReachesTheCode) {
  user::app::MockStatusStub stub;
  user::app::CheckReply reply;
  reply.set_state("serving");
  EXPECT_CALL(stub, Check(_, _, _))
      .WillOnce(DoAll(SetArgPointee<2>(reply), Return(ringrpc::Status::OK)))
      .WillOnce(Return(ringrpc::Status(ringrpc::StatusCode::UNAVAILABLE, "down")));
  EXPECT_EQ(Check(&stub), "serving");
  EXPECT_EQ(Check(&stub), "failed: down");
}

TEST(InstalledMocks, StreamDoublesAreInstalled) {
  ringrpc::testing::MockClientReader<user::app::CheckReply> reader;
  EXPECT_CALL(reader, Read(_)).WillOnce(Return(false));
  user::app::CheckReply r;
  EXPECT_FALSE(reader.Read(&r));
}

}  // namespace
