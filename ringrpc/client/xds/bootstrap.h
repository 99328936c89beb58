// ringrpc/client/xds/bootstrap.h — the xDS bootstrap (gRFC A27): which management
// servers to ask, with which channel credentials, and the node to present.
// Read as grpc++ reads it: the file named by GRPC_XDS_BOOTSTRAP, else the
// JSON in GRPC_XDS_BOOTSTRAP_CONFIG. Pure parsing: no I/O but the one file
// read, no threads. The first piece of issue 18 (the xDS client).
//
//   absl::StatusOr<XdsBootstrap> b = XdsBootstrapFromEnv();
//   if (!b.ok()) ...;  // names the variable, the file or the JSON field
//   b->servers[0].server_uri;  // "xds.example.com:443"
#ifndef RINGRPC_CLIENT_XDS_BOOTSTRAP_H_
#define RINGRPC_CLIENT_XDS_BOOTSTRAP_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ringrpc::xds {

struct XdsServer {
  std::string server_uri;  // a ringrpc target: "host:port", "dns:///...", "unix:..."
  // The first channel_creds entry ringrpc supports ("insecure", "tls");
  // "google_default" and unknown types are skipped, as grpc++ skips types
  // it does not know.
  enum class Creds { kInsecure, kTls };
  Creds creds = Creds::kInsecure;
  // "tls" config (gRFC A65): PEM files; empty: the system's roots, no
  // client certificate.
  std::string ca_certificate_file;
  std::string certificate_file;
  std::string private_key_file;
  std::vector<std::string> server_features;  // e.g. "ignore_resource_deletion"
};

struct XdsNode {
  std::string id;
  std::string cluster;
  std::string region, zone, sub_zone;  // locality
  std::string metadata_json = "{}";    // node.metadata as given (an object)
};

struct XdsBootstrap {
  std::vector<XdsServer> servers;  // at least one
  XdsNode node;
  // The LDS resource name for "xds:///<name>" (A47's template; "%s" is the
  // target's name). Default: the name itself.
  std::string client_default_listener_resource_name_template = "%s";
  // A47's authorities: names only (federation is not supported; a target
  // naming one is an error when it is resolved).
  std::vector<std::string> authorities;
};

// INVALID_ARGUMENT naming the JSON path of the first problem.
absl::StatusOr<XdsBootstrap> ParseXdsBootstrap(std::string_view json);

// From GRPC_XDS_BOOTSTRAP (a file) or GRPC_XDS_BOOTSTRAP_CONFIG (the JSON);
// FAILED_PRECONDITION when neither is set, NOT_FOUND when the file cannot
// be read.
absl::StatusOr<XdsBootstrap> XdsBootstrapFromEnv();

}  // namespace ringrpc::xds

#endif  // RINGRPC_CLIENT_XDS_BOOTSTRAP_H_
