// ringrpc/client/call_credentials.h — per-call credentials, as grpc++'s: metadata
// (an access token, or whatever a plugin computes) added to each call.
//
//   auto creds = ringrpc::CompositeChannelCredentials(
//       ringrpc::SslCredentials({}), ringrpc::AccessTokenCredentials(token));
//   ctx.set_credentials(ringrpc::MetadataCredentialsFromPlugin(
//       std::make_unique<MyPlugin>()));
//
// As in gRPC, call credentials are sent only over a secure (TLS) or local
// (experimental::LocalCredentials) channel:
// on an insecure one the call fails UNAUTHENTICATED saying so, unless the
// channel sets ringrpc.allow_insecure_call_credentials=1. A plugin that may
// block (IsBlocking(), the default) never runs on a CQ thread: it runs on
// a thread of its own, and a slow one holds up only the calls waiting for
// it. A plugin's error fails the call with the plugin's code and message.
#ifndef RINGRPC_CLIENT_CALL_CREDENTIALS_H_
#define RINGRPC_CLIENT_CALL_CREDENTIALS_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ringrpc/client/channel.h"
#include "ringrpc/client/status.h"

namespace ringrpc {

// The channel's security as a plugin sees it (grpc++'s AuthContext):
// ringrpc knows only whether the transport is TLS.
class AuthContext {
 public:
  explicit AuthContext(bool secure) : secure_(secure) {}
  bool IsPeerAuthenticated() const { return secure_; }
  // "ssl" or "insecure", as grpc's transport_security_type property.
  std::string transport_security_type() const { return secure_ ? "ssl" : "insecure"; }

 private:
  bool secure_;
};

class MetadataCredentialsPlugin {
 public:
  virtual ~MetadataCredentialsPlugin() = default;
  // False: GetMetadata returns at once and may run on a CQ thread.
  virtual bool IsBlocking() const { return true; }
  virtual const char* GetType() const { return ""; }
  // `service_url`: "https://<authority>/<package.Service>"; `method_name`:
  // "<Method>". Adds metadata (lowercase keys) for this call. Any thread.
  virtual Status GetMetadata(std::string_view service_url, std::string_view method_name,
                             const AuthContext& channel_auth_context,
                             std::multimap<std::string, std::string>* metadata) = 0;
};

class CallCredentials {
 public:
  virtual ~CallCredentials() = default;

  // What the credentials get to know about a call.
  struct CallInfo {
    std::string service_url;
    std::string method_name;
    bool secure = false;
  };
  // Adds this call's metadata; may block if blocking().
  virtual Status GetRequestMetadata(const CallInfo& call,
                                    std::multimap<std::string, std::string>* metadata) const = 0;
  virtual bool blocking() const = 0;
};

// "authorization: Bearer <token>".
std::shared_ptr<CallCredentials> AccessTokenCredentials(const std::string& access_token);
std::shared_ptr<CallCredentials> MetadataCredentialsFromPlugin(
    std::unique_ptr<MetadataCredentialsPlugin> plugin);
// Both, `first` first.
std::shared_ptr<CallCredentials> CompositeCallCredentials(
    const std::shared_ptr<CallCredentials>& first, const std::shared_ptr<CallCredentials>& second);
// Channel credentials whose channel adds `call_creds` to every call (before
// a call's own ClientContext::set_credentials).
std::shared_ptr<ChannelCredentials> CompositeChannelCredentials(
    const std::shared_ptr<ChannelCredentials>& channel_creds,
    const std::shared_ptr<CallCredentials>& call_creds);

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_CALL_CREDENTIALS_H_
