// The grpc++ server every migration client calls, in its own process:
// Greeter (examples/helloworld/helloworld.proto) and RouteGuide
// (examples/route_guide/route_guide.proto) on a free loopback port, which it
// prints as "PORT <n>". It runs until it is killed.
//
// Greeter.SayHello answers "Hello <name>"; the name "error" gets
// INVALID_ARGUMENT "no such name", "slow" waits 2 s (for deadlines).
// RouteGuide has a point (i, j) for i, j in 0..4 named "Place i,j".
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "examples/helloworld/helloworld.grpc.pb.h"
#include "examples/route_guide/route_guide.grpc.pb.h"

namespace {

class Greeter final : public helloworld::Greeter::Service {
  grpc::Status SayHello(grpc::ServerContext* ctx, const helloworld::HelloRequest* req,
                        helloworld::HelloReply* reply) override {
    if (req->name() == "error") return {grpc::StatusCode::INVALID_ARGUMENT, "no such name"};
    if (req->name() == "slow") std::this_thread::sleep_for(std::chrono::seconds(2));
    std::string who = req->name();
    auto user = ctx->client_metadata().find("x-user");
    if (user != ctx->client_metadata().end())
      who += " (" + std::string(user->second.data(), user->second.size()) + ")";
    reply->set_message("Hello " + who);
    return grpc::Status::OK;
  }
  grpc::Status SayHelloStream(grpc::ServerContext*, const helloworld::HelloRequest* req,
                              grpc::ServerWriter<helloworld::HelloReply>* writer) override {
    for (int i = 0; i < req->times(); ++i) {
      helloworld::HelloReply r;
      r.set_message("Hello " + req->name() + " #" + std::to_string(i));
      writer->Write(r);
    }
    return grpc::Status::OK;
  }
};

bool Named(const routeguide::Point& p, std::string* name) {
  const int i = p.latitude(), j = p.longitude();
  if (i < 0 || i > 4 || j < 0 || j > 4) return false;
  *name = "Place " + std::to_string(i) + "," + std::to_string(j);
  return true;
}

class RouteGuide final : public routeguide::RouteGuide::Service {
  grpc::Status GetFeature(grpc::ServerContext*, const routeguide::Point* p,
                          routeguide::Feature* f) override {
    std::string name;
    if (Named(*p, &name)) f->set_name(name);
    *f->mutable_location() = *p;
    return grpc::Status::OK;
  }
  grpc::Status ListFeatures(grpc::ServerContext*, const routeguide::Rectangle* r,
                            grpc::ServerWriter<routeguide::Feature>* writer) override {
    for (int i = r->lo().latitude(); i <= r->hi().latitude(); ++i) {
      for (int j = r->lo().longitude(); j <= r->hi().longitude(); ++j) {
        routeguide::Feature f;
        f.mutable_location()->set_latitude(i);
        f.mutable_location()->set_longitude(j);
        std::string name;
        if (!Named(f.location(), &name)) continue;
        f.set_name(name);
        writer->Write(f);
      }
    }
    return grpc::Status::OK;
  }
  grpc::Status RecordRoute(grpc::ServerContext*, grpc::ServerReader<routeguide::Point>* reader,
                           routeguide::RouteSummary* summary) override {
    routeguide::Point p;
    std::string name;
    while (reader->Read(&p)) {
      summary->set_point_count(summary->point_count() + 1);
      if (Named(p, &name)) summary->set_feature_count(summary->feature_count() + 1);
    }
    return grpc::Status::OK;
  }
  grpc::Status RouteChat(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<routeguide::RouteNote, routeguide::RouteNote>* stream) override {
    routeguide::RouteNote note;
    while (stream->Read(&note)) {
      note.set_message("echo: " + note.message());
      stream->Write(note);
    }
    return grpc::Status::OK;
  }
};

}  // namespace

int main() {
  Greeter greeter;
  RouteGuide route_guide;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&greeter);
  builder.RegisterService(&route_guide);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::fprintf(stderr, "migration server: could not start\n");
    return 1;
  }
  std::printf("PORT %d\n", port);
  std::fflush(stdout);
  server->Wait();  // until the test kills it
  return 0;
}
