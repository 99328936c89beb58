// Generated stubs, end to end against the grpc++ test server (a child
// process): every call type and every call form; a gMock mock of a
// StubInterface; the tricky proto's stubs compile and run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/testdata/tricky_mock.ringrpc.pb.h"
#include "tests/proto/echo_test_mock.ringrpc.pb.h"
#include "tests/testing/server_process.h"

namespace {

using ringrpc::test::EchoRequest;
using ringrpc::test::EchoResponse;
using TestService = ringrpc::test::ring::TestService;
using ::ringrpc::ClientContext;
using ::ringrpc::Status;
using ::ringrpc::StatusCode;
using ::ringrpc::Task;

class StubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = ::ringrpc::testing::ServerProcess::Start();
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
    channel_ =
        ::ringrpc::CreateChannel(server_->address(), ::ringrpc::InsecureChannelCredentials());
    stub_ = TestService::NewStub(channel_);
  }
  // Runs `task` on one of the channel's CQ threads and waits for it.
  template <typename F>
  void OnCq(F make_task) {
    std::promise<void> done;
    channel_->Spawn([](F make, std::promise<void>* done) -> Task<void> {
      co_await make();
      done->set_value();
    }(std::move(make_task), &done));
    done.get_future().get();
  }
  std::unique_ptr<::ringrpc::testing::ServerProcess> server_;
  std::shared_ptr<::ringrpc::Channel> channel_;
  std::unique_ptr<TestService::Stub> stub_;
};

TEST_F(StubTest, UnaryBlockingCallbackAndCoroutine) {
  EchoRequest req;
  req.set_payload("blocking");
  EchoResponse resp;
  ClientContext c1;
  ASSERT_TRUE(stub_->Unary(&c1, req, &resp).ok());
  EXPECT_EQ(resp.payload(), "blocking");

  req.set_payload("callback");
  ClientContext c2;
  std::promise<Status> done;
  stub_->async()->Unary(&c2, &req, &resp, [&](Status s) { done.set_value(s); });
  ASSERT_TRUE(done.get_future().get().ok());
  EXPECT_EQ(resp.payload(), "callback");

  Status co;
  OnCq([&]() -> Task<void> {
    ClientContext c3;
    EchoRequest r;
    r.set_payload("coroutine");
    co = co_await stub_->co_Unary(&c3, r, &resp);
  });
  ASSERT_TRUE(co.ok()) << co.ToString();
  EXPECT_EQ(resp.payload(), "coroutine");
}

TEST_F(StubTest, ServerClientAndBidiStreaming) {
  int server_msgs = 0, bidi_matched = 0;
  EchoResponse client_result;
  Status s1, s2, s3;
  OnCq([&]() -> Task<void> {
    ClientContext ctx;
    auto call = co_await stub_->co_ServerStream(&ctx, &s1);
    EchoRequest req;
    req.set_count(100);
    co_await call->Write(req);
    call->WritesDone();
    EchoResponse r;
    while (co_await call->Read(&r)) server_msgs += r.count() == server_msgs;
    s1 = co_await call->Finish();
  });
  OnCq([&]() -> Task<void> {
    ClientContext ctx;
    auto call = co_await stub_->co_ClientStream(&ctx, &s2);
    for (int i = 0; i < 10; ++i) {
      EchoRequest req;
      req.set_payload("abc");
      co_await call->Write(req);
    }
    call->WritesDone();
    co_await call->Read(&client_result);
    s2 = co_await call->Finish();
  });
  OnCq([&]() -> Task<void> {
    ClientContext ctx;
    auto call = co_await stub_->co_Bidi(&ctx, &s3);
    for (int i = 0; i < 20; ++i) {
      EchoRequest req;
      req.set_payload(std::to_string(i));
      co_await call->Write(req);
      EchoResponse r;
      if (co_await call->Read(&r)) bidi_matched += r.payload() == std::to_string(i);
    }
    call->WritesDone();
    EchoResponse r;
    while (co_await call->Read(&r)) {
    }
    s3 = co_await call->Finish();
  });
  EXPECT_TRUE(s1.ok()) << s1.ToString();
  EXPECT_EQ(server_msgs, 100);
  EXPECT_TRUE(s2.ok()) << s2.ToString();
  EXPECT_EQ(client_result.count(), 10);
  EXPECT_EQ(client_result.total_bytes(), 30);
  EXPECT_TRUE(s3.ok()) << s3.ToString();
  EXPECT_EQ(bidi_matched, 20);
}

TEST_F(StubTest, CoroutineServerStreamTakesTheRequestAsTheBlockingFormDoes) {
  int n = 0;
  Status open, end;
  OnCq([&]() -> Task<void> {
    ClientContext ctx;
    EchoRequest req;
    req.set_count(12);
    auto call = co_await stub_->co_ServerStream(&ctx, req, &open);
    if (call == nullptr) co_return;
    EchoResponse r;
    while (co_await call->Read(&r)) n += r.count() == n;
    end = co_await call->Finish();
  });
  EXPECT_TRUE(open.ok()) << open.ToString();
  EXPECT_TRUE(end.ok()) << end.ToString();
  EXPECT_EQ(n, 12);
}

TEST_F(StubTest, BlockingStreamsHaveInitialMetadataBeforeFinish) {
  {  // WaitForInitialMetadata, before any message.
    ClientContext ctx;
    ctx.AddMetadata("x-echo-first", "early");
    EchoRequest req;
    req.set_count(3);
    req.set_interval_ms(50);
    auto reader = stub_->ServerStream(&ctx, req);
    reader->WaitForInitialMetadata();
    auto it = ctx.GetServerInitialMetadata().find("x-echo-first");
    ASSERT_NE(it, ctx.GetServerInitialMetadata().end());
    EXPECT_EQ(it->second, "early");
    EchoResponse r;
    int n = 0;
    while (reader->Read(&r)) ++n;
    EXPECT_TRUE(reader->Finish().ok());
    EXPECT_EQ(n, 3);
  }
  {  // From the first message on, without asking.
    ClientContext ctx;
    ctx.AddMetadata("x-echo-second", "with-the-message");
    EchoRequest req;
    req.set_count(2);
    auto reader = stub_->ServerStream(&ctx, req);
    EchoResponse r;
    ASSERT_TRUE(reader->Read(&r));
    EXPECT_EQ(ctx.GetServerInitialMetadata().count("x-echo-second"), 1u);
    while (reader->Read(&r)) {
    }
    EXPECT_TRUE(reader->Finish().ok());
  }
}

TEST_F(StubTest, UnaryReactorReportsMetadataThenOnDoneWithTheResponse) {
  struct Unary : ::ringrpc::ClientUnaryReactor {
    std::vector<std::string> events;
    std::promise<Status> done;
    void OnReadInitialMetadataDone(bool ok) override {
      events.push_back(ok ? "metadata" : "no metadata");
    }
    void OnDone(const Status& s) override {
      events.push_back("done");
      done.set_value(s);
    }
  };
  Unary reactor;
  ClientContext ctx;
  ctx.AddMetadata("x-echo-unary", "1");
  EchoRequest req;
  req.set_payload("reactor");
  EchoResponse resp;
  stub_->async()->Unary(&ctx, &req, &resp, &reactor);
  reactor.StartCall();
  Status s = reactor.done.get_future().get();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(resp.payload(), "reactor");
  EXPECT_EQ(reactor.events, (std::vector<std::string>{"metadata", "done"}));
  EXPECT_EQ(ctx.GetServerInitialMetadata().count("x-echo-unary"), 1u);

  Unary failing;  // the server's status reaches OnDone
  ClientContext ctx2;
  req.set_status_code(5);
  req.set_status_message("nope");
  stub_->async()->Unary(&ctx2, &req, &resp, &failing);
  failing.StartCall();
  Status f = failing.done.get_future().get();
  EXPECT_EQ(f.error_code(), StatusCode::NOT_FOUND);
  EXPECT_EQ(f.error_message(), "nope");
}

TEST_F(StubTest, BlockingStreamsAsInGrpcpp) {
  {
    ClientContext ctx;
    EchoRequest req;
    req.set_count(50);
    auto reader = stub_->ServerStream(&ctx, req);
    EchoResponse r;
    int n = 0;
    while (reader->Read(&r)) n += r.count() == n;
    Status s = reader->Finish();
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(n, 50);
  }
  {
    ClientContext ctx;
    EchoResponse summary;
    auto writer = stub_->ClientStream(&ctx, &summary);
    for (int i = 0; i < 7; ++i) {
      EchoRequest req;
      req.set_payload("xy");
      ASSERT_TRUE(writer->Write(req));
    }
    Status s = writer->Finish();
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(summary.count(), 7);
    EXPECT_EQ(summary.total_bytes(), 14);
  }
  {
    ClientContext ctx;
    auto stream = stub_->Bidi(&ctx);
    // One thread writes while this one reads, as grpc++ allows.
    std::thread writer([&] {
      for (int i = 0; i < 30; ++i) {
        EchoRequest req;
        req.set_payload(std::to_string(i));
        stream->Write(req);
      }
      stream->WritesDone();
    });
    EchoResponse r;
    int n = 0;
    while (stream->Read(&r)) n += r.payload() == std::to_string(n);
    writer.join();
    Status s = stream->Finish();
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(n, 30);
  }
}

// ---- callback reactors -----------------------------------------------------

// What every reactor test records; OnDone sets `done`.
struct Journal {
  std::mutex mu;
  std::vector<std::string> events;
  std::promise<Status> done;
  std::thread::id test_thread = std::this_thread::get_id();
  bool off_test_thread = true;
  void Note(std::string e) {
    std::lock_guard<std::mutex> lock(mu);
    if (std::this_thread::get_id() == test_thread) off_test_thread = false;
    events.push_back(std::move(e));
  }
  size_t Count(const std::string& prefix) {
    std::lock_guard<std::mutex> lock(mu);
    return std::count_if(events.begin(), events.end(),
                         [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
  }
};

Status WaitDone(Journal& j) {
  auto f = j.done.get_future();
  if (f.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "OnDone never ran";
    return Status(StatusCode::DEADLINE_EXCEEDED, "test timeout");
  }
  return f.get();
}

class Reader final : public ::ringrpc::ClientReadReactor<EchoResponse> {
 public:
  Reader(TestService::Stub* stub, const EchoRequest& req, Journal* j) : j_(j) {
    ctx_.AddMetadata("x-echo-who", "reader");
    stub->async()->ServerStream(&ctx_, &req, this);
    StartRead(&resp_);
    StartCall();
  }
  void OnReadInitialMetadataDone(bool ok) override {
    auto md = ctx_.GetServerInitialMetadata();
    auto it = md.find("x-echo-who");
    j_->Note(absl::StrCat("metadata ", ok, " ", it == md.end() ? "-" : it->second));
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      j_->Note("read end");
      return;
    }
    j_->Note(absl::StrCat("read ", resp_.count()));
    StartRead(&resp_);
  }
  void OnDone(const Status& s) override {
    j_->Note("done");
    j_->done.set_value(s);
  }
  ClientContext ctx_;

 private:
  Journal* j_;
  EchoResponse resp_;
};

TEST_F(StubTest, ReadReactorGetsEveryMessageThenOnDoneOnACqThread) {
  EchoRequest req;
  req.set_count(100);
  Journal j;
  Reader r(stub_.get(), req, &j);
  Status s = WaitDone(j);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(j.Count("read "), 101u);  // 100 messages and the end
  ASSERT_GE(j.events.size(), 3u);
  EXPECT_EQ(j.events.front(), "metadata 1 reader");
  EXPECT_EQ(j.events[1], "read 0");
  EXPECT_EQ(j.events[100], "read 99");
  EXPECT_EQ(j.events[101], "read end");
  EXPECT_EQ(j.events.back(), "done");
  EXPECT_TRUE(j.off_test_thread);
}

TEST_F(StubTest, ReadReactorSeesTheServersErrorStatus) {
  EchoRequest req;
  req.set_count(3);
  req.set_status_code(static_cast<int>(StatusCode::ABORTED));
  req.set_status_message("stopped at three");
  Journal j;
  Reader r(stub_.get(), req, &j);
  Status s = WaitDone(j);
  EXPECT_EQ(s.error_code(), StatusCode::ABORTED);
  EXPECT_EQ(s.error_message(), "stopped at three");
  EXPECT_EQ(j.Count("read end"), 1u) << "the outstanding read ends before OnDone";
  EXPECT_EQ(j.events.back(), "done");
}

class Writer final : public ::ringrpc::ClientWriteReactor<EchoRequest> {
 public:
  Writer(TestService::Stub* stub, int n, Journal* j) : j_(j), left_(n) {
    stub->async()->ClientStream(&ctx_, &resp_, this);
    AddHold();  // OnDone waits for the test's RemoveHold
    Next();
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    j_->Note(absl::StrCat("write ", ok));
    if (ok) Next();
  }
  void OnWritesDoneDone(bool ok) override { j_->Note(absl::StrCat("writes done ", ok)); }
  void OnDone(const Status& s) override {
    j_->Note("done");
    j_->done.set_value(s);
  }
  EchoResponse resp_;

 private:
  void Next() {
    if (left_ == 0) {
      StartWritesDone();
      return;
    }
    --left_;
    req_.set_payload(std::string(10, 'p'));
    StartWrite(&req_);
  }
  Journal* j_;
  int left_;
  ClientContext ctx_;
  EchoRequest req_;
};

TEST_F(StubTest, WriteReactorStreamsThenGetsTheResponseAndHoldsDelayOnDone) {
  Journal j;
  Writer w(stub_.get(), 50, &j);
  auto f = j.done.get_future();
  // The call ends on the server, but a hold is still there: no OnDone.
  for (int i = 0; i < 200 && j.Count("writes done") == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(f.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  w.RemoveHold();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  Status s = f.get();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(w.resp_.count(), 50);
  EXPECT_EQ(w.resp_.total_bytes(), 500);
  EXPECT_EQ(j.Count("write 1"), 50u);
  EXPECT_EQ(j.Count("writes done 1"), 1u);
}

class PingPong final : public ::ringrpc::ClientBidiReactor<EchoRequest, EchoResponse> {
 public:
  PingPong(TestService::Stub* stub, int rounds, Journal* j, bool cancel_midway = false)
      : j_(j), rounds_(rounds), cancel_midway_(cancel_midway) {
    stub->async()->Bidi(&ctx_, this);
    Send();
    StartRead(&resp_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (!ok) {
      j_->Note("read end");
      return;
    }
    j_->Note(absl::StrCat("pong ", resp_.payload()));
    if (++seen_ == rounds_) {
      StartWritesDone();
    } else {
      if (cancel_midway_ && seen_ == rounds_ / 2) ctx_.TryCancel();
      Send();
    }
    StartRead(&resp_);
  }
  void OnDone(const Status& s) override {
    j_->Note("done");
    j_->done.set_value(s);
  }

 private:
  void Send() {
    req_.set_payload(absl::StrCat(sent_++));
    StartWrite(&req_);
  }
  Journal* j_;
  int rounds_, seen_ = 0, sent_ = 0;
  bool cancel_midway_;
  ClientContext ctx_;
  EchoRequest req_;
  EchoResponse resp_;
};

TEST_F(StubTest, BidiReactorPingPongsInOrder) {
  Journal j;
  PingPong p(stub_.get(), 200, &j);
  Status s = WaitDone(j);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(j.Count("pong "), 200u);
  EXPECT_EQ(j.events[0], "pong 0");
  EXPECT_EQ(j.events[199], "pong 199");
  EXPECT_EQ(j.Count("read end"), 1u);
  EXPECT_EQ(j.events.back(), "done");
}

TEST_F(StubTest, BidiReactorTryCancelEndsItCancelledOnce) {
  Journal j;
  PingPong p(stub_.get(), 100, &j, /*cancel_midway=*/true);
  Status s = WaitDone(j);
  EXPECT_EQ(s.error_code(), StatusCode::CANCELLED) << s.ToString();
  EXPECT_LE(j.Count("pong "), 51u);
  EXPECT_EQ(j.Count("done"), 1u);
}

TEST(CallbackReactor, StartCallWithoutAStubIsAClearErrorNotAHang) {
  Journal j;
  struct Unbound : ::ringrpc::ClientBidiReactor<EchoRequest, EchoResponse> {
    Journal* j;
    void OnDone(const Status& s) override { j->done.set_value(s); }
  } r;
  r.j = &j;
  r.StartCall();
  Status s = WaitDone(j);
  EXPECT_EQ(s.error_code(), StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), ::testing::HasSubstr("stub->async()"));
}

TEST(CallbackReactor, AFailedOpenFailsTheQueuedOperationsThenOnDone) {
  ::ringrpc::ChannelArguments args;
  args.SetInt("ringrpc.connect_timeout_ms", 500);
  auto ch =
      ::ringrpc::CreateCustomChannel("127.0.0.1:1", ::ringrpc::InsecureChannelCredentials(), args);
  auto stub = TestService::NewStub(ch);
  EchoRequest req;
  Journal j;
  Reader r(stub.get(), req, &j);
  Status s = WaitDone(j);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE) << s.ToString();
  EXPECT_EQ(j.Count("read end"), 1u);
  EXPECT_EQ(j.Count("metadata"), 0u);
  EXPECT_EQ(j.events.back(), "done");
}

TEST(BlockingStream, FailureToOpenIsReportedByFinish) {
  auto channel = ::ringrpc::CreateChannel("127.0.0.1:1", ::ringrpc::InsecureChannelCredentials());
  auto stub = TestService::NewStub(channel);
  ClientContext ctx;
  auto reader = stub->ServerStream(&ctx, EchoRequest());
  EchoResponse r;
  EXPECT_FALSE(reader->Read(&r));
  EXPECT_EQ(reader->Finish().error_code(), StatusCode::UNAVAILABLE);
}

// Application code written against the interface can be tested with gMock:
// the generated Mock<Service>Stub (echo_test_mock.ringrpc.pb.h) has every
// method in every form, as grpc++'s generate_mock_code.
using MockTestService = ::ringrpc::test::ring::MockTestServiceStub;

// A unary reader in the CompletionQueue form, for tests: Finish fills the
// response and status and delivers the tag through an Alarm due now.
class FakeUnaryReader : public ::ringrpc::ClientAsyncResponseReaderInterface<EchoResponse> {
 public:
  FakeUnaryReader(::ringrpc::CompletionQueue* cq, std::string payload)
      : cq_(cq), payload_(std::move(payload)) {}
  void StartCall() override {}
  void ReadInitialMetadata(void*) override {}
  void Finish(EchoResponse* msg, Status* status, void* tag) override {
    msg->set_payload(payload_);
    *status = Status();
    alarm_.Set(cq_, std::chrono::system_clock::now(), tag);
  }

 private:
  ::ringrpc::CompletionQueue* cq_;
  std::string payload_;
  ::ringrpc::Alarm alarm_;
};

// Application code in the CompletionQueue form, written against the
// interface.
std::string ShoutAsync(TestService::StubInterface& stub, ::ringrpc::CompletionQueue* cq,
                       const std::string& text) {
  ClientContext ctx;
  EchoRequest req;
  req.set_payload(text);
  EchoResponse resp;
  Status s;
  auto rpc = stub.PrepareAsyncUnary(&ctx, req, cq);
  rpc->StartCall();
  rpc->Finish(&resp, &s, reinterpret_cast<void*>(7));
  void* tag = nullptr;
  bool ok = false;
  if (!cq->Next(&tag, &ok) || tag != reinterpret_cast<void*>(7) || !ok) return "no tag";
  return s.ok() ? resp.payload() + "!" : "error: " + s.error_message();
}

std::string Shout(TestService::StubInterface& stub, const std::string& text) {
  ClientContext ctx;
  EchoRequest req;
  req.set_payload(text);
  EchoResponse resp;
  Status s = stub.Unary(&ctx, req, &resp);
  return s.ok() ? resp.payload() + "!" : "error: " + s.error_message();
}

TEST(StubInterface, CanBeMocked) {
  MockTestService mock;
  EXPECT_CALL(mock, Unary(::testing::_, ::testing::_, ::testing::_))
      .WillOnce([](ClientContext*, const EchoRequest& req, EchoResponse* resp) {
        resp->set_payload("mocked " + req.payload());
        return Status();
      })
      .WillOnce(::testing::Return(Status(StatusCode::UNAVAILABLE, "down")));
  EXPECT_EQ(Shout(mock, "hi"), "mocked hi!");
  EXPECT_EQ(Shout(mock, "hi"), "error: down");
}

TEST(StubInterface, CompletionQueueFormCanBeMocked) {
  MockTestService mock;
  ::ringrpc::CompletionQueue cq;
  EXPECT_CALL(mock, PrepareAsyncUnaryRaw(::testing::_, ::testing::_, &cq))
      .WillOnce([&](ClientContext*, const EchoRequest& req, ::ringrpc::CompletionQueue* q) {
        return new FakeUnaryReader(q, "mocked " + req.payload());
      });
  EXPECT_EQ(ShoutAsync(mock, &cq, "hi"), "mocked hi!");
}

TEST(TrickyStubs, MocksOfKeywordNamedServicesCompileAndScriptCalls) {
  ringrpc::codegen_test::deep::nested::MockdeleteStub mock;
  EXPECT_CALL(mock, new_(::testing::_, ::testing::_, ::testing::_))
      .WillOnce(::testing::Return(Status(StatusCode::ABORTED, "scripted")));
  ringrpc::codegen_test::deep::nested::delete_::StubInterface& stub = mock;
  ClientContext ctx;
  ringrpc::codegen_test::deep::nested::Pong pong;
  EXPECT_EQ(stub.new_(&ctx, ringrpc::codegen_test::common::Ping(), &pong).error_message(),
            "scripted");
  EXPECT_EQ(stub.async(), &mock.mock_async());
}

TEST(TrickyStubs, KeywordNamesCompileAndCallThrough) {
  auto channel = ::ringrpc::CreateChannel("127.0.0.1:1", ::ringrpc::InsecureChannelCredentials());
  // As grpc++'s: NewStub also takes StubOptions, service_full_name() is a function.
  auto stub = ringrpc::codegen_test::deep::nested::delete_::NewStub(
      channel, ::ringrpc::StubOptions("tricky"));
  ClientContext ctx;
  ringrpc::codegen_test::common::Ping ping;
  ringrpc::codegen_test::deep::nested::Pong pong;
  Status s = stub->new_(&ctx, ping, &pong);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);  // nothing listens on port 1
  EXPECT_STREQ(ringrpc::codegen_test::deep::nested::Other::service_full_name(),
               "ringrpc.codegen_test.deep.nested.Other");
}

}  // namespace
