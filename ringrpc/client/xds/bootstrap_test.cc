// The xDS bootstrap as grpc++ reads it: every field ringrpc uses, the
// first supported channel_creds, errors naming the JSON path, and the two
// environment variables (the file first).
#include "ringrpc/client/xds/bootstrap.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace ringrpc::xds {
namespace {

TEST(XdsBootstrap, EveryFieldRingrpcUses) {
  auto b = ParseXdsBootstrap(R"({
    "xds_servers": [
      {"server_uri": "xds.example.com:443",
       "channel_creds": [{"type": "google_default"},
                         {"type": "tls", "config": {"ca_certificate_file": "/ca.pem"}}],
       "server_features": ["xds_v3", "ignore_resource_deletion", 7]},
      {"server_uri": "127.0.0.1:9000", "channel_creds": [{"type": "insecure"}]}
    ],
    "node": {"id": "node-1", "cluster": "c1",
             "locality": {"region": "r", "zone": "z", "sub_zone": "s"},
             "metadata": {"k": "v"}},
    "client_default_listener_resource_name_template": "xdstp://a/envoy.config.listener.v3.Listener/%s",
    "authorities": {"a": {}, "b": {}},
    "certificate_providers": {"x": {}}
  })");
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(b->servers.size(), 2u);
  EXPECT_EQ(b->servers[0].server_uri, "xds.example.com:443");
  EXPECT_EQ(b->servers[0].creds, XdsServer::Creds::kTls);
  EXPECT_EQ(b->servers[0].ca_certificate_file, "/ca.pem");
  EXPECT_EQ(b->servers[0].server_features,
            (std::vector<std::string>{"xds_v3", "ignore_resource_deletion"}));
  EXPECT_EQ(b->servers[1].creds, XdsServer::Creds::kInsecure);
  EXPECT_EQ(b->node.id, "node-1");
  EXPECT_EQ(b->node.cluster, "c1");
  EXPECT_EQ(b->node.region + "/" + b->node.zone + "/" + b->node.sub_zone, "r/z/s");
  EXPECT_EQ(b->node.metadata_json, R"({"k":"v"})");
  EXPECT_EQ(b->client_default_listener_resource_name_template,
            "xdstp://a/envoy.config.listener.v3.Listener/%s");
  EXPECT_EQ(b->authorities, (std::vector<std::string>{"a", "b"}));
}

TEST(XdsBootstrap, DefaultsWhenOptionalFieldsAreMissing) {
  auto b = ParseXdsBootstrap(
      R"({"xds_servers": [{"server_uri": "cp:18000", "channel_creds": [{"type": "insecure"}]}]})");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->node.id, "");
  EXPECT_EQ(b->node.metadata_json, "{}");
  EXPECT_EQ(b->client_default_listener_resource_name_template, "%s");
  EXPECT_TRUE(b->authorities.empty());
}

TEST(XdsBootstrap, ErrorsNameTheField) {
  struct Case {
    const char* json;
    const char* message;
  };
  for (
      const Case& c : std::initializer_list<Case>{
          {"[]", "xDS bootstrap: not a JSON object"},
          {"{", "xDS bootstrap: not a JSON object"},
          {"{}", "xDS bootstrap: xds_servers: is required"},
          {R"({"xds_servers": []})", "xDS bootstrap: xds_servers: must be a non-empty array"},
          {R"({"xds_servers": [{"channel_creds": [{"type": "insecure"}]}]})",
           "xDS bootstrap: xds_servers[0].server_uri: is required (a non-empty string)"},
          {R"({"xds_servers": [{"server_uri": "a:1"}]})",
           "xDS bootstrap: xds_servers[0].channel_creds: is required"},
          {R"({"xds_servers": [{"server_uri": "a:1", "channel_creds": [{"type": "google_default"}, {"type": "alts"}]}]})",
           "xDS bootstrap: xds_servers[0].channel_creds: no supported type (ringrpc takes "
           "\"insecure\" and \"tls\"; found \"google_default\", \"alts\")"},
          {R"({"xds_servers": [{"server_uri": "a:1", "channel_creds": [{"kind": "insecure"}]}]})",
           "xDS bootstrap: xds_servers[0].channel_creds[0].type: must be a string"},
          {R"({"xds_servers": [{"server_uri": "a:1", "channel_creds": [{"type": "tls", "config": {"certificate_file": "c.pem"}}]}]})",
           "xDS bootstrap: xds_servers[0].channel_creds[0].config: certificate_file and "
           "private_key_file go together"},
          {R"({"xds_servers": [{"server_uri": "a:1", "channel_creds": [{"type": "insecure"}]}], "node": {"id": 5}})",
           "xDS bootstrap: node.id: must be a string"},
          {R"({"xds_servers": [{"server_uri": "a:1", "channel_creds": [{"type": "insecure"}]}], "node": {"metadata": []}})",
           "xDS bootstrap: node.metadata: must be an object"},
      }) {
    auto b = ParseXdsBootstrap(c.json);
    ASSERT_FALSE(b.ok()) << c.json;
    EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument) << c.json;
    EXPECT_EQ(b.status().message(), c.message) << c.json;
  }
}

class BootstrapEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("GRPC_XDS_BOOTSTRAP");
    unsetenv("GRPC_XDS_BOOTSTRAP_CONFIG");
  }
  void TearDown() override { SetUp(); }
};

TEST_F(BootstrapEnv, TheFileComesFirstThenTheInlineConfig) {
  const std::string file =
      ::testing::TempDir() + "/bootstrap-" + std::to_string(getpid()) + ".json";
  std::ofstream(file)
      << R"({"xds_servers": [{"server_uri": "from-file:1", "channel_creds": [{"type": "insecure"}]}]})";
  setenv(
      "GRPC_XDS_BOOTSTRAP_CONFIG",
      R"({"xds_servers": [{"server_uri": "from-env:2", "channel_creds": [{"type": "insecure"}]}]})",
      1);
  auto inline_only = XdsBootstrapFromEnv();
  ASSERT_TRUE(inline_only.ok()) << inline_only.status();
  EXPECT_EQ(inline_only->servers[0].server_uri, "from-env:2");
  setenv("GRPC_XDS_BOOTSTRAP", file.c_str(), 1);
  auto both = XdsBootstrapFromEnv();
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->servers[0].server_uri, "from-file:1");
  std::remove(file.c_str());
}

TEST_F(BootstrapEnv, MissingFileNeitherVariableAndABadFileAreClear) {
  auto none = XdsBootstrapFromEnv();
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(none.status().message(),
            "xDS bootstrap: neither GRPC_XDS_BOOTSTRAP nor GRPC_XDS_BOOTSTRAP_CONFIG is set");
  setenv("GRPC_XDS_BOOTSTRAP", "/nonexistent/bootstrap.json", 1);
  auto missing = XdsBootstrapFromEnv();
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "xDS bootstrap: cannot read GRPC_XDS_BOOTSTRAP file \"/nonexistent/bootstrap.json\"");
  const std::string file = ::testing::TempDir() + "/bad-" + std::to_string(getpid()) + ".json";
  std::ofstream(file) << R"({"xds_servers": 1})";
  setenv("GRPC_XDS_BOOTSTRAP", file.c_str(), 1);
  auto bad = XdsBootstrapFromEnv();
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "xDS bootstrap: xds_servers: must be a non-empty array (in " + file + ")");
  std::remove(file.c_str());
}

}  // namespace
}  // namespace ringrpc::xds
