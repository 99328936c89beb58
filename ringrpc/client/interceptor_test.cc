// Client interceptors (issue 14, part 3) against a grpc++ server process:
// an auth-header interceptor, a logging one (the hook points of each call
// form, in order), one that fails calls, one that rewrites messages and
// status, and the order of several.
#include "ringrpc/client/interceptor.h"

#include <gmock/gmock.h>
#include <google/protobuf/message.h>
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "ringrpc/client/blocking_stream.h"
#include "ringrpc/client/callback_reactor.h"
#include "ringrpc/client/generic_stub.h"
#include "tests/proto/echo_test.ringrpc.pb.h"
#include "tests/testing/hook_log.h"
#include "tests/testing/server_process.h"

namespace ringrpc {
namespace {

using experimental::ClientInterceptorFactoryInterface;
using experimental::ClientRpcInfo;
using experimental::InterceptionHookPoints;
using experimental::Interceptor;
using experimental::InterceptorBatchMethods;
using test::EchoRequest;
using test::EchoResponse;
using test::ring::TestService;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Hook = InterceptionHookPoints;

using testing::kHookNames;
using testing::kHooks;
using Log = testing::HookLog;

// What each test's interceptor does at a hook point (then it proceeds,
// unless the action failed the call).
using Action = std::function<void(Hook, InterceptorBatchMethods*)>;

class TestInterceptor final : public Interceptor {
 public:
  TestInterceptor(std::string name, Log* log, Action action)
      : name_(std::move(name)), log_(log), action_(std::move(action)) {}
  void Intercept(InterceptorBatchMethods* m) override {
    for (size_t i = 0; i < std::size(kHooks); ++i) {
      if (!m->QueryInterceptionHookPoint(kHooks[i])) continue;
      log_->Add(name_ + ":" + kHookNames[i]);
      bool failed = false;
      if (action_) {
        action_(kHooks[i], m);
        failed = failed_;
      }
      if (!failed) m->Proceed();
    }
  }
  bool failed_ = false;

 private:
  std::string name_;
  Log* log_;
  Action action_;
};

class Factory final : public ClientInterceptorFactoryInterface {
 public:
  Factory(std::string name, Log* log, Action action = nullptr)
      : name_(std::move(name)), log_(log), action_(std::move(action)) {}
  Interceptor* CreateClientInterceptor(ClientRpcInfo* info) override {
    log_->Add(name_ + ":create " + info->method());
    return new TestInterceptor(name_, log_, action_);
  }

 private:
  std::string name_;
  Log* log_;
  Action action_;
};

class InterceptorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = testing::ServerProcess::Start();
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = std::move(*s);
  }
  std::unique_ptr<TestService::Stub> Stub(
      std::vector<std::unique_ptr<ClientInterceptorFactoryInterface>> factories) {
    return TestService::NewStub(experimental::CreateCustomChannelWithInterceptors(
        server_->address(), InsecureChannelCredentials(), ChannelArguments(),
        std::move(factories)));
  }
  template <typename... F>
  static std::vector<std::unique_ptr<ClientInterceptorFactoryInterface>> List(
      std::unique_ptr<F>... f) {
    std::vector<std::unique_ptr<ClientInterceptorFactoryInterface>> v;
    (v.push_back(std::move(f)), ...);
    return v;
  }
  std::unique_ptr<testing::ServerProcess> server_;
  Log log_;
};

TEST_F(InterceptorTest, AnAuthHeaderInterceptorAddsMetadataToEveryCall) {
  auto stub =
      Stub(List(std::make_unique<Factory>("auth", &log_, [](Hook h, InterceptorBatchMethods* m) {
        if (h == Hook::PRE_SEND_INITIAL_METADATA) {
          m->GetSendInitialMetadata()->emplace("x-echo-auth", "Bearer abc");
        }
      })));
  ClientContext ctx;
  EchoRequest req;
  req.set_payload("hi");
  EchoResponse resp;
  Status s = stub->Unary(&ctx, req, &resp);
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto it = ctx.GetServerInitialMetadata().find("x-echo-auth");
  ASSERT_NE(it, ctx.GetServerInitialMetadata().end());
  EXPECT_EQ(it->second, "Bearer abc");
}

TEST_F(InterceptorTest, ALoggingInterceptorSeesEveryHookOfEachCallFormInOrder) {
  auto stub = Stub(List(std::make_unique<Factory>("log", &log_)));
  const std::vector<std::string> unary = {"log:create /ringrpc.test.TestService/Unary",
                                          "log:send_md",
                                          "log:send_msg",
                                          "log:close",
                                          "log:recv_md",
                                          "log:recv_msg",
                                          "log:status"};
  {  // blocking
    ClientContext ctx;
    EchoRequest req;
    EchoResponse resp;
    ASSERT_TRUE(stub->Unary(&ctx, req, &resp).ok());
    EXPECT_EQ(log_.Take(), unary);
  }
  {  // callback
    ClientContext ctx;
    EchoRequest req;
    EchoResponse resp;
    std::promise<Status> done;
    stub->async()->Unary(&ctx, &req, &resp, [&](Status s) { done.set_value(s); });
    ASSERT_TRUE(done.get_future().get().ok());
    EXPECT_EQ(log_.Take(), unary);
  }
  {  // coroutine, a server stream of 2
    Status open, end;
    std::promise<void> finished;
    auto channel = stub->channel();
    channel->Spawn([](TestService::Stub* stub, Status* open, Status* end,
                      std::promise<void>* finished) -> Task<void> {
      ClientContext ctx;
      EchoRequest req;
      req.set_count(2);
      auto call = co_await stub->co_ServerStream(&ctx, req, open);
      if (call) {
        EchoResponse r;
        while (co_await call->Read(&r)) {
        }
        *end = co_await call->Finish();
      }
      finished->set_value();
    }(stub.get(), &open, &end, &finished));
    finished.get_future().get();
    ASSERT_TRUE(open.ok() && end.ok()) << open.ToString() << " " << end.ToString();
    EXPECT_THAT(log_.Take(), ElementsAre("log:create /ringrpc.test.TestService/ServerStream",
                                         "log:send_md", "log:send_msg", "log:close", "log:recv_md",
                                         "log:recv_msg", "log:recv_msg", "log:status"));
  }
}

TEST_F(InterceptorTest, SeveralRunInTheirOrderAtEveryHook) {
  auto stub =
      Stub(List(std::make_unique<Factory>("A", &log_), std::make_unique<Factory>("B", &log_)));
  ClientContext ctx;
  EchoRequest req;
  EchoResponse resp;
  ASSERT_TRUE(stub->Unary(&ctx, req, &resp).ok());
  EXPECT_THAT(log_.Take(),
              ElementsAre("A:create /ringrpc.test.TestService/Unary",
                          "B:create /ringrpc.test.TestService/Unary", "A:send_md", "B:send_md",
                          "A:send_msg", "B:send_msg", "A:close", "B:close", "A:recv_md",
                          "B:recv_md", "A:recv_msg", "B:recv_msg", "A:status", "B:status"));
}

TEST_F(InterceptorTest, AnInterceptorThatFailsACallEndsItBeforeAnythingIsSent) {
  Action deny = [](Hook h, InterceptorBatchMethods* m) {
    if (h == Hook::PRE_SEND_INITIAL_METADATA) {
      m->Fail(Status(StatusCode::PERMISSION_DENIED, "not on this method"));
    }
  };
  auto stub = Stub(List(std::make_unique<Factory>("deny", &log_, deny),
                        std::make_unique<Factory>("after", &log_)));
  ClientContext ctx;
  EchoRequest req;
  EchoResponse resp;
  Status s = stub->Unary(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(), "not on this method");
  // The second interceptor never ran, and the server never saw a call.
  for (const std::string& line : log_.Take())
    EXPECT_EQ(line.rfind("after:send", 0), std::string::npos);
  test::StatsResponse stats;
  ClientContext sctx;
  auto plain =
      TestService::NewStub(CreateChannel(server_->address(), InsecureChannelCredentials()));
  ASSERT_TRUE(plain->Stats(&sctx, test::StatsRequest(), &stats).ok());
  EXPECT_EQ(stats.calls(), 0);
}

TEST_F(InterceptorTest, MessagesAndStatusCanBeRewritten) {
  Action rewrite = [](Hook h, InterceptorBatchMethods* m) {
    if (h == Hook::PRE_SEND_MESSAGE) {
      EchoRequest req;
      ASSERT_TRUE(req.ParseFromString(*m->GetSerializedSendMessage()));
      req.set_payload("rewritten:" + req.payload());
      *m->GetSerializedSendMessage() = req.SerializeAsString();
    }
    if (h == Hook::POST_RECV_MESSAGE) {
      EchoResponse resp;
      ASSERT_TRUE(resp.ParseFromString(*m->GetSerializedRecvMessage()));
      resp.set_payload(resp.payload() + ":seen");
      *m->GetSerializedRecvMessage() = resp.SerializeAsString();
    }
    if (h == Hook::POST_RECV_STATUS && m->GetRecvStatus()->error_code() == StatusCode::NOT_FOUND) {
      *m->GetRecvStatus() =
          Status(StatusCode::UNAVAILABLE, "mapped: " + m->GetRecvStatus()->error_message());
    }
  };
  auto stub = Stub(List(std::make_unique<Factory>("rw", &log_, rewrite)));
  ClientContext ctx;
  EchoRequest req;
  req.set_payload("original");
  EchoResponse resp;
  ASSERT_TRUE(stub->Unary(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.payload(), "rewritten:original:seen");
  ClientContext ctx2;
  req.set_status_code(static_cast<int>(StatusCode::NOT_FOUND));
  req.set_status_message("gone");
  Status s = stub->Unary(&ctx2, req, &resp);
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_EQ(s.error_message(), "mapped: gone");
}

TEST_F(InterceptorTest, MessagesAreSeenAndChangedAsTheirTypes) {
  Action typed = [](Hook h, InterceptorBatchMethods* m) {
    if (h == Hook::PRE_SEND_MESSAGE) {
      const auto* req = static_cast<const EchoRequest*>(m->GetSendMessage());
      ASSERT_NE(req, nullptr);
      EchoRequest changed = *req;
      changed.set_payload("typed:" + req->payload());
      m->ModifySendMessage(&changed);  // serialized now: `changed` may go
      // The bytes and the typed view agree afterwards.
      EchoRequest bytes;
      ASSERT_TRUE(bytes.ParseFromString(*m->GetSerializedSendMessage()));
      EXPECT_EQ(bytes.payload(), changed.payload());
      EXPECT_EQ(static_cast<const EchoRequest*>(m->GetSendMessage())->payload(), changed.payload());
    }
    if (h == Hook::POST_RECV_MESSAGE) {
      // As grpc++'s interceptors do: the received message through the
      // protobuf base class, then as its own type.
      const auto* base = static_cast<const google::protobuf::Message*>(m->GetRecvMessage());
      ASSERT_NE(base, nullptr);
      EXPECT_EQ(base->GetTypeName(), "ringrpc.test.EchoResponse");
      auto* resp = static_cast<EchoResponse*>(m->GetRecvMessage());
      resp->set_payload(resp->payload() + ":seen");
    }
  };
  auto stub = Stub(List(std::make_unique<Factory>("typed", &log_, typed)));
  {
    ClientContext ctx;
    EchoRequest req;
    req.set_payload("original");
    EchoResponse resp;
    ASSERT_TRUE(stub->Unary(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.payload(), "typed:original:seen");
  }
  {  // each message of a stream
    ClientContext ctx;
    auto stream = stub->Bidi(&ctx);
    EchoRequest req;
    EchoResponse resp;
    for (const char* p : {"a", "b"}) {
      req.set_payload(p);
      ASSERT_TRUE(stream->Write(req));
      ASSERT_TRUE(stream->Read(&resp));
      EXPECT_EQ(resp.payload(), std::string("typed:") + p + ":seen");
    }
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }
}

TEST_F(InterceptorTest, AMethodNotInTheDescriptorPoolHasNoTypedMessages) {
  std::vector<bool> typed_seen;
  Action look = [&](Hook h, InterceptorBatchMethods* m) {
    if (h == Hook::PRE_SEND_MESSAGE) {
      typed_seen.push_back(m->GetSendMessage() != nullptr);
      m->ModifySendMessage(nullptr);  // ignored: nothing to send instead
    }
  };
  auto stub = Stub(List(std::make_unique<Factory>("look", &log_, look)));
  // A path no proto in the program declares (the server answers
  // UNIMPLEMENTED): no type to parse into.
  ClientContext ctx;
  std::string out;
  Status s = GenericStub(stub->channel()).UnaryCall(&ctx, "/no.such.Service/Unary", "x", &out);
  EXPECT_EQ(s.error_code(), StatusCode::UNIMPLEMENTED) << s.ToString();
  ClientContext ctx2;
  EchoRequest req;
  req.set_payload("x");
  EchoResponse resp;
  ASSERT_TRUE(stub->Unary(&ctx2, req, &resp).ok());
  EXPECT_EQ(resp.payload(), "x");
  EXPECT_EQ(typed_seen, (std::vector<bool>{false, true}));
}

TEST_F(InterceptorTest, FailingOnAReceivedMessageEndsTheStreamWithThatStatus) {
  int seen = 0;
  Action stop_after_two = [&seen](Hook h, InterceptorBatchMethods* m) {
    if (h == Hook::POST_RECV_MESSAGE && ++seen == 2) {
      m->Fail(Status(StatusCode::ABORTED, "enough"));
    }
  };
  auto factory = std::make_unique<Factory>("stop", &log_, stop_after_two);
  auto stub = Stub(List(std::move(factory)));
  ClientContext ctx;
  EchoRequest req;
  req.set_count(50);
  req.set_interval_ms(5);
  auto reader = stub->ServerStream(&ctx, req);
  EchoResponse r;
  int n = 0;
  while (reader->Read(&r)) ++n;
  Status s = reader->Finish();
  EXPECT_EQ(n, 1);
  EXPECT_EQ(s.error_code(), StatusCode::ABORTED);
  EXPECT_EQ(s.error_message(), "enough");
}

TEST_F(InterceptorTest, TryCancelRunsThePreSendCancelHook) {
  auto stub = Stub(List(std::make_unique<Factory>("c", &log_)));
  ClientContext ctx;
  EchoRequest req;
  req.set_sleep_ms(5000);
  EchoResponse resp;
  std::promise<Status> done;
  stub->async()->Unary(&ctx, &req, &resp, [&](Status s) { done.set_value(s); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ctx.TryCancel();
  EXPECT_EQ(done.get_future().get().error_code(), StatusCode::CANCELLED);
  std::vector<std::string> lines = log_.Take();
  EXPECT_NE(std::find(lines.begin(), lines.end(), "c:cancel"), lines.end());
}

TEST_F(InterceptorTest, ClientRpcInfoSaysEachCallsKindInEveryForm) {
  struct KindLog final : public ClientInterceptorFactoryInterface {
    explicit KindLog(Log* log) : log(log) {}
    Interceptor* CreateClientInterceptor(ClientRpcInfo* info) override {
      static constexpr const char* kNames[] = {"UNARY", "CLIENT_STREAMING", "SERVER_STREAMING",
                                               "BIDI_STREAMING", "UNKNOWN"};
      log->Add(std::string(info->method()).substr(sizeof("/ringrpc.test.TestService/") - 1) + " " +
               kNames[info->type()]);
      return nullptr;  // no interceptor: the call goes on without one
    }
    Log* log;
  };
  auto stub = Stub(List(std::make_unique<KindLog>(&log_)));
  EchoRequest req;
  EchoResponse resp;
  {
    ClientContext ctx;
    ASSERT_TRUE(stub->Unary(&ctx, req, &resp).ok());
  }
  {  // a unary reactor opens as a stream does
    class Done final : public ClientUnaryReactor {
     public:
      void OnDone(const Status& s) override { done.set_value(s); }
      std::promise<Status> done;
    } reactor;
    ClientContext ctx;
    stub->async()->Unary(&ctx, &req, &resp, &reactor);
    reactor.StartCall();
    ASSERT_TRUE(reactor.done.get_future().get().ok());
  }
  {
    ClientContext ctx;
    auto reader = stub->ServerStream(&ctx, req);
    while (reader->Read(&resp)) {
    }
    ASSERT_TRUE(reader->Finish().ok());
  }
  {
    ClientContext ctx;
    auto writer = stub->ClientStream(&ctx, &resp);
    writer->WritesDone();
    ASSERT_TRUE(writer->Finish().ok());
  }
  {
    ClientContext ctx;
    auto stream = stub->Bidi(&ctx);
    stream->WritesDone();
    ASSERT_TRUE(stream->Finish().ok());
  }
  {  // coroutine form
    std::promise<void> finished;
    stub->channel()->Spawn([](TestService::Stub* stub, std::promise<void>* finished) -> Task<void> {
      ClientContext ctx;
      Status open;
      auto call = co_await stub->co_ClientStream(&ctx, &open);
      if (call) {
        call->WritesDone();
        (void)co_await call->Finish();
      }
      finished->set_value();
    }(stub.get(), &finished));
    finished.get_future().get();
  }
  {  // a stream opened by name: grpc++'s generic streams are bidirectional
    ClientContext ctx;
    auto stream = GenericStub(stub->channel()).Call(&ctx, "/ringrpc.test.TestService/Bidi");
    stream->WritesDone();
    ASSERT_TRUE(stream->Finish().ok());
  }
  EXPECT_THAT(log_.Take(),
              ElementsAre("Unary UNARY", "Unary UNARY", "ServerStream SERVER_STREAMING",
                          "ClientStream CLIENT_STREAMING", "Bidi BIDI_STREAMING",
                          "ClientStream CLIENT_STREAMING", "Bidi BIDI_STREAMING"));
}

}  // namespace
}  // namespace ringrpc
