// The client code a user tests is written against RouteGuide::StubInterface
// (as with grpc++); in the test, MockRouteGuideStub from the generated
// route_guide_mock.ringrpc.pb.h stands in for the server, and the stream
// doubles of ringrpc/testing/mock_stream.h script each stream.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "examples/route_guide/route_guide_mock.ringrpc.pb.h"

namespace {

using routeguide::Feature;
using routeguide::Point;
using routeguide::Rectangle;
using routeguide::RouteNote;
using routeguide::RouteSummary;
using routeguide::ring::MockRouteGuideStub;
using routeguide::ring::RouteGuide;
using ::testing::_;
using ::testing::DoAll;
using ::testing::Invoke;
using ::testing::Return;
using ::testing::SetArgPointee;

Feature Named(const std::string& name) {
  Feature f;
  f.set_name(name);
  return f;
}

// --- The code under test: what a user's client does with a stub. ---

// The names of the features in `area`, or the error's message.
std::vector<std::string> FeatureNames(RouteGuide::StubInterface* stub, const Rectangle& area) {
  ringrpc::ClientContext ctx;
  std::unique_ptr<ringrpc::ClientReaderInterface<Feature>> reader = stub->ListFeatures(&ctx, area);
  std::vector<std::string> names;
  Feature f;
  while (reader->Read(&f)) names.push_back(f.name());
  ringrpc::Status s = reader->Finish();
  if (!s.ok()) names.push_back("error: " + s.error_message());
  return names;
}

int RecordPoints(RouteGuide::StubInterface* stub, int n) {
  ringrpc::ClientContext ctx;
  RouteSummary summary;
  auto writer = stub->RecordRoute(&ctx, &summary);
  for (int i = 0; i < n; ++i) {
    Point p;
    p.set_latitude(i);
    if (!writer->Write(p)) break;
  }
  writer->WritesDone();
  return writer->Finish().ok() ? summary.point_count() : -1;
}

std::string Chat(RouteGuide::StubInterface* stub, const std::string& say) {
  ringrpc::ClientContext ctx;
  auto stream = stub->RouteChat(&ctx);
  RouteNote note;
  note.set_message(say);
  stream->Write(note);
  stream->WritesDone();
  std::string heard;
  while (stream->Read(&note)) heard += note.message() + ";";
  return stream->Finish().ok() ? heard : "failed";
}

// --- The tests. ---

TEST(RouteGuideMock, AScriptedServerStreamYieldsItsThreeMessagesThenItsStatus) {
  MockRouteGuideStub stub;
  auto* reader = new ringrpc::testing::MockClientReader<Feature>();  // the stub's caller owns it
  EXPECT_CALL(*reader, Read(_))
      .WillOnce(DoAll(SetArgPointee<0>(Named("Lake")), Return(true)))
      .WillOnce(DoAll(SetArgPointee<0>(Named("Hill")), Return(true)))
      .WillOnce(DoAll(SetArgPointee<0>(Named("Farm")), Return(true)))
      .WillOnce(Return(false));
  EXPECT_CALL(*reader, Finish()).WillOnce(Return(ringrpc::Status::OK));
  Rectangle area;
  area.mutable_hi()->set_latitude(7);
  EXPECT_CALL(stub, ListFeaturesRaw(_, _))
      .WillOnce(Invoke([&](ringrpc::ClientContext*, const Rectangle& r) {
        EXPECT_EQ(r.hi().latitude(), 7);  // the request the code sent
        return reader;
      }));
  EXPECT_EQ(FeatureNames(&stub, area), (std::vector<std::string>{"Lake", "Hill", "Farm"}));
}

TEST(RouteGuideMock, AStreamThatFailsReportsTheScriptedStatus) {
  MockRouteGuideStub stub;
  auto* reader = new ringrpc::testing::MockClientReader<Feature>();
  EXPECT_CALL(*reader, Read(_))
      .WillOnce(DoAll(SetArgPointee<0>(Named("Lake")), Return(true)))
      .WillOnce(Return(false));
  EXPECT_CALL(*reader, Finish())
      .WillOnce(Return(ringrpc::Status(ringrpc::StatusCode::UNAVAILABLE, "server went away")));
  EXPECT_CALL(stub, ListFeaturesRaw(_, _)).WillOnce(Return(reader));
  EXPECT_EQ(FeatureNames(&stub, Rectangle()),
            (std::vector<std::string>{"Lake", "error: server went away"}));
}

TEST(RouteGuideMock, ClientStreamWritesReachTheMockWithTheirOptions) {
  MockRouteGuideStub stub;
  auto* writer = new ringrpc::testing::MockClientWriter<Point>();
  std::vector<int> written;
  EXPECT_CALL(*writer, Write(_, _)).Times(3).WillRepeatedly(Invoke([&](const Point& p, auto) {
    written.push_back(p.latitude());
    return true;
  }));
  EXPECT_CALL(*writer, WritesDone()).WillOnce(Return(true));
  EXPECT_CALL(*writer, Finish()).WillOnce(Return(ringrpc::Status::OK));
  EXPECT_CALL(stub, RecordRouteRaw(_, _))
      .WillOnce(Invoke([&](ringrpc::ClientContext*, RouteSummary* summary) {
        summary->set_point_count(3);  // what the "server" answers at Finish
        return writer;
      }));
  EXPECT_EQ(RecordPoints(&stub, 3), 3);
  EXPECT_EQ(written, (std::vector<int>{0, 1, 2}));
}

TEST(RouteGuideMock, BidiStreamIsScriptedBothWays) {
  MockRouteGuideStub stub;
  auto* stream = new ringrpc::testing::MockClientReaderWriter<RouteNote, RouteNote>();
  RouteNote a, b;
  a.set_message("hi");
  b.set_message("there");
  EXPECT_CALL(*stream, Write(_, _)).WillOnce(Return(true));
  EXPECT_CALL(*stream, WritesDone()).WillOnce(Return(true));
  EXPECT_CALL(*stream, Read(_))
      .WillOnce(DoAll(SetArgPointee<0>(a), Return(true)))
      .WillOnce(DoAll(SetArgPointee<0>(b), Return(true)))
      .WillOnce(Return(false));
  EXPECT_CALL(*stream, Finish()).WillOnce(Return(ringrpc::Status::OK));
  EXPECT_CALL(stub, RouteChatRaw(_)).WillOnce(Return(stream));
  EXPECT_EQ(Chat(&stub, "hello"), "hi;there;");
}

TEST(RouteGuideMock, UnaryBlockingAndCallbackFormsAreScripted) {
  MockRouteGuideStub stub;
  EXPECT_CALL(stub, GetFeature(_, _, _))
      .WillOnce(DoAll(SetArgPointee<2>(Named("Peak")), Return(ringrpc::Status::OK)));
  ringrpc::ClientContext ctx;
  Feature f;
  ASSERT_TRUE(stub.GetFeature(&ctx, Point(), &f).ok());
  EXPECT_EQ(f.name(), "Peak");

  // The callback form: async() gives mock_async() unless told otherwise.
  EXPECT_CALL(stub.mock_async(),
              GetFeature(_, _, _, ::testing::An<std::function<void(ringrpc::Status)>>()))
      .WillOnce(Invoke([](ringrpc::ClientContext*, const Point*, Feature* out,
                          std::function<void(ringrpc::Status)> done) {
        out->set_name("Valley");
        done(ringrpc::Status(ringrpc::StatusCode::NOT_FOUND, "no such point"));
      }));
  RouteGuide::StubInterface* as_interface = &stub;
  ringrpc::Status got;
  Feature g;
  as_interface->async()->GetFeature(&ctx, nullptr, &g, [&](ringrpc::Status s) { got = s; });
  EXPECT_EQ(got.error_code(), ringrpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(g.name(), "Valley");
}

TEST(RouteGuideMock, CompletionQueueFormReadersAreScripted) {
  MockRouteGuideStub stub;
  auto* reader = new ringrpc::testing::MockClientAsyncResponseReader<Feature>();
  EXPECT_CALL(*reader, StartCall());
  EXPECT_CALL(*reader, Finish(_, _, reinterpret_cast<void*>(7)))
      .WillOnce(Invoke([](Feature* out, ringrpc::Status* s, void*) {
        out->set_name("Ridge");
        *s = ringrpc::Status::OK;
      }));
  EXPECT_CALL(stub, PrepareAsyncGetFeatureRaw(_, _, nullptr)).WillOnce(Return(reader));
  ringrpc::ClientContext ctx;
  std::unique_ptr<ringrpc::ClientAsyncResponseReaderInterface<Feature>> call =
      stub.PrepareAsyncGetFeature(&ctx, Point(), nullptr);
  call->StartCall();
  Feature f;
  ringrpc::Status s;
  call->Finish(&f, &s, reinterpret_cast<void*>(7));
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(f.name(), "Ridge");
}

}  // namespace
