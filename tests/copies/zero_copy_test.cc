// Message bytes are not copied between protobuf and the socket: for each
// call form and direction, the bytes memcpy/memmove'd per message byte
// during a call with 1 MiB messages (counted by interposing memcpy and
// memmove, tests/testing:copy_counter). The one copy allowed per direction
// is protobuf's own: serializing the bytes field into the buffer the
// transport sends, parsing it out of the buffers the transport received.
// Any other copy (framing, buffering, reassembly) makes a ratio exceed it.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <future>
#include <string>

#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/copy_counter.h"
#include "tests/testing/server_process.h"

namespace {

using ringrpc::test::EchoRequest;
using ringrpc::test::EchoResponse;
using TestService = ringrpc::test::ring::TestService;
using ::ringrpc::ClientContext;
using ::ringrpc::Status;
using ::ringrpc::Task;
using ::ringrpc::testing::CopiedBytes;

constexpr int kBig = 1 << 20;
// protobuf's one copy, and slack for what a call copies besides the body
// (16 KiB frames' headers and metadata are below the counted size).
constexpr double kOneCopy = 1.1;

class ZeroCopyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!::ringrpc::testing::CountingCopies())
      GTEST_SKIP() << "copies are not counted under sanitizers";
    auto s = ::ringrpc::testing::ServerProcess::Start();
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    channel_ =
        ::ringrpc::CreateChannel(server_->address(), ::ringrpc::InsecureChannelCredentials());
    stub_ = TestService::NewStub(channel_);
    // The connection and its buffers exist before anything is counted.
    EchoRequest req;
    req.set_payload(std::string(kBig, 'w'));
    EchoResponse resp;
    ClientContext ctx;
    ASSERT_TRUE(stub_->Unary(&ctx, req, &resp).ok());
  }

  // Bytes copied while `call` runs, per byte of `message_bytes`.
  template <typename F>
  double CopiesPerByte(double message_bytes, F call) {
    const uint64_t before = CopiedBytes();
    call();
    const double ratio = double(CopiedBytes() - before) / message_bytes;
    std::printf("%s: %.3f bytes copied per message byte\n",
                ::testing::UnitTest::GetInstance()->current_test_info()->name(), ratio);
    return ratio;
  }

  // One unary call form (`call`), sending 1 MiB and then receiving 1 MiB.
  void CheckUnary(const std::function<Status(const EchoRequest&, EchoResponse*)>& call) {
    for (const EchoRequest& req : {Sending(), Receiving()}) {
      EchoResponse resp;
      Status s;
      double ratio = CopiesPerByte(kBig, [&] { s = call(req, &resp); });
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(resp.payload().size(), req.response_size());
      EXPECT_LE(ratio, kOneCopy) << (req.payload().empty() ? "receiving" : "sending");
    }
  }

  static EchoRequest Sending() {
    EchoRequest r;
    r.set_payload(std::string(kBig, 'q'));
    r.set_response_size(1);
    return r;
  }
  static EchoRequest Receiving() {
    EchoRequest r;
    r.set_response_size(kBig);
    return r;
  }

  std::unique_ptr<::ringrpc::testing::ServerProcess> server_;
  std::shared_ptr<::ringrpc::Channel> channel_;
  std::unique_ptr<TestService::Stub> stub_;
};

TEST_F(ZeroCopyTest, BlockingUnary) {
  CheckUnary([&](const EchoRequest& req, EchoResponse* resp) {
    ClientContext ctx;
    return stub_->Unary(&ctx, req, resp);
  });
}

TEST_F(ZeroCopyTest, CallbackUnary) {
  CheckUnary([&](const EchoRequest& req, EchoResponse* resp) {
    ClientContext ctx;
    std::promise<Status> done;
    stub_->async()->Unary(&ctx, &req, resp, [&](Status st) { done.set_value(st); });
    return done.get_future().get();
  });
}

TEST_F(ZeroCopyTest, CoroutineUnary) {
  CheckUnary([&](const EchoRequest& req, EchoResponse* resp) {
    Status s;
    std::promise<void> done;
    channel_->Spawn([](TestService::Stub* stub, const EchoRequest* req, EchoResponse* resp,
                       Status* s, std::promise<void>* done) -> Task<void> {
      ClientContext ctx;
      *s = co_await stub->co_Unary(&ctx, *req, resp);
      done->set_value();
    }(stub_.get(), &req, resp, &s, &done));
    done.get_future().get();
    return s;
  });
}

TEST_F(ZeroCopyTest, ServerStreamReceivesWithoutCopies) {
  constexpr int kMessages = 8;
  EchoRequest req;
  req.set_count(kMessages);
  req.set_response_size(kBig / 4);
  int got = 0;
  Status s;
  double ratio = CopiesPerByte(kMessages * (kBig / 4), [&] {
    ClientContext ctx;
    auto reader = stub_->ServerStream(&ctx, req);
    EchoResponse resp;
    while (reader->Read(&resp)) got += resp.payload().size() == size_t(kBig / 4);
    s = reader->Finish();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(got, kMessages);
  EXPECT_LE(ratio, kOneCopy);
}

TEST_F(ZeroCopyTest, ClientStreamSendsWithoutCopies) {
  constexpr int kMessages = 8;
  EchoRequest req;
  req.set_payload(std::string(kBig / 4, 'c'));
  EchoResponse resp;
  Status s;
  double ratio = CopiesPerByte(kMessages * (kBig / 4), [&] {
    ClientContext ctx;
    auto writer = stub_->ClientStream(&ctx, &resp);
    for (int i = 0; i < kMessages; ++i) ASSERT_TRUE(writer->Write(req));
    writer->WritesDone();
    s = writer->Finish();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(resp.total_bytes(), int64_t(kMessages) * (kBig / 4));
  EXPECT_LE(ratio, kOneCopy);
}

}  // namespace
