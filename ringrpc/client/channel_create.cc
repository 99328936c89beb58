// Creating a channel: the target's resolver chosen by its scheme (the
// scheme registry: a fixed list, DNS through an HTTP CONNECT proxy when
// one applies, xDS, or a program's own), credentials into the connection
// settings, and the channel started.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/channel.h"
#include "ringrpc/client/channel/builtin_resolvers.h"
#include "ringrpc/client/channel/channel_config.h"
#include "ringrpc/client/channel/channel_state.h"
#include "ringrpc/client/channel/dns_resolver.h"
#include "ringrpc/client/channel/http_proxy.h"
#include "ringrpc/client/channel/static_resolver.h"
#include "ringrpc/client/channel/target.h"
#include "ringrpc/client/interceptor.h"
#include "ringrpc/client/resolver.h"

namespace ringrpc {

namespace {

class InsecureCredentials final : public ChannelCredentials {
 public:
  bool secure() const override { return false; }
};

class LocalChannelCredentials final : public ChannelCredentials {
 public:
  explicit LocalChannelCredentials(grpc_local_connect_type type) : type_(type) {}
  bool secure() const override { return false; }  // plaintext, on this machine
  std::optional<grpc_local_connect_type> local_connect_type() const override { return type_; }

 private:
  const grpc_local_connect_type type_;
};

class SslChannelCredentials final : public ChannelCredentials {
 public:
  explicit SslChannelCredentials(SslCredentialsOptions o) : options_(std::move(o)) {}
  bool secure() const override { return true; }
  const SslCredentialsOptions* ssl_options() const override { return &options_; }

 private:
  SslCredentialsOptions options_;
};

// The host part of an authority: "h:443" -> "h", "[::1]:443" -> "::1".
std::string AuthorityHost(const std::string& authority) {
  if (!authority.empty() && authority[0] == '[') {
    size_t close = authority.find(']');
    return authority.substr(1, close == std::string::npos ? std::string::npos : close - 1);
  }
  size_t colon = authority.rfind(':');
  return colon == std::string::npos ? authority : authority.substr(0, colon);
}

// Makes the channel's connections TLS: one SSL_CTX for all of them.
absl::Status ApplyCredentials(const ChannelCredentials* creds, channel::ChannelConfig& config) {
  if (creds == nullptr) {
    return absl::InvalidArgumentError("channel credentials are null");
  }
  config.call_credentials = creds->call_credentials();
  if (std::optional<grpc_local_connect_type> local = creds->local_connect_type()) {
    using L = transport::ConnectionOptions::Locality;
    if (*local != UDS && *local != LOCAL_TCP) {
      return absl::InvalidArgumentError(
          absl::StrCat("LocalCredentials: unknown grpc_local_connect_type ", int(*local)));
    }
    config.connection.locality = *local == UDS ? L::kUnixSocket : L::kLoopbackTcp;
  }
  if (!creds->secure()) return absl::OkStatus();
  const SslCredentialsOptions* ssl = creds->ssl_options();
  if (ssl == nullptr) {
    return absl::UnimplementedError("secure credentials other than SslCredentials()");
  }
  std::string name =
      config.ssl_target_name_override.value_or(AuthorityHost(config.connection.authority));
  absl::StatusOr<std::shared_ptr<const transport::TlsConfig>> tls =
      transport::MakeTlsConfig({.root_certs = ssl->pem_root_certs,
                                .private_key = ssl->pem_private_key,
                                .cert_chain = ssl->pem_cert_chain},
                               std::move(name), config.ssl_session_cache_size);
  if (!tls.ok()) return tls.status();
  config.connection.tls = *tls;
  config.connection.scheme = "https";
  return absl::OkStatus();
}

}  // namespace

std::shared_ptr<ChannelCredentials> InsecureChannelCredentials() {
  return std::make_shared<InsecureCredentials>();
}

std::shared_ptr<ChannelCredentials> SslCredentials(const SslCredentialsOptions& options) {
  return std::make_shared<SslChannelCredentials>(options);
}

std::shared_ptr<ChannelCredentials> experimental::LocalCredentials(grpc_local_connect_type type) {
  return std::make_shared<LocalChannelCredentials>(type);
}

namespace {
// gRFC A66's grpc.target: the target as a URI, "host:port" being
// "dns:///host:port" as gRPC canonicalizes it.
std::string CanonicalTarget(const std::string& target) {
  channel::RegisterBuiltinResolvers();
  for (const char* scheme : {"dns:", "unix:", "unix-abstract:", "ipv4:", "ipv6:", "xds:"}) {
    if (target.rfind(scheme, 0) == 0) return target;
  }
  if (const ResolverArgs a = SplitTarget(target);
      !a.scheme.empty() && FindResolverFactory(a.scheme)) {
    return target;  // a scheme of the program's own
  }
  return "dns:///" + target;
}
}  // namespace

std::shared_ptr<Channel> CreateChannel(const std::string& target,
                                       const std::shared_ptr<ChannelCredentials>& creds) {
  return CreateCustomChannel(target, creds, ChannelArguments());
}

std::shared_ptr<Channel> CreateCustomChannel(const std::string& target,
                                             const std::shared_ptr<ChannelCredentials>& creds,
                                             const ChannelArguments& args) {
  return experimental::CreateCustomChannelWithInterceptors(target, creds, args, {});
}

namespace {

// The target's resolver, from the scheme registry: a scheme the program
// registered gets its factory as written. ringrpc's own schemes (and a
// target with none, DNS's) are parsed first: a malformed one fails here,
// the channel's :authority comes from it, and a name to resolve through
// an HTTP CONNECT proxy becomes the proxy's name (each connection then
// asks the proxy for a tunnel to the target, as grpc++; this sets the
// tunnel in `state`'s config).
absl::StatusOr<std::shared_ptr<Resolver>> MakeResolver(const std::string& target,
                                                       const ChannelArguments& args,
                                                       channel::ChannelState& state) {
  channel::RegisterBuiltinResolvers();
  ResolverArgs ra = SplitTarget(target);
  ra.channel_args = &args;
  static constexpr std::string_view kOwn[] = {"dns",  "ipv4",          "ipv6",
                                              "unix", "unix-abstract", "xds"};
  const bool own = std::find(std::begin(kOwn), std::end(kOwn), ra.scheme) != std::end(kOwn);
  if (!own && !ra.scheme.empty()) {
    if (ResolverFactory f = FindResolverFactory(ra.scheme)) {
      if (!args.values().count("grpc.default_authority")) {
        state.mutable_config().connection.authority = ra.endpoint;
      }
      return f(ra);
    }
  }
  absl::StatusOr<channel::Target> t = channel::ParseTarget(target);
  if (!t.ok()) return t.status();
  if (!args.values().count("grpc.default_authority")) {
    state.mutable_config().connection.authority = t->authority;
  }
  if (t->kind == channel::Target::Kind::kDns) {
    const channel::ChannelConfig& c = state.config();
    absl::StatusOr<std::optional<channel::HttpProxy>> proxy =
        channel::ChooseHttpProxy(c.http_proxy, c.enable_http_proxy, t->host,
                                 [](const char* name) { return std::getenv(name); });
    if (!proxy.ok()) return proxy.status();
    std::string host_port = ra.scheme == "dns" ? ra.endpoint : target;
    if (*proxy) {
      transport::ConnectionOptions& conn = state.mutable_config().connection;
      conn.http_connect_target = t->host.find(':') != std::string::npos
                                     ? absl::StrCat("[", t->host, "]:", t->port)
                                     : absl::StrCat(t->host, ":", t->port);
      conn.http_connect_authorization = (*proxy)->authorization;
      host_port = (*proxy)->host.find(':') != std::string::npos
                      ? absl::StrCat("[", (*proxy)->host, "]:", (*proxy)->port)
                      : absl::StrCat((*proxy)->host, ":", (*proxy)->port);
    }
    // A target without a scheme is DNS's; the DNS server it names stays.
    ra =
        SplitTarget(absl::StrCat("dns://", ra.scheme == "dns" ? ra.authority : "", "/", host_port));
    ra.channel_args = &args;
  }
  ResolverFactory f = FindResolverFactory(ra.scheme);
  if (!f && ra.scheme == "xds") {
    return absl::InvalidArgumentError(
        absl::StrCat("target \"", target,
                     "\": xds: targets need ringrpc's xDS resolver, which this program "
                     "does not link: link @ringrpc//client/xds:xds_resolver (Bazel only so far)"));
  }
  if (!f)
    return absl::InvalidArgumentError(
        absl::StrCat("target \"", target, "\": no resolver for its scheme"));
  return f(ra);
}

}  // namespace

std::shared_ptr<Channel> experimental::CreateCustomChannelWithInterceptors(
    const std::string& target, const std::shared_ptr<ChannelCredentials>& creds,
    const ChannelArguments& args,
    std::vector<std::unique_ptr<ClientInterceptorFactoryInterface>> interceptor_creators) {
  std::shared_ptr<channel::ChannelState> state = channel::ChannelState::Create(args);
  std::shared_ptr<Channel> channel(new Channel(state));
  if (!state->config_error().ok()) return channel;
  if (!interceptor_creators.empty()) {
    state->mutable_config().interceptors =
        std::make_shared<const std::vector<std::unique_ptr<ClientInterceptorFactoryInterface>>>(
            std::move(interceptor_creators));
  }
  if (state->call_metrics() != nullptr) state->call_metrics()->set_target(CanonicalTarget(target));
  absl::StatusOr<std::shared_ptr<Resolver>> resolver = MakeResolver(target, args, *state);
  if (!resolver.ok()) {
    state->Fail(resolver.status());
    return channel;
  }
  // UDS local credentials want a unix socket: a target that names none is
  // refused now (as grpc++ refuses it), not at each dial.
  if (creds != nullptr && creds->local_connect_type() == UDS && target.rfind("unix:", 0) != 0 &&
      target.rfind("unix-abstract:", 0) != 0) {
    state->Fail(absl::InvalidArgumentError(absl::StrCat(
        "LocalCredentials(UDS) need a unix: or unix-abstract: target, not \"", target, "\"")));
    return channel;
  }
  // After the resolver's choice: TLS checks the :authority it settled.
  if (absl::Status s = ApplyCredentials(creds.get(), state->mutable_config()); !s.ok()) {
    state->Fail(s);
    return channel;
  }
  channel::ChannelState::Start(state, *std::move(resolver));
  return channel;
}

std::shared_ptr<Channel> CreateChannelWithResolver(const std::string& authority,
                                                   std::shared_ptr<Resolver> resolver,
                                                   const std::shared_ptr<ChannelCredentials>& creds,
                                                   const ChannelArguments& args) {
  std::shared_ptr<channel::ChannelState> state = channel::ChannelState::Create(args);
  std::shared_ptr<Channel> channel(new Channel(state));
  if (!state->config_error().ok()) return channel;
  if (!args.values().count("grpc.default_authority")) {
    state->mutable_config().connection.authority = authority;
  }
  if (state->call_metrics() != nullptr) state->call_metrics()->set_target(authority);
  if (resolver == nullptr) {
    state->Fail(absl::InvalidArgumentError("CreateChannelWithResolver: the resolver is null"));
    return channel;
  }
  // The addresses are the resolver's: UDS local credentials check each
  // connection's socket (ConnectionOptions::locality), not a target.
  if (absl::Status s = ApplyCredentials(creds.get(), state->mutable_config()); !s.ok()) {
    state->Fail(s);
    return channel;
  }
  channel::ChannelState::Start(state, std::move(resolver));
  return channel;
}

std::shared_ptr<Channel> CreateChannelWithResolver(const std::string& authority,
                                                   std::shared_ptr<Resolver> resolver,
                                                   const ChannelArguments& args) {
  return CreateChannelWithResolver(authority, std::move(resolver), InsecureChannelCredentials(),
                                   args);
}

Status ValidateChannelArguments(const ChannelArguments& args) {
  return Status::FromAbsl(channel::ParseChannelArguments(args).status());
}

}  // namespace ringrpc
