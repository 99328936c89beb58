// ringrpc/client/xds/xds_resolver.h — the resolver for "xds:" targets (gRFC A27):
// the target's Listener, its routes, the cluster they lead to and that
// cluster's endpoints, followed through the process's XdsClient and handed
// to the channel as addresses plus a service config naming the cluster's
// LB policy. Every EDS update is a resolver update, so it reaches the
// per-thread pools through the channel's generation bump like any other.
//
// Linking this library (alwayslink) registers the "xds" scheme with
// CreateChannel; a program that does not link it gets INVALID_ARGUMENT
// naming the target to link.
//
// What it follows (docs/xds.md has the table): every cluster the virtual
// host's routes name, each a group of the channel's addresses; each call
// is routed by an XdsRouter (path, headers, runtime fraction, weighted
// clusters; decision 0038). EDS clusters only (aggregate and LOGICAL_DNS
// fail the calls routed to them, saying so); per cluster, the first
// priority that has endpoints (the next ones its fallbacks), its
// localities drawn by weight, every HEALTHY/UNKNOWN endpoint of theirs;
// one policy for the channel (least_request when every cluster asks for
// it, else round_robin).
#ifndef RINGRPC_CLIENT_XDS_XDS_RESOLVER_H_
#define RINGRPC_CLIENT_XDS_XDS_RESOLVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ringrpc/client/resolver.h"
#include "ringrpc/client/xds/resources.h"

namespace ringrpc::xds {

class XdsClient;

// The resolver for `target` ("xds:///name"), on the process's XdsClient
// (the bootstrap from the environment). No bootstrap, or a bad one: the
// error, which fails the channel's calls naming the variable or field.
absl::StatusOr<std::shared_ptr<Resolver>> MakeXdsResolver(const std::string& target);
// The same on a given client (tests).
absl::StatusOr<std::shared_ptr<Resolver>> MakeXdsResolver(const std::string& target,
                                                          std::shared_ptr<XdsClient> client);

// A27's virtual host choice for `authority`: an exact domain, else the
// longest "*suffix", else the longest "prefix*", else "*"; nullptr if none.
const XdsVirtualHost* PickVirtualHost(const XdsRouteConfig& routes, const std::string& authority);

}  // namespace ringrpc::xds

#endif  // RINGRPC_CLIENT_XDS_XDS_RESOLVER_H_
