// ringrpc/client/xds/xds_client.cc — the ADS stream, the resource cache and the
// watchers (see xds_client.h). Everything in Core but its constant fields
// is touched on one CQ thread of the management server's channel (CQ
// thread 0): Watch, Unwatch and the destructor hop there, so nothing here
// takes a lock but the process-wide registry.
#include "ringrpc/client/xds/xds_client.h"

#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "envoy/service/discovery/v3/discovery.pb.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "ringrpc/base/mutex.h"
#include "ringrpc/base/random.h"
#include "ringrpc/base/runtime.h"
#include "ringrpc/client/channel.h"
#include "ringrpc/client/channel/backoff.h"
#include "ringrpc/client/channel_arguments.h"
#include "ringrpc/client/client_context.h"
#include "ringrpc/client/runtime/event_loop.h"
#include "ringrpc/pool/retire.h"

namespace ringrpc::xds {
namespace {

constexpr char kAdsMethod[] =
    "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources";
// How often a sleeping task looks whether the client stopped.
constexpr Duration kStopPoll = std::chrono::milliseconds(100);

using envoy::service::discovery::v3::DiscoveryRequest;
using envoy::service::discovery::v3::DiscoveryResponse;

Task<void> RunFn(std::function<void()> fn) {
  fn();
  co_return;
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

absl::StatusOr<std::shared_ptr<ChannelCredentials>> Credentials(const XdsServer& s) {
  if (s.creds == XdsServer::Creds::kInsecure) return InsecureChannelCredentials();
  SslCredentialsOptions o;
  if (!s.ca_certificate_file.empty()) {
    o.pem_root_certs = ReadFile(s.ca_certificate_file);
    if (o.pem_root_certs.empty()) {
      return absl::NotFoundError(absl::StrCat("xDS bootstrap: cannot read ca_certificate_file \"",
                                              s.ca_certificate_file, "\""));
    }
  }
  if (!s.certificate_file.empty()) o.pem_cert_chain = ReadFile(s.certificate_file);
  if (!s.private_key_file.empty()) o.pem_private_key = ReadFile(s.private_key_file);
  return SslCredentials(o);
}

}  // namespace

struct XdsClient::Core : std::enable_shared_from_this<Core> {
  struct Resource {
    std::vector<std::shared_ptr<XdsWatcher>> watchers;
    std::shared_ptr<const XdsResource> value;
    std::string raw;  // value's serialized form: an unchanged resource is not re-announced
    bool does_not_exist = false;  // said so to the watchers
    uint64_t timer = 0;           // the does-not-exist timer running, by generation (0: none)
  };
  struct Type {
    std::map<std::string, Resource> resources;
    std::string version;  // the last accepted
    std::string nonce;    // the last response's, on this stream
  };

  XdsBootstrap bootstrap;
  XdsClientOptions options;
  std::shared_ptr<Channel> channel;

  // ADS thread only.
  std::map<ResourceType, Type> types;
  ClientCall* call = nullptr;  // the stream, while open
  bool node_sent = false;      // on this stream
  bool stopped = false;
  uint64_t timer_serial = 0;

  // Runs `fn` on the ADS thread.
  void Post(std::function<void()> fn) { channel->SpawnOn(0, RunFn(std::move(fn))); }

  bool IgnoreDeletion() const {
    for (const std::string& f : bootstrap.servers[0].server_features) {
      if (f == "ignore_resource_deletion") return true;
    }
    return false;
  }

  // The request for `type`: every name watched, the last accepted version
  // and the last nonce; with `nack`, the error that rejected that response.
  void SendRequest(ResourceType type, const absl::Status* nack = nullptr) {
    if (call == nullptr) return;
    Type& t = types[type];
    DiscoveryRequest req;
    req.set_type_url(std::string(TypeUrl(type)));
    req.set_version_info(t.version);
    req.set_response_nonce(t.nonce);
    for (const auto& [name, r] : t.resources) req.add_resource_names(name);
    if (!node_sent) {
      const XdsNode& n = bootstrap.node;
      auto* node = req.mutable_node();
      node->set_id(n.id);
      node->set_cluster(n.cluster);
      node->mutable_locality()->set_region(n.region);
      node->mutable_locality()->set_zone(n.zone);
      node->mutable_locality()->set_sub_zone(n.sub_zone);
      node->set_user_agent_name("ringrpc");
      node->add_client_features("envoy.lb.does_not_support_overprovisioning");
      // Only when there is some: an empty one is no field at all (and the
      // well-known Struct's code lives in libprotobuf, which TSAN builds
      // do not instrument: its allocations look like use after free).
      if (n.metadata_json != "{}") {
        (void)google::protobuf::util::JsonStringToMessage(n.metadata_json,
                                                          node->mutable_metadata());
      }
      node_sent = true;
    }
    if (nack != nullptr) {
      req.mutable_error_detail()->set_code(static_cast<int>(absl::StatusCode::kInvalidArgument));
      req.mutable_error_detail()->set_message(std::string(nack->message()));
    }
    (void)call->WriteNow(req.SerializeAsString());
    StartTimers(type);
  }

  // A27: a name asked for on this stream that has not come within the
  // timeout does not exist.
  void StartTimers(ResourceType type) {
    for (auto& [name, r] : types[type].resources) {
      if (r.value != nullptr || r.does_not_exist || r.timer != 0) continue;
      r.timer = ++timer_serial;
      EventLoop()->Spawn(DoesNotExistTimer(shared_from_this(), type, name, r.timer));
    }
  }

  static Task<void> DoesNotExistTimer(std::shared_ptr<Core> self, ResourceType type,
                                      std::string name, uint64_t serial) {
    runtime::EventLoop& loop = *self->EventLoop();
    const TimePoint until = loop.Now() + self->options.resource_does_not_exist_timeout;
    while (!self->stopped && loop.Now() < until) {
      co_await SleepUntil(loop, std::min(until, loop.Now() + kStopPoll));
    }
    if (self->stopped) co_return;
    auto& resources = self->types[type].resources;
    auto it = resources.find(name);
    if (it == resources.end() || it->second.timer != serial) co_return;
    it->second.timer = 0;
    if (it->second.value != nullptr) co_return;
    it->second.does_not_exist = true;
    for (const auto& w : std::vector(it->second.watchers)) w->OnDoesNotExist();
  }

  runtime::EventLoop* EventLoop() { return runtime::EventLoop::Current(); }

  void Watch(ResourceType type, const std::string& name, std::shared_ptr<XdsWatcher> w) {
    if (stopped) return;
    auto [it, added] = types[type].resources.try_emplace(name);
    Resource& r = it->second;
    r.watchers.push_back(w);
    if (r.value != nullptr) {
      w->OnUpdate(r.value);
    } else if (r.does_not_exist) {
      w->OnDoesNotExist();
    }
    if (added) SendRequest(type);
  }

  void Unwatch(ResourceType type, const std::string& name, const std::shared_ptr<XdsWatcher>& w) {
    auto& resources = types[type].resources;
    auto it = resources.find(name);
    if (it == resources.end()) return;
    std::erase(it->second.watchers, w);
    if (!it->second.watchers.empty()) return;
    resources.erase(it);
    SendRequest(type);
  }

  void Stop() {
    stopped = true;
    if (call != nullptr) call->Cancel();
    for (auto& [type, t] : types) t.resources.clear();
  }

  // One response: validate each resource, keep the good ones, tell the
  // watchers, then ACK (all good) or NACK (naming what was not).
  void OnResponse(const DiscoveryResponse& resp) {
    std::optional<ResourceType> type = TypeFromUrl(resp.type_url());
    if (!type) {
      // A type the client never asks for: ignored, nothing cached.
      std::fprintf(stderr, "ringrpc xDS: a response of unknown type %s; ignored\n",
                   resp.type_url().c_str());
      return;
    }
    Type& t = types[*type];
    t.nonce = resp.nonce();
    std::vector<std::string> errors;
    std::map<std::string, bool> seen;  // names in this response
    for (const google::protobuf::Any& any : resp.resources()) {
      if (any.type_url() != resp.type_url()) {
        errors.push_back(absl::StrCat("a resource of type ", any.type_url(), " in a ",
                                      std::string(TypeName(*type)), " response"));
        continue;
      }
      absl::StatusOr<XdsResource> decoded = DecodeResource(*type, any.value());
      if (!decoded.ok()) {
        errors.push_back(std::string(decoded.status().message()));
        // Which resource it was, if its name can still be told: the
        // watchers of that one hear the error.
        continue;
      }
      const std::string& name = ResourceName(*decoded);
      seen[name] = true;
      auto it = t.resources.find(name);
      if (it == t.resources.end()) continue;  // not watched (a wildcard server sends all)
      Resource& r = it->second;
      r.timer = 0;
      r.does_not_exist = false;
      if (r.value != nullptr && r.raw == any.value()) continue;
      r.raw = any.value();
      r.value = std::make_shared<const XdsResource>(std::move(*decoded));
      for (const auto& w : std::vector(r.watchers)) w->OnUpdate(r.value);
    }
    // State of the world: a Listener or Cluster left out was deleted.
    if ((*type == ResourceType::kListener || *type == ResourceType::kCluster) && errors.empty()) {
      for (auto& [name, r] : t.resources) {
        if (seen.count(name) != 0 || r.value == nullptr) continue;
        if (IgnoreDeletion()) {
          std::fprintf(stderr,
                       "ringrpc xDS: %s \"%s\" was deleted by the server; kept "
                       "(ignore_resource_deletion)\n",
                       std::string(TypeName(*type)).c_str(), name.c_str());
          continue;
        }
        r.value = nullptr;
        r.raw.clear();
        r.does_not_exist = true;
        for (const auto& w : std::vector(r.watchers)) w->OnDoesNotExist();
      }
    }
    if (errors.empty()) {
      t.version = resp.version_info();
      SendRequest(*type);
      return;
    }
    const absl::Status nack = absl::InvalidArgumentError(absl::StrCat(
        "xDS response version ", resp.version_info(), " rejected: ", absl::StrJoin(errors, "; ")));
    std::fprintf(stderr, "ringrpc xDS: %s\n", std::string(nack.message()).c_str());
    for (auto& [name, r] : t.resources) {
      bool named = false;
      for (const std::string& e : errors)
        named = named || e.find(absl::StrCat("\"", name, "\"")) != std::string::npos;
      if (!named) continue;
      for (const auto& w : std::vector(r.watchers)) w->OnError(nack);
    }
    SendRequest(*type, &nack);
  }

  // The stream ended: every watcher hears why; the cache stays.
  void OnStreamEnd(const absl::Status& why) {
    for (auto& [type, t] : types) {
      t.nonce.clear();
      for (auto& [name, r] : t.resources) {
        r.timer = 0;  // restarted when the next stream asks again
        for (const auto& w : std::vector(r.watchers)) w->OnError(why);
      }
    }
  }

  static Task<void> Run(std::shared_ptr<Core> self) {
    runtime::EventLoop& loop = *self->EventLoop();
    channel::BackoffConfig bc;
    bc.initial = self->options.initial_backoff;
    bc.max = self->options.max_backoff;
    channel::ConnectionBackoff backoff(bc);
    uint64_t rng = reinterpret_cast<uintptr_t>(self.get()) | 1;
    while (!self->stopped) {
      const bool answered = co_await self->Stream();
      if (self->stopped) break;
      if (answered) backoff.Reset();
      const TimePoint until = loop.Now() + backoff.NextDelay(NextRandom(rng));
      while (!self->stopped && loop.Now() < until) {
        co_await SleepUntil(loop, std::min(until, loop.Now() + kStopPoll));
      }
    }
  }

  // One ADS stream, until it ends: true if the server answered on it.
  Task<bool> Stream() {
    ClientContext ctx;
    Status status;
    std::unique_ptr<ClientCall> c = co_await channel->Open(kAdsMethod, &ctx, &status);
    if (c == nullptr || stopped) {
      if (c != nullptr) c->Cancel();
      OnStreamEnd(absl::UnavailableError(absl::StrCat("xDS: cannot reach the management server ",
                                                      bootstrap.servers[0].server_uri, ": ",
                                                      status.error_message())));
      co_return false;
    }
    call = c.get();
    node_sent = false;
    for (auto& [type, t] : types) {
      if (!t.resources.empty()) SendRequest(type);
    }
    bool answered = false;
    while (true) {
      std::optional<std::string> m = co_await c->Read();
      if (!m) break;
      answered = true;
      DiscoveryResponse resp;
      if (!resp.ParseFromString(*m)) {
        std::fprintf(stderr, "ringrpc xDS: a DiscoveryResponse that does not parse; ignored\n");
        continue;
      }
      OnResponse(resp);
      if (stopped) break;
    }
    call = nullptr;
    c->Cancel();
    Status end = co_await c->Finish();
    if (!stopped) {
      OnStreamEnd(absl::UnavailableError(
          absl::StrCat("xDS: the ADS stream to ", bootstrap.servers[0].server_uri,
                       " ended: ", end.ok() ? std::string("OK") : end.error_message())));
    }
    co_return answered;
  }
};

XdsClient::XdsClient(std::shared_ptr<Core> core) : core_(std::move(core)) {}

XdsClient::~XdsClient() {
  std::shared_ptr<Core> core = core_;
  core->Post([core] { core->Stop(); });
}

absl::StatusOr<std::shared_ptr<XdsClient>> XdsClient::Create(XdsBootstrap bootstrap,
                                                             XdsClientOptions options) {
  if (bootstrap.servers.empty()) return absl::InvalidArgumentError("xDS bootstrap: no xds_servers");
  absl::StatusOr<std::shared_ptr<ChannelCredentials>> creds = Credentials(bootstrap.servers[0]);
  if (!creds.ok()) return creds.status();
  auto core = std::make_shared<Core>();
  core->channel = CreateChannel(bootstrap.servers[0].server_uri, *creds);
  if (Status s = core->channel->configuration_status(); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("xDS: the management server's channel (",
                                                   bootstrap.servers[0].server_uri,
                                                   "): ", s.error_message()));
  }
  core->bootstrap = std::move(bootstrap);
  core->options = options;
  core->channel->SpawnOn(0, Core::Run(core));
  return std::shared_ptr<XdsClient>(new XdsClient(core));
}

absl::StatusOr<std::shared_ptr<XdsClient>> XdsClient::FromEnvironment() {
  static Mutex mu;
  static std::weak_ptr<XdsClient>* shared = new std::weak_ptr<XdsClient>();
  MutexLock lock(&mu);
  if (std::shared_ptr<XdsClient> c = shared->lock()) return c;
  absl::StatusOr<XdsBootstrap> b = XdsBootstrapFromEnv();
  if (!b.ok()) return b.status();
  absl::StatusOr<std::shared_ptr<XdsClient>> c = Create(std::move(*b));
  if (c.ok()) *shared = *c;
  return c;
}

void XdsClient::Watch(ResourceType type, std::string name, std::shared_ptr<XdsWatcher> watcher) {
  std::shared_ptr<Core> core = core_;
  core->Post([core, type, name = std::move(name), watcher = std::move(watcher)]() mutable {
    core->Watch(type, name, std::move(watcher));
  });
}

void XdsClient::Unwatch(ResourceType type, std::string name, std::shared_ptr<XdsWatcher> watcher) {
  std::shared_ptr<Core> core = core_;
  core->Post([core, type, name = std::move(name), watcher = std::move(watcher)] {
    core->Unwatch(type, name, watcher);
  });
}

void XdsClient::Post(std::function<void()> fn) { core_->Post(std::move(fn)); }

const XdsBootstrap& XdsClient::bootstrap() const { return core_->bootstrap; }

}  // namespace ringrpc::xds
