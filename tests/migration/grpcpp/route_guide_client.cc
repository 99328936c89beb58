// grpc++'s route_guide_client.cc shape: the four call kinds, blocking.
#include <grpcpp/grpcpp.h>

#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "examples/route_guide/route_guide.grpc.pb.h"

using grpc::Channel;
using grpc::ClientContext;
using grpc::ClientReader;
using grpc::ClientReaderWriter;
using grpc::ClientWriter;
using grpc::Status;
using routeguide::Feature;
using routeguide::Point;
using routeguide::Rectangle;
using routeguide::RouteGuide;
using routeguide::RouteNote;
using routeguide::RouteSummary;

Point MakePoint(long latitude, long longitude) {
  Point p;
  p.set_latitude(latitude);
  p.set_longitude(longitude);
  return p;
}

RouteNote MakeRouteNote(const std::string& message, long latitude, long longitude) {
  RouteNote n;
  n.set_message(message);
  n.mutable_location()->CopyFrom(MakePoint(latitude, longitude));
  return n;
}

class RouteGuideClient {
 public:
  RouteGuideClient(std::shared_ptr<Channel> channel) : stub_(RouteGuide::NewStub(channel)) {}

  void GetFeature() {
    Feature feature;
    GetOneFeature(MakePoint(1, 2), &feature);
    GetOneFeature(MakePoint(9, 9), &feature);
  }

  void ListFeatures() {
    routeguide::Rectangle rect;
    Feature feature;
    ClientContext context;
    rect.mutable_lo()->set_latitude(1);
    rect.mutable_lo()->set_longitude(1);
    rect.mutable_hi()->set_latitude(2);
    rect.mutable_hi()->set_longitude(3);
    std::cout << "Looking for features between (1, 1) and (2, 3)" << std::endl;
    std::unique_ptr<ClientReader<Feature>> reader(stub_->ListFeatures(&context, rect));
    while (reader->Read(&feature)) {
      std::cout << "Found feature called " << feature.name() << " at "
                << feature.location().latitude() << ", " << feature.location().longitude()
                << std::endl;
    }
    Status status = reader->Finish();
    if (status.ok()) {
      std::cout << "ListFeatures rpc succeeded." << std::endl;
    } else {
      std::cout << "ListFeatures rpc failed." << std::endl;
    }
  }

  void RecordRoute() {
    Point point;
    RouteSummary stats;
    ClientContext context;
    const int kPoints = 10;
    std::unique_ptr<ClientWriter<Point>> writer(stub_->RecordRoute(&context, &stats));
    for (int i = 0; i < kPoints; i++) {
      if (!writer->Write(MakePoint(i, i))) {
        break;  // Broken stream.
      }
    }
    writer->WritesDone();
    Status status = writer->Finish();
    if (status.ok()) {
      std::cout << "Finished trip with " << stats.point_count() << " points\n"
                << "Passed " << stats.feature_count() << " features\n";
    } else {
      std::cout << "RecordRoute rpc failed." << std::endl;
    }
  }

  void RouteChat() {
    ClientContext context;
    std::shared_ptr<ClientReaderWriter<RouteNote, RouteNote>> stream(stub_->RouteChat(&context));
    std::thread writer([stream]() {
      std::vector<RouteNote> notes{
          MakeRouteNote("First message", 0, 0), MakeRouteNote("Second message", 0, 1),
          MakeRouteNote("Third message", 1, 0), MakeRouteNote("Fourth message", 0, 0)};
      for (const RouteNote& note : notes) {
        stream->Write(note);
      }
      stream->WritesDone();
    });
    RouteNote server_note;
    while (stream->Read(&server_note)) {
      std::cout << "Got message " << server_note.message() << " at "
                << server_note.location().latitude() << ", " << server_note.location().longitude()
                << std::endl;
    }
    writer.join();
    Status status = stream->Finish();
    if (!status.ok()) {
      std::cout << "RouteChat rpc failed." << std::endl;
    }
  }

 private:
  bool GetOneFeature(const Point& point, Feature* feature) {
    ClientContext context;
    Status status = stub_->GetFeature(&context, point, feature);
    if (!status.ok()) {
      std::cout << "GetFeature rpc failed." << std::endl;
      return false;
    }
    if (!feature->has_location()) {
      std::cout << "Server returns incomplete feature." << std::endl;
      return false;
    }
    if (feature->name().empty()) {
      std::cout << "Found no feature at " << feature->location().latitude() << ", "
                << feature->location().longitude() << std::endl;
    } else {
      std::cout << "Found feature called " << feature->name() << " at "
                << feature->location().latitude() << ", " << feature->location().longitude()
                << std::endl;
    }
    return true;
  }

  std::unique_ptr<RouteGuide::Stub> stub_;
};

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  RouteGuideClient guide(grpc::CreateChannel(argv[1], grpc::InsecureChannelCredentials()));
  std::cout << "-------------- GetFeature --------------" << std::endl;
  guide.GetFeature();
  std::cout << "-------------- ListFeatures --------------" << std::endl;
  guide.ListFeatures();
  std::cout << "-------------- RecordRoute --------------" << std::endl;
  guide.RecordRoute();
  std::cout << "-------------- RouteChat --------------" << std::endl;
  guide.RouteChat();
  return 0;
}
