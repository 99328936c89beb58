// route_guide: all four call types against a grpc++ RouteGuide server
// embedded in this process (or --target=host:port), through the generated
// ringrpc stub in its blocking, callback (reactors), coroutine and
// CompletionQueue forms.
// Checks every answer against the feature map both sides share and exits 0
// when all are right.
//
//   bazel run //examples/route_guide
//   bazel run //examples/route_guide -- --target=host:port
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "examples/common/embedded_server.h"
#include "examples/route_guide/route_guide.grpc.pb.h"
#include "examples/route_guide/route_guide.ringrpc.pb.h"

namespace {

using routeguide::Feature;
using routeguide::Point;
using routeguide::Rectangle;
using routeguide::RouteNote;
using routeguide::RouteSummary;

// ---- the map both sides know: a 10x10 grid of places -------------------------

constexpr int kGrid = 10;
constexpr int kBaseLat = 400000000, kBaseLon = -750000000, kStep = 100000;

Point At(int i, int j) {
  Point p;
  p.set_latitude(kBaseLat + i * kStep);
  p.set_longitude(kBaseLon + j * kStep);
  return p;
}

// Every seventh diagonal is empty.
std::string NameAt(int i, int j) {
  return (i + j) % 7 == 0 ? "" : absl::StrCat("Feature ", i, ",", j);
}

bool ToGrid(const Point& p, int* i, int* j) {
  int di = p.latitude() - kBaseLat, dj = p.longitude() - kBaseLon;
  if (di % kStep != 0 || dj % kStep != 0) return false;
  *i = di / kStep;
  *j = dj / kStep;
  return *i >= 0 && *i < kGrid && *j >= 0 && *j < kGrid;
}

std::string Where(const Point& p) {
  int i, j;
  return ToGrid(p, &i, &j) ? absl::StrCat("(", i, ",", j, ")") : "(off the map)";
}

// ---- the server: grpc++'s own API -------------------------------------------

class RouteGuideService final : public routeguide::RouteGuide::Service {
  grpc::Status GetFeature(grpc::ServerContext*, const Point* p, Feature* f) override {
    int i, j;
    if (ToGrid(*p, &i, &j)) f->set_name(NameAt(i, j));
    *f->mutable_location() = *p;
    return grpc::Status::OK;
  }

  grpc::Status ListFeatures(grpc::ServerContext*, const Rectangle* r,
                            grpc::ServerWriter<Feature>* writer) override {
    for (int i = 0; i < kGrid; ++i) {
      for (int j = 0; j < kGrid; ++j) {
        Point p = At(i, j);
        if (NameAt(i, j).empty() || !Inside(*r, p)) continue;
        Feature f;
        f.set_name(NameAt(i, j));
        *f.mutable_location() = p;
        if (!writer->Write(f)) return grpc::Status::OK;
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status RecordRoute(grpc::ServerContext*, grpc::ServerReader<Point>* reader,
                           RouteSummary* summary) override {
    Point p, last;
    bool first = true;
    while (reader->Read(&p)) {
      summary->set_point_count(summary->point_count() + 1);
      int i, j, li, lj;
      if (ToGrid(p, &i, &j) && !NameAt(i, j).empty()) {
        summary->set_feature_count(summary->feature_count() + 1);
      }
      if (!first && ToGrid(p, &i, &j) && ToGrid(last, &li, &lj)) {
        summary->set_distance(summary->distance() + std::abs(i - li) + std::abs(j - lj));
      }
      last = p;
      first = false;
    }
    return grpc::Status::OK;
  }

  grpc::Status RouteChat(grpc::ServerContext*,
                         grpc::ServerReaderWriter<RouteNote, RouteNote>* stream) override {
    RouteNote note;
    while (stream->Read(&note)) {
      std::vector<RouteNote> earlier;
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto& here = notes_[{note.location().latitude(), note.location().longitude()}];
        earlier = here;
        here.push_back(note);
      }
      for (const RouteNote& n : earlier) stream->Write(n);
    }
    return grpc::Status::OK;
  }

  static bool Inside(const Rectangle& r, const Point& p) {
    auto within = [](int v, int a, int b) { return v >= std::min(a, b) && v <= std::max(a, b); };
    return within(p.latitude(), r.lo().latitude(), r.hi().latitude()) &&
           within(p.longitude(), r.lo().longitude(), r.hi().longitude());
  }

  std::mutex mu_;
  std::map<std::pair<int, int>, std::vector<RouteNote>> notes_;
};

// ---- the client ---------------------------------------------------------------

using RouteGuide = routeguide::ring::RouteGuide;
using ::ringrpc::ClientContext;
using ::ringrpc::Status;

bool ok = true;

void Check(bool good, const std::string& what) {
  std::printf("%s %s\n", good ? "ok  " : "FAIL", what.c_str());
  ok &= good;
}

// Server streaming, callback form: counts the features as they come.
class FeatureLister final : public ::ringrpc::ClientReadReactor<Feature> {
 public:
  FeatureLister(RouteGuide::Stub* stub, const Rectangle& rect) {
    stub->async()->ListFeatures(&ctx_, &rect, this);
    StartRead(&feature_);
    StartCall();
  }
  void OnReadDone(bool good) override {
    if (!good) return;
    ++count_;
    StartRead(&feature_);
  }
  void OnDone(const Status& s) override { done_.set_value(s); }
  std::pair<Status, int> Wait() { return {done_.get_future().get(), count_}; }

 private:
  ClientContext ctx_;
  Feature feature_;
  int count_ = 0;
  std::promise<Status> done_;
};

// Client streaming, callback form: writes a route, one point per reaction.
class RouteRecorder final : public ::ringrpc::ClientWriteReactor<Point> {
 public:
  RouteRecorder(RouteGuide::Stub* stub, std::vector<Point> route) : route_(std::move(route)) {
    stub->async()->RecordRoute(&ctx_, &summary_, this);
    Next();
    StartCall();
  }
  void OnWriteDone(bool good) override {
    if (good) Next();
  }
  void OnDone(const Status& s) override { done_.set_value(s); }
  std::pair<Status, RouteSummary> Wait() { return {done_.get_future().get(), summary_}; }

 private:
  void Next() {
    if (next_ == route_.size()) {
      StartWritesDone();
      return;
    }
    StartWrite(&route_[next_++]);
  }
  ClientContext ctx_;
  std::vector<Point> route_;
  size_t next_ = 0;
  RouteSummary summary_;
  std::promise<Status> done_;
};

// Bidi, callback form: sends its notes one after another while reading
// whatever comes back.
class Chatter final : public ::ringrpc::ClientBidiReactor<RouteNote, RouteNote> {
 public:
  Chatter(RouteGuide::Stub* stub, std::vector<RouteNote> notes) : notes_(std::move(notes)) {
    stub->async()->RouteChat(&ctx_, this);
    StartRead(&in_);
    Next();
    StartCall();
  }
  void OnWriteDone(bool good) override {
    if (good) Next();
  }
  void OnReadDone(bool good) override {
    if (!good) return;
    received_.push_back(in_.message() + "@" + Where(in_.location()));
    StartRead(&in_);
  }
  void OnDone(const Status& s) override { done_.set_value(s); }
  std::pair<Status, std::vector<std::string>> Wait() {
    return {done_.get_future().get(), received_};
  }

 private:
  void Next() {
    if (next_ == notes_.size()) {
      StartWritesDone();
      return;
    }
    StartWrite(&notes_[next_++]);
  }
  ClientContext ctx_;
  std::vector<RouteNote> notes_;
  size_t next_ = 0;
  RouteNote in_;
  std::vector<std::string> received_;
  std::promise<Status> done_;
};

RouteNote Note(int i, int j, const std::string& message) {
  RouteNote n;
  *n.mutable_location() = At(i, j);
  n.set_message(message);
  return n;
}

// Coroutine form, on a CQ thread: a unary call and a bidi chat.
ringrpc::Task<void> CoroutineTour(RouteGuide::Stub* stub, std::promise<std::string>* out) {
  std::string text;
  {
    ClientContext ctx;
    Feature f;
    Status s = co_await stub->co_GetFeature(&ctx, At(5, 6), &f);
    text = s.ok() ? f.name() : s.ToString();
  }
  {
    ClientContext ctx;
    Status start;
    auto chat = co_await stub->co_RouteChat(&ctx, &start);
    if (chat == nullptr) {
      text += " | chat error: " + start.ToString();
    } else {
      for (const char* m : {"co one", "co two"}) co_await chat->Write(Note(7, 7, m));
      chat->WritesDone();
      RouteNote n;
      while (co_await chat->Read(&n)) text += " | " + n.message();
      Status fin = co_await chat->Finish();
      if (!fin.ok()) text += " | chat error: " + fin.ToString();
    }
  }
  out->set_value(text);
}

// ---- the CompletionQueue form, in the shape grpc++ async clients have ---------

// Many unary calls in flight, one thread draining the queue (grpc++'s
// greeter_async_client2 shape): each call's state is its tag.
class AsyncFeatureClient {
 public:
  explicit AsyncFeatureClient(RouteGuide::Stub* stub) : stub_(stub) {}

  void GetFeature(int i, int j) {
    auto* call = new AsyncClientCall;
    call->expect = NameAt(i, j);
    call->response_reader = stub_->PrepareAsyncGetFeature(&call->context, At(i, j), &cq_);
    call->response_reader->StartCall();
    call->response_reader->Finish(&call->reply, &call->status, static_cast<void*>(call));
  }

  // The draining thread's loop: until Shutdown and every tag is out.
  void AsyncCompleteRpc() {
    void* got_tag;
    bool ok = false;
    while (cq_.Next(&got_tag, &ok)) {
      auto* call = static_cast<AsyncClientCall*>(got_tag);
      if (ok && call->status.ok() && call->reply.name() == call->expect) {
        ++right_;
      } else {
        ++wrong_;
      }
      delete call;
    }
  }

  void Shutdown() { cq_.Shutdown(); }
  int right() const { return right_; }
  int wrong() const { return wrong_; }

 private:
  struct AsyncClientCall {
    Feature reply;
    ClientContext context;
    Status status;
    std::string expect;
    std::unique_ptr<::ringrpc::ClientAsyncResponseReader<Feature>> response_reader;
  };
  RouteGuide::Stub* stub_;
  ::ringrpc::CompletionQueue cq_;
  int right_ = 0, wrong_ = 0;  // the draining thread's
};

// Bidi driven by tags, step by step, as grpc++'s async examples do: start,
// write each note and read what comes back, half-close, finish.
std::string AsyncChat(RouteGuide::Stub* stub) {
  enum Step : intptr_t { kStarted = 1, kWrote, kRead, kHalfClosed, kFinished };
  ::ringrpc::CompletionQueue cq;
  ClientContext ctx;
  auto next = [&cq](Step want) {
    void* tag;
    bool ok = false;
    return cq.Next(&tag, &ok) && reinterpret_cast<intptr_t>(tag) == want && ok;
  };
  std::unique_ptr<::ringrpc::ClientAsyncReaderWriter<RouteNote, RouteNote>> stream =
      stub->AsyncRouteChat(&ctx, &cq, reinterpret_cast<void*>(kStarted));
  if (!next(kStarted)) return "start failed";
  for (const char* m : {"cq one", "cq two"}) {
    stream->Write(Note(8, 8, m), reinterpret_cast<void*>(kWrote));
    if (!next(kWrote)) return "write failed";
  }
  stream->WritesDone(reinterpret_cast<void*>(kHalfClosed));
  if (!next(kHalfClosed)) return "half-close failed";
  std::string text;
  RouteNote in;
  for (;;) {
    stream->Read(&in, reinterpret_cast<void*>(kRead));
    void* tag;
    bool ok = false;
    if (!cq.Next(&tag, &ok) || !ok) break;  // ok false: the stream has ended
    text += (text.empty() ? "" : " | ") + in.message();
  }
  Status status;
  stream->Finish(&status, reinterpret_cast<void*>(kFinished));
  if (!next(kFinished) || !status.ok()) return "finish: " + status.ToString();
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  RouteGuideService service;
  std::string target;
  std::unique_ptr<grpc::Server> server = examples::ServerFromArgs(argc, argv, &service, &target);
  if (target.empty()) return 1;
  auto channel = ::ringrpc::CreateChannel(target, ::ringrpc::InsecureChannelCredentials());
  auto stub = RouteGuide::NewStub(channel);

  // 1. Unary, blocking.
  for (auto [i, j] : {std::pair{2, 3}, std::pair{3, 4}}) {
    ClientContext ctx;
    Feature f;
    Status s = stub->GetFeature(&ctx, At(i, j), &f);
    std::string expect = NameAt(i, j);
    Check(s.ok() && f.name() == expect,
          absl::StrCat("GetFeature", Where(At(i, j)), " (blocking): \"", f.name(), "\"",
                       expect.empty() ? " (no feature there)" : ""));
  }

  // 2. Server streaming: blocking reader, then a read reactor.
  Rectangle rect;
  *rect.mutable_lo() = At(0, 0);
  *rect.mutable_hi() = At(4, 4);
  int expected = 0;
  for (int i = 0; i <= 4; ++i) {
    for (int j = 0; j <= 4; ++j) expected += !NameAt(i, j).empty();
  }
  {
    ClientContext ctx;
    auto reader = stub->ListFeatures(&ctx, rect);
    Feature f;
    int n = 0;
    while (reader->Read(&f)) ++n;
    Status s = reader->Finish();
    Check(s.ok() && n == expected,
          absl::StrCat("ListFeatures(0,0)-(4,4) (blocking): ", n, " features"));
  }
  {
    FeatureLister lister(stub.get(), rect);
    auto [s, n] = lister.Wait();
    Check(s.ok() && n == expected,
          absl::StrCat("ListFeatures(0,0)-(4,4) (reactor): ", n, " features"));
  }

  // 3. Client streaming: a write reactor records a route.
  {
    std::vector<Point> route = {At(0, 0), At(0, 1), At(1, 1), At(2, 1), At(2, 2)};
    int features = 0;
    for (const Point& p : route) {
      int i = 0, j = 0;
      ToGrid(p, &i, &j);
      features += !NameAt(i, j).empty();
    }
    RouteRecorder recorder(stub.get(), route);
    auto [s, summary] = recorder.Wait();
    Check(s.ok() && summary.point_count() == 5 && summary.feature_count() == features &&
              summary.distance() == 4,
          absl::StrCat("RecordRoute (reactor): ", summary.point_count(), " points, ",
                       summary.feature_count(), " features, distance ", summary.distance()));
  }

  // 4. Bidi: a reactor chats; each note brings back the earlier ones at its place.
  {
    Chatter chatter(stub.get(), {Note(1, 1, "first"), Note(1, 2, "second"), Note(1, 1, "third"),
                                 Note(1, 2, "fourth")});
    auto [s, got] = chatter.Wait();
    std::string joined;
    for (const std::string& g : got) joined += (joined.empty() ? "" : ", ") + g;
    Check(s.ok() && got == std::vector<std::string>{"first@(1,1)", "second@(1,2)"},
          "RouteChat (reactor): got back " + joined);
  }

  // 5. Coroutines on a CQ thread.
  {
    std::promise<std::string> text;
    channel->Spawn(CoroutineTour(stub.get(), &text));
    std::string t = text.get_future().get();
    Check(t == NameAt(5, 6) + " | co one", "coroutines: " + t);
  }

  // 6. The CompletionQueue form: 100 unary calls in flight drained by one
  // thread, then a bidi chat step by step on tags.
  {
    AsyncFeatureClient client(stub.get());
    std::thread drainer(&AsyncFeatureClient::AsyncCompleteRpc, &client);
    for (int i = 0; i < kGrid; ++i) {
      for (int j = 0; j < kGrid; ++j) client.GetFeature(i, j);
    }
    client.Shutdown();  // Next returns false once every call's tag is out
    drainer.join();
    Check(client.right() == kGrid * kGrid && client.wrong() == 0,
          absl::StrCat("GetFeature x", kGrid * kGrid, " (completion queue): ", client.right(),
                       " right, ", client.wrong(), " wrong"));
    std::string chat = AsyncChat(stub.get());
    Check(chat == "cq one", "RouteChat (completion queue): " + chat);
  }

  std::printf("pool: %s\n", channel->Metrics().ToString().c_str());
  std::printf("%s\n", ok ? "all answers correct" : "SOME ANSWERS WRONG");
  stub.reset();
  channel.reset();
  if (server) server->Shutdown();
  return ok ? 0 : 1;
}
