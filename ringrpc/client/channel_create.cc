// Creating a channel: credentials into the connection settings, the
// target parsed, its resolver chosen (a fixed list, xDS, or DNS, through
// an HTTP CONNECT proxy when one applies), and the channel started.
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/channel.h"
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
                               std::move(name));
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

namespace {
// gRFC A66's grpc.target: the target as a URI, "host:port" being
// "dns:///host:port" as gRPC canonicalizes it.
std::string CanonicalTarget(const std::string& target) {
  for (const char* scheme : {"dns:", "unix:", "unix-abstract:", "ipv4:", "ipv6:", "xds:"}) {
    if (target.rfind(scheme, 0) == 0) return target;
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

// The resolver for a parsed target: a fixed list (IP addresses, or a name
// that needs no DNS server), the xDS resolver (if the program links it),
// or c-ares DNS, through an HTTP CONNECT proxy when one applies (which
// sets the connection's tunnel in `state`'s config).
absl::StatusOr<std::shared_ptr<Resolver>> MakeResolver(const std::string& target,
                                                       const channel::Target& t,
                                                       channel::ChannelState& state) {
  if (t.kind == channel::Target::Kind::kStatic) {
    return std::make_shared<channel::StaticResolver>(t.addresses);
  }
  if (t.kind == channel::Target::Kind::kXds) {
    ResolverFactory xds = FindResolverFactory("xds");
    if (!xds) {
      return absl::InvalidArgumentError(absl::StrCat(
          "target \"", target,
          "\": xds: targets need ringrpc's xDS resolver, which this program "
          "does not link: link @ringrpc//client/xds:xds_resolver (Bazel only so far)"));
    }
    return xds(target);
  }
  // Through an HTTP CONNECT proxy: DNS finds the proxy, and each
  // connection asks it for a tunnel to the target's name (as grpc++).
  const channel::ChannelConfig& c = state.config();
  absl::StatusOr<std::optional<channel::HttpProxy>> proxy =
      channel::ChooseHttpProxy(c.http_proxy, c.enable_http_proxy, t.host,
                               [](const char* name) { return std::getenv(name); });
  if (!proxy.ok()) return proxy.status();
  std::string resolve = t.host;
  uint16_t port = t.port;
  if (*proxy) {
    transport::ConnectionOptions& conn = state.mutable_config().connection;
    conn.http_connect_target = t.host.find(':') != std::string::npos
                                   ? absl::StrCat("[", t.host, "]:", t.port)
                                   : absl::StrCat(t.host, ":", t.port);
    conn.http_connect_authorization = (*proxy)->authorization;
    resolve = (*proxy)->host;
    port = (*proxy)->port;
  }
  if (std::optional<AddressList> local = channel::ResolveLocally(resolve, port)) {
    // An IP literal or localhost: a fixed list, no resolver thread (a
    // channel per call would start one each) and no DNS server asked.
    return std::make_shared<channel::StaticResolver>(*std::move(local));
  }
  return std::make_shared<channel::DnsResolver>(
      resolve, port,
      channel::DnsResolver::Options{.server = t.dns_server,
                                    .min_interval = c.dns_min_time_between_resolutions,
                                    .query_timeout = c.dns_query_timeout,
                                    .request_service_config = c.dns_txt_service_config});
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
  absl::StatusOr<channel::Target> t = channel::ParseTarget(target);
  if (!t.ok()) {
    state->Fail(t.status());
    return channel;
  }
  if (!args.values().count("grpc.default_authority")) {
    state->mutable_config().connection.authority = t->authority;
  }
  if (state->call_metrics() != nullptr) state->call_metrics()->set_target(CanonicalTarget(target));
  if (absl::Status s = ApplyCredentials(creds.get(), state->mutable_config()); !s.ok()) {
    state->Fail(s);
    return channel;
  }
  absl::StatusOr<std::shared_ptr<Resolver>> resolver = MakeResolver(target, *t, *state);
  if (!resolver.ok()) {
    state->Fail(resolver.status());
    return channel;
  }
  channel::ChannelState::Start(state, *std::move(resolver));
  return channel;
}

std::shared_ptr<Channel> CreateChannelWithResolver(const std::string& authority,
                                                   std::shared_ptr<Resolver> resolver,
                                                   const ChannelArguments& args) {
  std::shared_ptr<channel::ChannelState> state = channel::ChannelState::Create(args);
  std::shared_ptr<Channel> channel(new Channel(state));
  if (!state->config_error().ok()) return channel;
  if (!args.values().count("grpc.default_authority")) {
    state->mutable_config().connection.authority = authority;
  }
  if (state->call_metrics() != nullptr) state->call_metrics()->set_target(authority);
  channel::ChannelState::Start(state, std::move(resolver));
  return channel;
}

Status ValidateChannelArguments(const ChannelArguments& args) {
  return Status::FromAbsl(channel::ParseChannelArguments(args).status());
}

}  // namespace ringrpc
