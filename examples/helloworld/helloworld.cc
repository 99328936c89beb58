// helloworld: a grpc++ Greeter server embedded in this process on a free
// loopback port, called through the generated ringrpc stub in each form:
// blocking, callback, coroutine, and a server stream. Prints the replies
// and the channel's pool metrics; exits 0 when every reply is right.
//
//   bazel run //examples/helloworld                       # embedded server
//   bazel run //examples/helloworld -- --target=host:port # an existing one
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <cstring>
#include <future>
#include <string>

#include "examples/common/embedded_server.h"
#include "examples/helloworld/helloworld.grpc.pb.h"
#include "examples/helloworld/helloworld.ringrpc.pb.h"

namespace {

// The server: grpc++'s own API (this is the part ringrpc does not replace).
class GreeterService final : public helloworld::Greeter::Service {
  grpc::Status SayHello(grpc::ServerContext*, const helloworld::HelloRequest* req,
                        helloworld::HelloReply* reply) override {
    reply->set_message("Hello " + req->name());
    return grpc::Status::OK;
  }
  grpc::Status SayHelloStream(grpc::ServerContext*, const helloworld::HelloRequest* req,
                              grpc::ServerWriter<helloworld::HelloReply>* writer) override {
    for (int i = 0; i < req->times(); ++i) {
      helloworld::HelloReply reply;
      reply.set_message("Hello " + req->name() + " #" + std::to_string(i + 1));
      writer->Write(reply);
    }
    return grpc::Status::OK;
  }
};

using ::ringrpc::Status;

ringrpc::Task<void> CoroutineCalls(helloworld::ring::Greeter::Stub* stub,
                                   std::promise<std::string>* out) {
  std::string text;
  ::ringrpc::ClientContext ctx;
  helloworld::HelloRequest req;
  req.set_name("coroutine");
  helloworld::HelloReply reply;
  Status s = co_await stub->co_SayHello(&ctx, req, &reply);
  text += s.ok() ? reply.message() : "error: " + s.ToString();

  {
    ::ringrpc::ClientContext sctx;
    Status start;
    req.set_name("stream");
    req.set_times(3);
    auto call = co_await stub->co_SayHelloStream(&sctx, &start);
    if (call == nullptr) {
      text += " | stream error: " + start.ToString();
    } else {
      co_await call->Write(req);
      call->WritesDone();
      while (co_await call->Read(&reply)) text += " | " + reply.message();
      Status fin = co_await call->Finish();
      if (!fin.ok()) text += " | stream error: " + fin.ToString();
    }
  }  // the call (and its stream lease) ends here, before main reads metrics
  out->set_value(text);
}

}  // namespace

int main(int argc, char** argv) {
  GreeterService service;
  std::string target;
  std::unique_ptr<grpc::Server> server = examples::ServerFromArgs(argc, argv, &service, &target);
  if (target.empty()) return 1;

  auto channel = ::ringrpc::CreateChannel(target, ::ringrpc::InsecureChannelCredentials());
  auto stub = helloworld::ring::Greeter::NewStub(channel);
  bool ok = true;

  // 1. Blocking.
  {
    ::ringrpc::ClientContext ctx;
    helloworld::HelloRequest req;
    req.set_name("blocking");
    helloworld::HelloReply reply;
    Status s = stub->SayHello(&ctx, req, &reply);
    std::printf("blocking:  %s\n", s.ok() ? reply.message().c_str() : s.ToString().c_str());
    ok &= s.ok() && reply.message() == "Hello blocking";
  }
  // 2. Callback.
  {
    ::ringrpc::ClientContext ctx;
    helloworld::HelloRequest req;
    req.set_name("callback");
    helloworld::HelloReply reply;
    std::promise<Status> done;
    stub->async()->SayHello(&ctx, &req, &reply, [&](Status s) { done.set_value(s); });
    Status s = done.get_future().get();
    std::printf("callback:  %s\n", s.ok() ? reply.message().c_str() : s.ToString().c_str());
    ok &= s.ok() && reply.message() == "Hello callback";
  }
  // 3. Coroutines on a CQ thread: unary and a server stream.
  {
    std::promise<std::string> text;
    channel->Spawn(CoroutineCalls(stub.get(), &text));
    std::string t = text.get_future().get();
    std::printf("coroutine: %s\n", t.c_str());
    ok &= t == "Hello coroutine | Hello stream #1 | Hello stream #2 | Hello stream #3";
  }

  ::ringrpc::pool::PoolMetrics m = channel->Metrics();
  std::printf("pool: %s\n", m.ToString().c_str());
  std::printf("%s\n", ok ? "all replies correct" : "SOME REPLIES WRONG");
  stub.reset();
  channel.reset();
  if (server) server->Shutdown();
  return ok ? 0 : 1;
}
