// tests/races/shutdown_helper — a program that ends the ways grpc++ users'
// programs end (grpc/grpc#37858, #27086): exit() or a return from main with
// calls in flight and the CQ threads busy, exit() from inside a callback on
// a CQ thread, a static channel destroyed at exit. Run by shutdown_test,
// which checks that it ends at once with status 0 and, in the sanitizer
// builds, with no report (a report makes the exit status non-zero).
//
//   shutdown_helper <mode> <server address>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ringrpc/client/callback_reactor.h"
#include "ringrpc/client/channel.h"
#include "tests/proto/echo_test.ringrpc.pb.h"

namespace {

using ringrpc::ClientContext;
using ringrpc::Status;
using ringrpc::test::EchoRequest;
using ringrpc::test::EchoResponse;
using ringrpc::test::ring::TestService;

// Calls still running when the program ends: never freed (the program ends
// first), and reachable from here, so not a leak either.
struct InFlight {
  ClientContext ctx;
  EchoRequest req;
  EchoResponse resp;
};
std::vector<InFlight*>* in_flight = new std::vector<InFlight*>();

class BidiForever final : public ringrpc::ClientBidiReactor<EchoRequest, EchoResponse> {
 public:
  explicit BidiForever(TestService::Stub* stub) {
    req_.set_payload("bidi");
    stub->async()->Bidi(&ctx_, this);
    StartRead(&resp_);
    StartWrite(&req_);
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (ok) StartWrite(&req_);  // writes until the program ends
  }
  void OnReadDone(bool ok) override {
    if (ok) StartRead(&resp_);
  }
  void OnDone(const Status&) override {}

 private:
  ClientContext ctx_;
  EchoRequest req_;
  EchoResponse resp_;
};

// Slow unary calls, a few busy bidi streams: the CQ threads have work.
void StartLoad(TestService::Stub* stub, int unary, int bidi) {
  for (int i = 0; i < unary; ++i) {
    auto* c = new InFlight();
    in_flight->push_back(c);
    c->req.set_sleep_ms(20000);
    c->req.set_payload(std::string(100 + i, 'x'));
    stub->async()->Unary(&c->ctx, &c->req, &c->resp, [](Status) {});
  }
  for (int i = 0; i < bidi; ++i) new BidiForever(stub);
}

bool OneCall(TestService::Stub* stub) {
  ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  EchoRequest req;
  req.set_payload("ping");
  EchoResponse resp;
  Status s = stub->Unary(&ctx, req, &resp);
  if (!s.ok() || resp.payload() != "ping") {
    std::fprintf(stderr, "call failed: %s\n", s.ToString().c_str());
    return false;
  }
  return true;
}

std::shared_ptr<ringrpc::Channel> static_channel;

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: shutdown_helper <mode> <server address>\n");
    return 2;
  }
  const std::string mode = argv[1];
  const std::string target = argv[2];
  auto channel = ringrpc::CreateChannel(target, ringrpc::InsecureChannelCredentials());
  auto stub = TestService::NewStub(channel);
  if (!OneCall(stub.get())) return 3;
  if (mode == "exit-in-flight" || mode == "return-in-flight") {
    StartLoad(stub.get(), 200, 8);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::printf("LOADED\n");
    std::fflush(stdout);
    if (mode == "exit-in-flight") std::exit(0);
    return 0;  // the channel and stub go first, then the statics
  }
  if (mode == "exit-from-callback") {
    StartLoad(stub.get(), 100, 4);
    std::printf("LOADED\n");
    std::fflush(stdout);
    auto* c = new InFlight();
    c->req.set_payload("last");
    stub->async()->Unary(&c->ctx, &c->req, &c->resp, [](Status) { std::exit(0); });
    std::this_thread::sleep_for(std::chrono::seconds(30));  // exit() comes first
    return 4;
  }
  if (mode == "static-channel") {
    static_channel = ringrpc::CreateChannel(target, ringrpc::InsecureChannelCredentials());
    static std::unique_ptr<TestService::Stub> static_stub = TestService::NewStub(static_channel);
    if (!OneCall(static_stub.get())) return 3;
    StartLoad(static_stub.get(), 50, 4);
    std::printf("LOADED\n");
    std::fflush(stdout);
    return 0;  // static_channel and static_stub are destroyed at exit
  }
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
