// ringrpc/client/xds/xds_client.h — the xDS client (gRFC A27): one ADS stream
// (state of the world) to the bootstrap's first management server, shared
// by every channel in the process that names an xds: target. Channels
// Watch the resources they need; the client subscribes to them, validates
// what arrives (resources.h), ACKs or NACKs it, caches it, and tells the
// watchers. The stream is re-opened with backoff when it ends; the cache is
// kept meanwhile, so calls go on with the last good configuration.
//
// The channel to the management server is a ringrpc channel (the
// bootstrap's server_uri and channel_creds). Everything the client holds
// lives on one CQ thread of that channel; Watch and Unwatch may be called
// from any thread and hop there. Watchers are called on that thread, one
// call at a time; they must not block.
//
//   auto client = XdsClient::Create(bootstrap);
//   (*client)->Watch(ResourceType::kListener, "greeter", watcher);
//   ... watcher->OnUpdate(listener) ...
//   (*client)->Unwatch(ResourceType::kListener, "greeter", watcher);
#ifndef RINGRPC_CLIENT_XDS_XDS_CLIENT_H_
#define RINGRPC_CLIENT_XDS_XDS_CLIENT_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ringrpc/client/xds/bootstrap.h"
#include "ringrpc/client/xds/resources.h"

namespace ringrpc::xds {

class XdsWatcher {
 public:
  virtual ~XdsWatcher() = default;
  // A new version of the resource, validated (also at once on Watch when
  // one is cached).
  virtual void OnUpdate(std::shared_ptr<const XdsResource> resource) = 0;
  // The server does not have it: not sent within the does-not-exist
  // timeout of being asked for, or (Listener, Cluster) left out of a
  // response after it was sent.
  virtual void OnDoesNotExist() = 0;
  // The stream failed, or the server sent a version of the resource that
  // does not validate (NACKed). What was delivered before stays in force.
  virtual void OnError(absl::Status status) = 0;
};

struct XdsClientOptions {
  // A27: how long a subscribed resource may go unsent before it is taken
  // not to exist.
  std::chrono::milliseconds resource_does_not_exist_timeout{15000};
  // The ADS stream's backoff after it ends without a response (gRPC's
  // connection backoff; reset by any response).
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{120000};
};

class XdsClient {
 public:
  // A client of its own (tests, several bootstraps).
  static absl::StatusOr<std::shared_ptr<XdsClient>> Create(XdsBootstrap bootstrap,
                                                           XdsClientOptions options = {});
  // The process's client for the bootstrap in the environment
  // (GRPC_XDS_BOOTSTRAP or GRPC_XDS_BOOTSTRAP_CONFIG), made by the first
  // channel that needs it and shared while any channel holds it.
  static absl::StatusOr<std::shared_ptr<XdsClient>> FromEnvironment();

  // Stops the stream without waiting. A watcher call running on the
  // client's thread at that moment finishes; none starts once the stop
  // reaches that thread (watchers that must never be called after some
  // point guard themselves, as XdsResolver does).
  ~XdsClient();
  XdsClient(const XdsClient&) = delete;
  XdsClient& operator=(const XdsClient&) = delete;

  void Watch(ResourceType type, std::string name, std::shared_ptr<XdsWatcher> watcher);
  void Unwatch(ResourceType type, std::string name, std::shared_ptr<XdsWatcher> watcher);

  // Runs `fn` on the client's thread, after every Watch and Unwatch made
  // before it (code that must touch what its watchers touch).
  void Post(std::function<void()> fn);

  const XdsBootstrap& bootstrap() const;

  struct Core;  // ringrpc/client/xds/xds_client.cc

 private:
  explicit XdsClient(std::shared_ptr<Core> core);
  std::shared_ptr<Core> core_;
};

}  // namespace ringrpc::xds

#endif  // RINGRPC_CLIENT_XDS_XDS_CLIENT_H_
