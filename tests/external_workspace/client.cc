// A user's client: generated stub, ringrpc channel. With no server on the
// target it must end UNAVAILABLE saying why (proves it builds, links, runs).
#include <cstdio>
#include <string>

#include "greeter.ringrpc.pb.h"

int main(int argc, char** argv) {
  std::string target = argc > 1 ? argv[1] : "127.0.0.1:1";
  auto channel = ringrpc::CreateChannel(target, ringrpc::InsecureChannelCredentials());
  auto stub = user::app::Greeter::NewStub(channel);
  ringrpc::ClientContext ctx;
  user::app::HelloRequest req;
  req.set_name("from another workspace");
  user::app::HelloReply reply;
  ringrpc::Status s = stub->SayHello(&ctx, req, &reply);
  std::printf("%s\n", s.ok() ? reply.message().c_str() : s.ToString().c_str());
  return s.ok() ? 0 : (s.error_code() == ringrpc::StatusCode::UNAVAILABLE ? 3 : 1);
}
