// tests/xds/control_plane.cc — a small xDS management server for tests and
// examples/xds: ADS, state of the world (gRFC A27), over grpc++.
//
//   control_plane --listen=127.0.0.1:0 --snapshot=FILE --log=FILE
//
// FILE is a DiscoveryResponse in protobuf's JSON form, read for its
// version_info and resources (each an Any with "@type"):
//   {"versionInfo": "1", "resources": [
//      {"@type": "type.googleapis.com/envoy.config.listener.v3.Listener", "name": ...}, ...]}
// The file is watched (mtime, every 20 ms): when a test rewrites it, every
// stream gets the resources of each type it subscribes to again, with the
// new version. Listener and Cluster requests with no names subscribe to
// all of them (wildcard); RouteConfiguration and ClusterLoadAssignment ones
// get only what they name. A resource the snapshot lacks is left out of the
// response (for Listener and Cluster, that says it was deleted).
//
// The log (one line each, flushed): "STREAM open node=<id>", "REQUEST
// <type> names=<a,b>", "ACK <type> version=<v> nonce=<n>", "NACK <type>
// version=<v> nonce=<n> error=<message>", "SENT <type> version=<v>
// nonce=<n> resources=<a,b>", "STREAM closed", "SNAPSHOT version=<v>" or
// "SNAPSHOT error=<why>". <type> is the last part of the type URL
// (Listener, RouteConfiguration, Cluster, ClusterLoadAssignment).
#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/config/route/v3/route.pb.h"
#include "envoy/extensions/clusters/aggregate/v3/cluster.pb.h"
#include "envoy/extensions/filters/http/router/v3/router.pb.h"
#include "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.pb.h"
#include "envoy/service/discovery/v3/ads.grpc.pb.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "tests/server/serve.h"

namespace {

using envoy::service::discovery::v3::DiscoveryRequest;
using envoy::service::discovery::v3::DiscoveryResponse;

// The types a snapshot's Anys may hold, linked in (and so in the generated
// pool, where the JSON parser looks "@type" up).
void LinkResourceTypes() {
  (void)envoy::config::listener::v3::Listener::descriptor();
  (void)envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager::
      descriptor();
  (void)envoy::extensions::filters::http::router::v3::Router::descriptor();
  (void)envoy::config::route::v3::RouteConfiguration::descriptor();
  (void)envoy::config::cluster::v3::Cluster::descriptor();
  (void)envoy::extensions::clusters::aggregate::v3::ClusterConfig::descriptor();
  (void)envoy::config::endpoint::v3::ClusterLoadAssignment::descriptor();
}

std::string ShortType(const std::string& url) { return url.substr(url.rfind('.') + 1); }
bool IsWildcardType(const std::string& url) {
  return url.ends_with(".Listener") || url.ends_with(".Cluster");
}

class Log {
 public:
  explicit Log(const std::string& path) : f_(std::fopen(path.c_str(), "a")) {}
  template <typename... A>
  void Line(const A&... parts) {
    std::lock_guard<std::mutex> l(mu_);
    std::string s = absl::StrCat(parts...);
    std::fprintf(f_ != nullptr ? f_ : stderr, "%s\n", s.c_str());
    std::fflush(f_ != nullptr ? f_ : stderr);
  }

 private:
  std::mutex mu_;
  std::FILE* f_;
};

// The snapshot: resources by type URL, then by name.
struct Snapshot {
  std::string version;
  std::map<std::string, std::map<std::string, google::protobuf::Any>> resources;
};

// The resource's name: its "name" field, or a ClusterLoadAssignment's
// "cluster_name".
std::string ResourceName(const google::protobuf::Any& any) {
  const std::string full = any.type_url().substr(any.type_url().rfind('/') + 1);
  const google::protobuf::Descriptor* d =
      google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(full);
  if (d == nullptr) return "";
  std::unique_ptr<google::protobuf::Message> m(
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(d)->New());
  if (!m->ParseFromString(any.value())) return "";
  const google::protobuf::FieldDescriptor* f = d->FindFieldByName("name");
  if (f == nullptr) f = d->FindFieldByName("cluster_name");
  return f == nullptr ? "" : m->GetReflection()->GetString(*m, f);
}

class Server final : public envoy::service::discovery::v3::AggregatedDiscoveryService::Service {
 public:
  Server(std::string snapshot_path, Log& log) : path_(std::move(snapshot_path)), log_(log) {
    Reload();
    watcher_ = std::thread([this] { Watch(); });
  }
  ~Server() override {
    {
      std::lock_guard<std::mutex> l(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    watcher_.join();
  }

  grpc::Status StreamAggregatedResources(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<DiscoveryResponse, DiscoveryRequest>* stream) override {
    // Per type: the names asked for (wildcard: none named on a wildcard
    // type), and what was last sent.
    struct Sub {
      std::set<std::string> names;
      bool wildcard = false;
      bool subscribed = false;
      uint64_t sent_generation = 0;
      std::set<std::string> sent_names;
      bool sent_wildcard = false;
    };
    std::map<std::string, Sub> subs;  // guarded by mu_
    bool done = false;                // guarded by mu_
    bool first = true;
    std::thread writer([&] {
      std::unique_lock<std::mutex> l(mu_);
      uint64_t nonce = 0;
      while (!done && !stopping_) {
        std::vector<DiscoveryResponse> out;
        for (auto& [type, sub] : subs) {
          if (!sub.subscribed) continue;
          if (sub.sent_generation == generation_ && sub.sent_names == sub.names &&
              sub.sent_wildcard == sub.wildcard) {
            continue;
          }
          sub.sent_generation = generation_;
          sub.sent_names = sub.names;
          sub.sent_wildcard = sub.wildcard;
          if (!sub.wildcard && sub.names.empty()) continue;  // nothing asked for
          DiscoveryResponse r;
          r.set_version_info(snapshot_.version);
          r.set_type_url(type);
          r.set_nonce(std::to_string(++nonce));
          std::vector<std::string> names;
          auto it = snapshot_.resources.find(type);
          if (it != snapshot_.resources.end()) {
            for (const auto& [name, any] : it->second) {
              if (sub.wildcard || sub.names.count(name) != 0) {
                *r.add_resources() = any;
                names.push_back(name);
              }
            }
          }
          log_.Line("SENT ", ShortType(type), " version=", r.version_info(), " nonce=", r.nonce(),
                    " resources=", absl::StrJoin(names, ","));
          out.push_back(std::move(r));
        }
        if (!out.empty()) {
          l.unlock();
          for (const DiscoveryResponse& r : out) stream->Write(r);
          l.lock();
          continue;
        }
        cv_.wait(l);
      }
    });
    DiscoveryRequest req;
    while (stream->Read(&req)) {
      if (first) {
        log_.Line("STREAM open node=", req.node().id());
        first = false;
      }
      const std::string type = ShortType(req.type_url());
      if (!req.response_nonce().empty()) {
        if (req.has_error_detail()) {
          log_.Line("NACK ", type, " version=", req.version_info(), " nonce=", req.response_nonce(),
                    " error=", req.error_detail().message());
        } else {
          log_.Line("ACK ", type, " version=", req.version_info(), " nonce=", req.response_nonce());
        }
      }
      std::set<std::string> names(req.resource_names().begin(), req.resource_names().end());
      std::lock_guard<std::mutex> l(mu_);
      Sub& sub = subs[req.type_url()];
      const bool wildcard =
          IsWildcardType(req.type_url()) && (names.empty() || names.count("*") != 0);
      if (names.count("*") != 0) names.erase("*");
      if (!sub.subscribed || names != sub.names || wildcard != sub.wildcard) {
        log_.Line("REQUEST ", type, " names=", wildcard ? "*" : absl::StrJoin(names, ","));
      }
      // A NACK or ACK with the same names asks for nothing new.
      sub.names = std::move(names);
      sub.wildcard = wildcard;
      sub.subscribed = true;
      cv_.notify_all();
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      done = true;
    }
    cv_.notify_all();
    writer.join();
    log_.Line("STREAM closed");
    (void)ctx;
    return grpc::Status::OK;
  }

 private:
  void Watch() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stopping_) {
      cv_.wait_for(l, std::chrono::milliseconds(20));
      if (stopping_) break;
      l.unlock();
      Reload();
      l.lock();
    }
  }

  // Reads the file again if it changed; a file that does not parse is
  // logged and the last snapshot kept.
  void Reload() {
    struct stat st;
    if (::stat(path_.c_str(), &st) != 0) return;
    const int64_t mtime = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (mtime == mtime_ && st.st_size == size_ && st.st_ino == ino_) return;
    mtime_ = mtime;
    size_ = st.st_size;
    ino_ = st.st_ino;
    std::ifstream f(path_);
    std::string json((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    DiscoveryResponse parsed;
    auto s = google::protobuf::util::JsonStringToMessage(json, &parsed);
    if (!s.ok()) {
      log_.Line("SNAPSHOT error=", s.ToString());
      return;
    }
    Snapshot next;
    next.version = parsed.version_info();
    for (const google::protobuf::Any& any : parsed.resources()) {
      next.resources[any.type_url()][ResourceName(any)] = any;
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      snapshot_ = std::move(next);
      ++generation_;
    }
    log_.Line("SNAPSHOT version=", parsed.version_info());
    cv_.notify_all();
  }

  const std::string path_;
  Log& log_;
  int64_t mtime_ = -1;  // watcher thread only
  int64_t size_ = -1;
  ino_t ino_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  Snapshot snapshot_;
  uint64_t generation_ = 0;
  bool stopping_ = false;
  std::thread watcher_;
};

std::string Flag(int argc, char** argv, const std::string& name, std::string fallback) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]).rfind(prefix, 0) == 0) return argv[i] + prefix.size();
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string listen = Flag(argc, argv, "listen", "127.0.0.1:0");
  const std::string snapshot = Flag(argc, argv, "snapshot", "");
  if (snapshot.empty()) {
    std::fprintf(stderr, "control_plane: --snapshot=FILE is required\n");
    return 2;
  }
  LinkResourceTypes();
  Log log(Flag(argc, argv, "log", "/dev/stderr"));
  std::unique_ptr<Server> server;
  return ringrpc::testing::ServeUntilSigterm(
      "control_plane", listen, [] { return grpc::InsecureServerCredentials(); },
      [&](grpc::ServerBuilder& b) {
        server = std::make_unique<Server>(snapshot, log);
        b.RegisterService(server.get());
      });
}
