// The four call kinds in grpc++'s CompletionQueue form, step by step on
// tags: each operation is started with a tag and the thread takes it back
// with Next before the next step, as grpc++'s async examples do.
#include <grpcpp/grpcpp.h>

#include <iostream>
#include <memory>
#include <string>

#include "examples/route_guide/route_guide.grpc.pb.h"

using grpc::Channel;
using grpc::ClientAsyncReader;
using grpc::ClientAsyncReaderWriter;
using grpc::ClientAsyncResponseReader;
using grpc::ClientAsyncWriter;
using grpc::ClientContext;
using grpc::CompletionQueue;
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

// Takes the next event and says whether it is `want`, and its ok.
bool Next(CompletionQueue* cq, void* want) {
  void* tag = nullptr;
  bool ok = false;
  if (!cq->Next(&tag, &ok)) return false;
  if (tag != want) {
    std::cout << "unexpected tag" << std::endl;
    return false;
  }
  return ok;
}

// After Shutdown, a queue is drained before it goes.
void Drain(CompletionQueue* cq) {
  cq->Shutdown();
  void* tag;
  bool ok;
  while (cq->Next(&tag, &ok)) {
  }
}

class RouteGuideClient {
 public:
  explicit RouteGuideClient(std::shared_ptr<Channel> channel)
      : stub_(RouteGuide::NewStub(channel)) {}

  void GetFeature() {
    CompletionQueue cq;
    ClientContext context;
    Feature feature;
    Status status;
    std::unique_ptr<ClientAsyncResponseReader<Feature>> rpc =
        stub_->PrepareAsyncGetFeature(&context, MakePoint(1, 2), &cq);
    rpc->StartCall();
    rpc->Finish(&feature, &status, (void*)1);
    if (Next(&cq, (void*)1) && status.ok()) {
      std::cout << "Found feature called " << feature.name() << std::endl;
    } else {
      std::cout << "GetFeature rpc failed." << std::endl;
    }
    Drain(&cq);
  }

  void ListFeatures() {
    CompletionQueue cq;
    ClientContext context;
    Rectangle rect;
    rect.mutable_lo()->set_latitude(1);
    rect.mutable_lo()->set_longitude(1);
    rect.mutable_hi()->set_latitude(2);
    rect.mutable_hi()->set_longitude(3);
    std::unique_ptr<ClientAsyncReader<Feature>> reader =
        stub_->AsyncListFeatures(&context, rect, &cq, (void*)1);
    if (!Next(&cq, (void*)1)) std::cout << "ListFeatures did not start." << std::endl;
    Feature feature;
    for (;;) {
      reader->Read(&feature, (void*)2);
      if (!Next(&cq, (void*)2)) break;  // ok false: the stream has ended
      std::cout << "Found feature called " << feature.name() << std::endl;
    }
    Status status;
    reader->Finish(&status, (void*)3);
    Next(&cq, (void*)3);
    std::cout << (status.ok() ? "ListFeatures rpc succeeded." : "ListFeatures rpc failed.")
              << std::endl;
    Drain(&cq);
  }

  void RecordRoute() {
    CompletionQueue cq;
    ClientContext context;
    RouteSummary stats;
    std::unique_ptr<ClientAsyncWriter<Point>> writer =
        stub_->AsyncRecordRoute(&context, &stats, &cq, (void*)1);
    Next(&cq, (void*)1);
    for (int i = 0; i < 10; i++) {
      writer->Write(MakePoint(i, i), (void*)2);
      if (!Next(&cq, (void*)2)) break;
    }
    writer->WritesDone((void*)3);
    Next(&cq, (void*)3);
    Status status;
    writer->Finish(&status, (void*)4);
    Next(&cq, (void*)4);
    if (status.ok()) {
      std::cout << "Finished trip with " << stats.point_count() << " points\n"
                << "Passed " << stats.feature_count() << " features\n";
    } else {
      std::cout << "RecordRoute rpc failed." << std::endl;
    }
    Drain(&cq);
  }

  void RouteChat() {
    CompletionQueue cq;
    ClientContext context;
    std::unique_ptr<ClientAsyncReaderWriter<RouteNote, RouteNote>> stream =
        stub_->AsyncRouteChat(&context, &cq, (void*)1);
    Next(&cq, (void*)1);
    RouteNote reply;
    for (const char* m : {"First message", "Second message", "Third message"}) {
      RouteNote note;
      note.set_message(m);
      stream->Write(note, (void*)2);
      Next(&cq, (void*)2);
      stream->Read(&reply, (void*)3);
      if (Next(&cq, (void*)3)) std::cout << "Got message " << reply.message() << std::endl;
    }
    stream->WritesDone((void*)4);
    Next(&cq, (void*)4);
    stream->Read(&reply, (void*)5);
    std::cout << "more after WritesDone: " << Next(&cq, (void*)5) << std::endl;
    Status status;
    stream->Finish(&status, (void*)6);
    Next(&cq, (void*)6);
    if (!status.ok()) std::cout << "RouteChat rpc failed." << std::endl;
    Drain(&cq);
  }

 private:
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
