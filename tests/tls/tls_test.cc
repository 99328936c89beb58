// TLS channels against a grpc++ server with SslServerCredentials, with a
// certificate authority made at run time (OpenSSL's API: P-256 keys, the
// server's certificate for localhost and 127.0.0.1): success by IP and by
// name, a wrong root, a wrong host name, TLS against plaintext and the
// reverse, mutual TLS, bad PEM.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <chrono>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "client/channel.h"
#include "tests/proto/echo_test.pb.h"
#include "tests/testing/server_process.h"

namespace ringrpc {
namespace {

using ::testing::HasSubstr;
using std::chrono::milliseconds;

constexpr char kUnary[] = "/ringrpc.test.TestService/Unary";

struct KeyAndCert {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  std::string key_pem, cert_pem;
};

std::string Pem(void (*write)(BIO*, void*), void* obj) {
  BIO* bio = BIO_new(BIO_s_mem());
  write(bio, obj);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, n);
  BIO_free(bio);
  return out;
}

// A certificate for `cn` with `san` (empty: none), signed by `issuer` (null:
// self-signed, a CA).
KeyAndCert MakeCert(const std::string& cn, const std::string& san, const KeyAndCert* issuer) {
  KeyAndCert kc;
  kc.key = EVP_EC_gen("P-256");
  kc.cert = X509_new();
  X509_set_version(kc.cert, 2);
  static long serial = 1;
  ASN1_INTEGER_set(X509_get_serialNumber(kc.cert), serial++);
  X509_gmtime_adj(X509_getm_notBefore(kc.cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(kc.cert), 24 * 3600);
  X509_set_pubkey(kc.cert, kc.key);
  X509_NAME* name = X509_get_subject_name(kc.cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(kc.cert, issuer ? X509_get_subject_name(issuer->cert) : name);
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer ? issuer->cert : kc.cert, kc.cert, nullptr, nullptr, 0);
  auto add = [&](int nid, const char* value) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    X509_add_ext(kc.cert, ext, -1);
    X509_EXTENSION_free(ext);
  };
  if (issuer == nullptr) {
    add(NID_basic_constraints, "critical,CA:TRUE");
    add(NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add(NID_basic_constraints, "critical,CA:FALSE");
    if (!san.empty()) add(NID_subject_alt_name, san.c_str());
  }
  X509_sign(kc.cert, issuer ? issuer->key : kc.key, EVP_sha256());
  kc.cert_pem = Pem([](BIO* b, void* c) { PEM_write_bio_X509(b, static_cast<X509*>(c)); },
                    kc.cert);
  kc.key_pem = Pem(
      [](BIO* b, void* k) {
        PEM_write_bio_PrivateKey(b, static_cast<EVP_PKEY*>(k), nullptr, nullptr, 0, nullptr,
                                 nullptr);
      },
      kc.key);
  return kc;
}

std::string WriteFile(const std::string& name, const std::string& text) {
  std::string path = absl::StrCat(::testing::TempDir(), "/", name);
  std::ofstream(path) << text;
  return path;
}

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ca_ = new KeyAndCert(MakeCert("ringrpc test CA", "", nullptr));
    other_ca_ = new KeyAndCert(MakeCert("some other CA", "", nullptr));
    server_ = new KeyAndCert(MakeCert("localhost", "DNS:localhost,IP:127.0.0.1", ca_));
    client_ = new KeyAndCert(MakeCert("client", "DNS:client", ca_));
  }

  // A grpc++ server with TLS (requiring a client certificate if asked).
  std::unique_ptr<testing::ServerProcess> TlsServer(bool require_client_cert = false) {
    std::vector<std::string> extra = {
        "--tls_cert=" + WriteFile("server.pem", server_->cert_pem),
        "--tls_key=" + WriteFile("server.key", server_->key_pem)};
    if (require_client_cert) extra.push_back("--tls_client_ca=" + WriteFile("ca.pem", ca_->cert_pem));
    auto s = testing::ServerProcess::Start("127.0.0.1:0", "tests/server/test_server", extra);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }

  static Status Echo(Channel& ch, const std::string& payload, std::string* peer = nullptr) {
    ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    test::EchoRequest req;
    req.set_payload(payload);
    std::string reply;
    Status s = ch.BlockingUnaryCall(kUnary, &ctx, req.SerializeAsString(), &reply);
    test::EchoResponse resp;
    if (s.ok() && (!resp.ParseFromString(reply) || resp.payload() != payload)) {
      return Status(StatusCode::INTERNAL, "wrong echo");
    }
    if (peer != nullptr) *peer = ctx.peer();
    return s;
  }

  static inline KeyAndCert* ca_ = nullptr;
  static inline KeyAndCert* other_ca_ = nullptr;
  static inline KeyAndCert* server_ = nullptr;
  static inline KeyAndCert* client_ = nullptr;
};

TEST_F(TlsTest, CallsSucceedByIpAndByName) {
  auto server = TlsServer();
  auto creds = SslCredentials({.pem_root_certs = ca_->cert_pem});
  auto by_ip = CreateChannel(server->address(), creds);
  EXPECT_TRUE(Echo(*by_ip, "over TLS").ok()) << Echo(*by_ip, "x").ToString();
  auto by_name = CreateChannel(absl::StrCat("localhost:", server->port()), creds);
  Status s = Echo(*by_name, "by name");
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST_F(TlsTest, AWrongRootFailsVerificationClearly) {
  auto server = TlsServer();
  auto ch = CreateChannel(server->address(), SslCredentials({.pem_root_certs = other_ca_->cert_pem}));
  Status s = Echo(*ch, "x");
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("certificate failed verification"));
}

TEST_F(TlsTest, AWrongHostNameFailsVerification) {
  auto server = TlsServer();
  ChannelArguments args;
  args.SetString("grpc.ssl_target_name_override", "not-this-server.example");
  auto ch = CreateCustomChannel(server->address(), SslCredentials({.pem_root_certs = ca_->cert_pem}),
                                args);
  Status s = Echo(*ch, "x");
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("certificate failed verification"));
  EXPECT_THAT(s.error_message(), HasSubstr("hostname mismatch"));
}

TEST_F(TlsTest, TlsAgainstPlaintextAndPlaintextAgainstTlsFailFast) {
  auto plain = testing::ServerProcess::Start();
  ASSERT_TRUE(plain.ok());
  auto start = std::chrono::steady_clock::now();
  auto tls_to_plain =
      CreateChannel((*plain)->address(), SslCredentials({.pem_root_certs = ca_->cert_pem}));
  Status a = Echo(*tls_to_plain, "x");
  EXPECT_EQ(a.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(a.error_message(), HasSubstr("TLS"));
  auto tls = TlsServer();
  auto plain_to_tls = CreateChannel(tls->address(), InsecureChannelCredentials());
  Status b = Echo(*plain_to_tls, "x");
  EXPECT_EQ(b.error_code(), StatusCode::UNAVAILABLE) << b.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4)) << "no hang";
}

TEST_F(TlsTest, MutualTlsNeedsTheClientCertificate) {
  auto server = TlsServer(/*require_client_cert=*/true);
  auto without = CreateChannel(server->address(), SslCredentials({.pem_root_certs = ca_->cert_pem}));
  EXPECT_EQ(Echo(*without, "x").error_code(), StatusCode::UNAVAILABLE);
  auto with = CreateChannel(server->address(), SslCredentials({.pem_root_certs = ca_->cert_pem,
                                                               .pem_private_key = client_->key_pem,
                                                               .pem_cert_chain = client_->cert_pem}));
  Status s = Echo(*with, "mutual");
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST_F(TlsTest, BadPemIsInvalidArgumentNamingTheField) {
  auto garbage = CreateChannel("127.0.0.1:1", SslCredentials({.pem_root_certs = "not a PEM"}));
  Status s = garbage->configuration_status();
  EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("pem_root_certs"));
  auto half = CreateChannel("127.0.0.1:1", SslCredentials({.pem_root_certs = ca_->cert_pem,
                                                            .pem_private_key = client_->key_pem}));
  EXPECT_THAT(half->configuration_status().error_message(), HasSubstr("go together"));
  auto mismatch = CreateChannel(
      "127.0.0.1:1", SslCredentials({.pem_root_certs = ca_->cert_pem,
                                     .pem_private_key = server_->key_pem,
                                     .pem_cert_chain = client_->cert_pem}));
  EXPECT_THAT(mismatch->configuration_status().error_message(), HasSubstr("does not match"));
  EXPECT_EQ(Echo(*garbage, "x").error_code(), StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace ringrpc
