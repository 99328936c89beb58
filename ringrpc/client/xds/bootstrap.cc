#include "ringrpc/client/xds/bootstrap.h"

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace ringrpc::xds {
namespace {

using nlohmann::json;

absl::Status Error(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat("xDS bootstrap: ", path, path.empty() ? "" : ": ", what));
}

// Reads an optional string field; an error if present and not a string.
absl::Status OptionalString(const json& obj, const char* key, const std::string& path,
                            std::string* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_string()) return Error(absl::StrCat(path, key), "must be a string");
  *out = it->get<std::string>();
  return absl::OkStatus();
}

absl::Status ReadCreds(const json& list, const std::string& path, XdsServer& server) {
  if (!list.is_array() || list.empty()) return Error(path, "must be a non-empty array");
  std::vector<std::string> seen;
  for (size_t i = 0; i < list.size(); ++i) {
    const json& c = list[i];
    const std::string at = absl::StrCat(path, "[", i, "]");
    if (!c.is_object()) return Error(at, "must be an object");
    auto type = c.find("type");
    if (type == c.end() || !type->is_string()) return Error(at + ".type", "must be a string");
    const std::string t = type->get<std::string>();
    if (t == "insecure") {
      server.creds = XdsServer::Creds::kInsecure;
      return absl::OkStatus();
    }
    if (t == "tls") {
      server.creds = XdsServer::Creds::kTls;
      auto config = c.find("config");
      if (config != c.end() && !config->is_null()) {
        if (!config->is_object()) return Error(at + ".config", "must be an object");
        const std::string cfg = at + ".config.";
        for (auto [key, field] : {std::pair{"ca_certificate_file", &server.ca_certificate_file},
                                  std::pair{"certificate_file", &server.certificate_file},
                                  std::pair{"private_key_file", &server.private_key_file}}) {
          if (absl::Status s = OptionalString(*config, key, cfg, field); !s.ok()) return s;
        }
        if (server.certificate_file.empty() != server.private_key_file.empty()) {
          return Error(at + ".config", "certificate_file and private_key_file go together");
        }
      }
      return absl::OkStatus();
    }
    seen.push_back(t);  // google_default, unknown: the next entry may do
  }
  std::string names;
  for (const std::string& s : seen)
    absl::StrAppend(&names, names.empty() ? "" : ", ", "\"", s, "\"");
  return Error(
      path, absl::StrCat("no supported type (ringrpc takes \"insecure\" and \"tls\"; found ", names,
                         ")"));
}

absl::Status ReadServers(const json& list, const std::string& path, std::vector<XdsServer>& out) {
  if (!list.is_array() || list.empty()) return Error(path, "must be a non-empty array");
  for (size_t i = 0; i < list.size(); ++i) {
    const json& s = list[i];
    const std::string at = absl::StrCat(path, "[", i, "]");
    if (!s.is_object()) return Error(at, "must be an object");
    XdsServer server;
    auto uri = s.find("server_uri");
    if (uri == s.end() || !uri->is_string() || uri->get<std::string>().empty()) {
      return Error(at + ".server_uri", "is required (a non-empty string)");
    }
    server.server_uri = uri->get<std::string>();
    auto creds = s.find("channel_creds");
    if (creds == s.end()) return Error(at + ".channel_creds", "is required");
    if (absl::Status st = ReadCreds(*creds, at + ".channel_creds", server); !st.ok()) return st;
    if (auto f = s.find("server_features"); f != s.end()) {
      if (!f->is_array()) return Error(at + ".server_features", "must be an array");
      for (const json& feature : *f) {
        // Unknown features are ignored (A27); non-strings are ignored too.
        if (feature.is_string()) server.server_features.push_back(feature.get<std::string>());
      }
    }
    out.push_back(std::move(server));
  }
  return absl::OkStatus();
}

absl::Status ReadNode(const json& node, XdsNode& out) {
  if (!node.is_object()) return Error("node", "must be an object");
  for (auto [key, field] : {std::pair{"id", &out.id}, std::pair{"cluster", &out.cluster}}) {
    if (absl::Status s = OptionalString(node, key, "node.", field); !s.ok()) return s;
  }
  if (auto loc = node.find("locality"); loc != node.end() && !loc->is_null()) {
    if (!loc->is_object()) return Error("node.locality", "must be an object");
    for (auto [key, field] : {std::pair{"region", &out.region}, std::pair{"zone", &out.zone},
                              std::pair{"sub_zone", &out.sub_zone}}) {
      if (absl::Status s = OptionalString(*loc, key, "node.locality.", field); !s.ok()) return s;
    }
  }
  if (auto md = node.find("metadata"); md != node.end() && !md->is_null()) {
    if (!md->is_object()) return Error("node.metadata", "must be an object");
    out.metadata_json = md->dump();
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<XdsBootstrap> ParseXdsBootstrap(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Error("", "not a JSON object");
  XdsBootstrap out;
  auto servers = j.find("xds_servers");
  if (servers == j.end()) return Error("xds_servers", "is required");
  if (absl::Status s = ReadServers(*servers, "xds_servers", out.servers); !s.ok()) return s;
  if (auto node = j.find("node"); node != j.end() && !node->is_null()) {
    if (absl::Status s = ReadNode(*node, out.node); !s.ok()) return s;
  }
  if (absl::Status s = OptionalString(j, "client_default_listener_resource_name_template", "",
                                      &out.client_default_listener_resource_name_template);
      !s.ok()) {
    return s;
  }
  if (auto a = j.find("authorities"); a != j.end() && !a->is_null()) {
    if (!a->is_object()) return Error("authorities", "must be an object");
    for (auto it = a->begin(); it != a->end(); ++it) out.authorities.push_back(it.key());
  }
  // certificate_providers and server_listener_resource_name_template are
  // for servers and xDS-provided TLS: not used by this client.
  return out;
}

absl::StatusOr<XdsBootstrap> XdsBootstrapFromEnv() {
  if (const char* path = std::getenv("GRPC_XDS_BOOTSTRAP"); path != nullptr && *path != '\0') {
    std::ifstream f(path);
    if (!f) {
      return absl::NotFoundError(
          absl::StrCat("xDS bootstrap: cannot read GRPC_XDS_BOOTSTRAP file \"", path, "\""));
    }
    std::stringstream text;
    text << f.rdbuf();
    absl::StatusOr<XdsBootstrap> b = ParseXdsBootstrap(text.str());
    if (!b.ok()) {
      return absl::Status(b.status().code(),
                          absl::StrCat(b.status().message(), " (in ", path, ")"));
    }
    return b;
  }
  if (const char* config = std::getenv("GRPC_XDS_BOOTSTRAP_CONFIG");
      config != nullptr && *config != '\0') {
    return ParseXdsBootstrap(config);
  }
  return absl::FailedPreconditionError(
      "xDS bootstrap: neither GRPC_XDS_BOOTSTRAP nor GRPC_XDS_BOOTSTRAP_CONFIG is set");
}

}  // namespace ringrpc::xds
