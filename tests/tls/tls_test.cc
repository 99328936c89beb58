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

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <future>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/call_credentials.h"
#include "ringrpc/client/channel.h"
#include "ringrpc/client/resolver.h"
#include "tests/proto/echo_test.pb.h"
#include "tests/testing/http_proxy_server.h"
#include "tests/testing/process_stats.h"
#include "tests/testing/server_process.h"

namespace ringrpc {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

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
  kc.cert_pem = Pem([](BIO* b, void* c) { PEM_write_bio_X509(b, static_cast<X509*>(c)); }, kc.cert);
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
    // This program uses OpenSSL (to make certificates) before ringrpc does:
    // as the user guide says, such a program sets OpenSSL up without its
    // exit-time cleanup, which would race ringrpc's CQ threads closing TLS
    // connections as the process exits.
    OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr);
    ca_ = new KeyAndCert(MakeCert("ringrpc test CA", "", nullptr));
    other_ca_ = new KeyAndCert(MakeCert("some other CA", "", nullptr));
    server_ = new KeyAndCert(MakeCert("localhost", "DNS:localhost,IP:127.0.0.1", ca_));
    client_ = new KeyAndCert(MakeCert("client", "DNS:client", ca_));
  }

  // A grpc++ server with TLS (requiring a client certificate if asked).
  std::unique_ptr<testing::ServerProcess> TlsServer(bool require_client_cert = false,
                                                    std::vector<std::string> extra = {}) {
    extra.push_back("--tls_cert=" + WriteFile("server.pem", server_->cert_pem));
    extra.push_back("--tls_key=" + WriteFile("server.key", server_->key_pem));
    if (require_client_cert)
      extra.push_back("--tls_client_ca=" + WriteFile("ca.pem", ca_->cert_pem));
    auto s = testing::ServerProcess::Start("127.0.0.1:0", "tests/server/test_server", extra);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }

  static Status Echo(Channel& ch, const std::string& payload, std::string* peer = nullptr,
                     std::shared_ptr<CallCredentials> call_creds = nullptr) {
    ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    if (call_creds) ctx.set_credentials(call_creds);
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

// A channel on a resolver of the program's own speaks TLS when given
// SslCredentials: the certificate is checked against the authority's host
// (a wrong one fails the handshake); without credentials it is plaintext.
TEST_F(TlsTest, AChannelOnTheProgramsOwnResolverUsesItsCredentials) {
  auto server = TlsServer();
  auto creds = SslCredentials({.pem_root_certs = ca_->cert_pem});
  auto resolved = [&] {
    auto r = std::make_shared<ManualResolver>();
    r->Push(AddressList{*transport::Address::Parse(server->address())});
    return r;
  };
  auto tls = CreateChannelWithResolver("localhost", resolved(), creds, ChannelArguments());
  Status s = Echo(*tls, "own resolver");
  EXPECT_TRUE(s.ok()) << s.ToString();
  auto wrong_name =
      CreateChannelWithResolver("not-the-server.example", resolved(), creds, ChannelArguments());
  s = Echo(*wrong_name, "x");
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  auto plaintext = CreateChannelWithResolver("localhost", resolved(), ChannelArguments());
  EXPECT_FALSE(Echo(*plaintext, "x").ok());  // a TLS server refuses plaintext
}

// Decrypted bytes go straight into receive blocks that large messages
// keep as slices (decision 0036): random payloads across the 4 KiB line and
// across many blocks come back intact, one after another on one
// connection (blocks reused) and several at once.
TEST_F(TlsTest, LargeMessagesComeBackIntact) {
  auto server = TlsServer();
  auto ch = CreateChannel(server->address(), SslCredentials({.pem_root_certs = ca_->cert_pem}));
  std::mt19937_64 rng(7);
  auto random = [&](size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    return s;
  };
  for (size_t size : {3000, 5000, 70000, 300000, 2 << 20, 70000}) {
    Status s = Echo(*ch, random(size));
    EXPECT_TRUE(s.ok()) << size << ": " << s.ToString();
  }
  std::vector<std::string> payloads;
  for (int i = 0; i < 6; ++i) payloads.push_back(random(200000 + i));
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (const std::string& p : payloads) {
    threads.emplace_back([&, p = &p] { ok += Echo(*ch, *p).ok(); });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok.load(), 6);
}

// TLS inside an HTTP CONNECT tunnel (issue 15): the proxy sees only the
// CONNECT; the certificate is checked against the target's name.
TEST_F(TlsTest, TlsThroughAnHttpConnectProxy) {
  auto server = TlsServer();
  ASSERT_NE(server, nullptr);
  auto proxy = testing::HttpProxyServer::Start({.user = "alice", .password = "s3cret"});
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  ChannelArguments args;
  args.SetString("grpc.http_proxy", "http://alice:s3cret@" + (*proxy)->address());
  const std::string target = absl::StrCat("localhost:", server->port());
  auto ch = CreateCustomChannel(target, SslCredentials({.pem_root_certs = ca_->cert_pem}), args);
  std::string peer;
  Status s = Echo(*ch, "tunnelled", &peer);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ((*proxy)->Connects(target), 1);
  auto wrong =
      CreateCustomChannel(target, SslCredentials({.pem_root_certs = other_ca_->cert_pem}), args);
  s = Echo(*wrong, "x");
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("certificate failed verification"));
  EXPECT_THAT(s.error_message(),
              HasSubstr(absl::StrCat(target, " via HTTP proxy ", (*proxy)->address())));
}

// Issue 15: idle TLS connections park in the reservoir and another CQ
// thread takes them (the TLS session moves with the connection): no new
// handshake.
TEST_F(TlsTest, IdleTlsConnectionsMoveBetweenCqThreadsWithoutANewHandshake) {
  auto server = TlsServer();
  ASSERT_NE(server, nullptr);
  ChannelArguments args;
  args.SetInt("ringrpc.cq_threads", 2);
  args.SetInt("ringrpc.reservoir_capacity", 8);
  args.SetInt("ringrpc.reap_interval_ms", 20);
  args.SetInt("ringrpc.max_concurrent_streams", 1);  // a connection per call
  args.SetInt("ringrpc.connections_per_thread", 4);
  auto ch = CreateCustomChannel(absl::StrCat("localhost:", server->port()),
                                SslCredentials({.pem_root_certs = ca_->cert_pem}), args);
  struct Calls {
    std::atomic<int> done{0}, ok{0};
  };
  auto call = [](Channel* c, Calls* out) -> Task<void> {
    ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    test::EchoRequest req;
    req.set_payload("parked");
    // Four at once: four connections. Longer than four TLS dials one after
    // another take (a sanitized build handshakes slowly), or a call that
    // ended would lend its connection to the last one (seen under TSAN).
    req.set_sleep_ms(testing::kSanitized ? 1500 : 300);
    std::string reply;
    Status s = co_await c->Unary(kUnary, &ctx, req.SerializeAsString(), &reply);
    test::EchoResponse resp;
    if (s.ok() && resp.ParseFromString(reply) && resp.payload() == "parked") out->ok.fetch_add(1);
    out->done.fetch_add(1);
  };
  auto run_on = [&](size_t thread, Calls* out) {
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(ch->SpawnOn(thread, call(ch.get(), out)).ok());
    for (int i = 0; i < 1000 && out->done.load() < 4; ++i)
      std::this_thread::sleep_for(milliseconds(10));
    EXPECT_EQ(out->ok.load(), 4);
  };
  Calls first, second;
  run_on(0, &first);
  EXPECT_EQ(ch->Metrics().created, 4u);
  for (int i = 0; i < 500 && ch->Metrics().parked < 4; ++i)
    std::this_thread::sleep_for(milliseconds(10));
  ASSERT_EQ(ch->Metrics().parked, 4u) << ch->MetricsText();
  run_on(1, &second);
  pool::PoolMetrics m = ch->Metrics();
  EXPECT_EQ(m.created, 4u) << "thread 1 used the parked TLS connections: no handshake";
  EXPECT_EQ(m.unparked, 4u);
}

// The channel's session cache: the first CQ thread's dial is a full
// handshake, and the other threads' dials to the same server resume its
// session (the server sends no certificate, the client checks none). With
// ringrpc.ssl_session_cache_size=0 every dial is full. Prints the client
// CPU and the wall time of 8 CQ threads' first calls, with and without the
// cache (the figures in docs/performance.md come from this output).
TEST_F(TlsTest, EveryCqThreadsDialResumesTheFirstOnesSession) {
  auto server = TlsServer();
  ASSERT_NE(server, nullptr);
  constexpr int kThreads = 8;
  constexpr int kRounds = 10;
  auto warm_up = [&](int cache_size, double* cpu_ms, double* wall_ms, double* server_ms) {
    ChannelArguments args;
    args.SetInt("ringrpc.cq_threads", kThreads);
    args.SetInt("ringrpc.ssl_session_cache_size", cache_size);
    auto ch = CreateCustomChannel(absl::StrCat("localhost:", server->port()),
                                  SslCredentials({.pem_root_certs = ca_->cert_pem}), args);
    auto call = [](Channel* c, std::promise<Status>* done) -> Task<void> {
      ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      std::string reply;
      done->set_value(
          co_await c->Unary(kUnary, &ctx, test::EchoRequest().SerializeAsString(), &reply));
    };
    timespec cpu0, cpu1;
    const double server0 = testing::ProcessCpuMs(server->pid());
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu0);
    const auto start = std::chrono::steady_clock::now();
    for (int t = 0; t < kThreads; ++t) {  // one after another: each finds the last's session
      std::promise<Status> done;
      std::future<Status> status = done.get_future();
      EXPECT_TRUE(ch->SpawnOn(t, call(ch.get(), &done)).ok());
      Status s = status.get();
      EXPECT_TRUE(s.ok()) << t << ": " << s.ToString();
    }
    *wall_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu1);
    *cpu_ms += (cpu1.tv_sec - cpu0.tv_sec) * 1e3 + (cpu1.tv_nsec - cpu0.tv_nsec) / 1e6;
    *server_ms += testing::ProcessCpuMs(server->pid()) - server0;
    EXPECT_EQ(ch->Metrics().created, uint64_t(kThreads));
    return ch->MetricsText();
  };
  double cached_cpu = 0, cached_wall = 0, cached_server = 0;
  double full_cpu = 0, full_wall = 0, full_server = 0;
  for (int round = 0; round < kRounds; ++round) {
    std::string cached = warm_up(64, &cached_cpu, &cached_wall, &cached_server);
    EXPECT_THAT(cached, HasSubstr("ringrpc_tls_handshakes_total{kind=\"resumed\"} 7\n"));
    EXPECT_THAT(cached, HasSubstr("ringrpc_tls_handshakes_total{kind=\"full\"} 1\n"));
    std::string uncached = warm_up(0, &full_cpu, &full_wall, &full_server);
    EXPECT_THAT(uncached, ::testing::Not(HasSubstr("ringrpc_tls_handshakes_total")));
  }
  // Per dial: without the cache all 8 are full; with it, 1 full and 7 resumed.
  const double full_dial = full_cpu / (kRounds * kThreads);
  const double resumed_dial = (cached_cpu / kRounds - full_dial) / (kThreads - 1);
  std::printf(
      "TLS warm-up of %d CQ threads against one grpc++ server (%d rounds, mean):\n"
      "  no session cache:  client CPU %.2f ms, wall %.2f ms, server CPU %.1f ms\n"
      "  session cache:     client CPU %.2f ms, wall %.2f ms, server CPU %.1f ms\n"
      "  client CPU per dial (with its first call): full %.3f ms, resumed %.3f ms (%.2fx)\n",
      kThreads, kRounds, full_cpu / kRounds, full_wall / kRounds, full_server / kRounds,
      cached_cpu / kRounds, cached_wall / kRounds, cached_server / kRounds, full_dial, resumed_dial,
      resumed_dial / full_dial);
}

TEST_F(TlsTest, AWrongRootFailsVerificationClearly) {
  auto server = TlsServer();
  auto ch =
      CreateChannel(server->address(), SslCredentials({.pem_root_certs = other_ca_->cert_pem}));
  Status s = Echo(*ch, "x");
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("certificate failed verification"));
}

TEST_F(TlsTest, AWrongHostNameFailsVerification) {
  auto server = TlsServer();
  ChannelArguments args;
  args.SetString("grpc.ssl_target_name_override", "not-this-server.example");
  auto ch = CreateCustomChannel(server->address(),
                                SslCredentials({.pem_root_certs = ca_->cert_pem}), args);
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
  auto without =
      CreateChannel(server->address(), SslCredentials({.pem_root_certs = ca_->cert_pem}));
  EXPECT_EQ(Echo(*without, "x").error_code(), StatusCode::UNAVAILABLE);
  auto with =
      CreateChannel(server->address(), SslCredentials({.pem_root_certs = ca_->cert_pem,
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
  auto mismatch =
      CreateChannel("127.0.0.1:1", SslCredentials({.pem_root_certs = ca_->cert_pem,
                                                   .pem_private_key = server_->key_pem,
                                                   .pem_cert_chain = client_->cert_pem}));
  EXPECT_THAT(mismatch->configuration_status().error_message(), HasSubstr("does not match"));
  EXPECT_EQ(Echo(*garbage, "x").error_code(), StatusCode::INVALID_ARGUMENT);
}

// ---- call credentials (issue 14, part 2) ---------------------------------------------

// A plugin that records what it was asked and answers with a bearer token
// after `delay`, or fails with `fail`.
class TokenPlugin final : public MetadataCredentialsPlugin {
 public:
  struct Seen {
    std::mutex mu;
    std::vector<std::string> urls, methods;
    std::vector<std::thread::id> threads;
    bool authenticated = false;
  };
  TokenPlugin(std::string token, std::shared_ptr<Seen> seen,
              std::chrono::milliseconds delay = std::chrono::milliseconds(0),
              Status fail = Status())
      : token_(std::move(token)), seen_(std::move(seen)), delay_(delay), fail_(std::move(fail)) {}
  Status GetMetadata(std::string_view url, std::string_view method, const AuthContext& auth,
                     std::multimap<std::string, std::string>* md) override {
    {
      std::lock_guard<std::mutex> lock(seen_->mu);
      seen_->urls.emplace_back(url);
      seen_->methods.emplace_back(method);
      seen_->threads.push_back(std::this_thread::get_id());
      seen_->authenticated = auth.IsPeerAuthenticated();
    }
    std::this_thread::sleep_for(delay_);
    if (!fail_.ok()) return fail_;
    md->emplace("authorization", "Bearer " + token_);
    return Status();
  }

 private:
  std::string token_;
  std::shared_ptr<Seen> seen_;
  std::chrono::milliseconds delay_;
  Status fail_;
};

TEST_F(TlsTest, AccessTokenOnTheChannelAndPerCallReachesTheServer) {
  auto server = TlsServer(false, {"--require_token=s3cret"});
  auto tls = SslCredentials({.pem_root_certs = ca_->cert_pem});
  auto without = CreateChannel(server->address(), tls);
  Status refused = Echo(*without, "x");
  EXPECT_EQ(refused.error_code(), StatusCode::UNAUTHENTICATED) << refused.ToString();
  auto with = CreateChannel(server->address(),
                            CompositeChannelCredentials(tls, AccessTokenCredentials("s3cret")));
  Status s = Echo(*with, "token on the channel");
  EXPECT_TRUE(s.ok()) << s.ToString();
  s = Echo(*without, "token on the call", nullptr, AccessTokenCredentials("s3cret"));
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Echo(*without, "x", nullptr, AccessTokenCredentials("wrong")).error_code(),
            StatusCode::UNAUTHENTICATED);
}

TEST_F(TlsTest, APluginSeesTheServiceUrlAndMethodAndRunsOffTheCqThreads) {
  auto server = TlsServer(false, {"--require_token=plugged"});
  auto seen = std::make_shared<TokenPlugin::Seen>();
  auto ch = CreateChannel(
      absl::StrCat("localhost:", server->port()),
      CompositeChannelCredentials(
          SslCredentials({.pem_root_certs = ca_->cert_pem}),
          MetadataCredentialsFromPlugin(std::make_unique<TokenPlugin>("plugged", seen))));
  Status s = Echo(*ch, "plugin");
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::lock_guard<std::mutex> lock(seen->mu);
  ASSERT_EQ(seen->urls.size(), 1u);
  EXPECT_EQ(seen->urls[0],
            absl::StrCat("https://localhost:", server->port(), "/ringrpc.test.TestService"));
  EXPECT_EQ(seen->methods[0], "Unary");
  EXPECT_TRUE(seen->authenticated);
  EXPECT_NE(seen->threads[0], std::this_thread::get_id());
}

TEST_F(TlsTest, APluginErrorFailsTheCallWithItsCodeAndMessage) {
  auto server = TlsServer();
  auto seen = std::make_shared<TokenPlugin::Seen>();
  auto ch = CreateChannel(server->address(), SslCredentials({.pem_root_certs = ca_->cert_pem}));
  Status s = Echo(*ch, "x", nullptr,
                  MetadataCredentialsFromPlugin(std::make_unique<TokenPlugin>(
                      "t", seen, std::chrono::milliseconds(0),
                      Status(StatusCode::UNAVAILABLE, "token service down"))));
  EXPECT_EQ(s.error_code(), StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("call credentials failed: token service down"));
}

// One CQ thread; a plugin that takes 1.5 s must not hold up calls with
// other credentials, and the slow call still succeeds.
TEST_F(TlsTest, ASlowPluginHoldsUpOnlyItsOwnCalls) {
  auto server = TlsServer(false, {"--require_token=t"});
  ChannelArguments args;
  args.SetInt("ringrpc.cq_threads", 1);
  auto ch = CreateCustomChannel(server->address(),
                                SslCredentials({.pem_root_certs = ca_->cert_pem}), args);
  auto seen = std::make_shared<TokenPlugin::Seen>();
  auto slow_creds = MetadataCredentialsFromPlugin(
      std::make_unique<TokenPlugin>("t", seen, std::chrono::milliseconds(1500)));
  ClientContext slow_ctx;
  test::EchoRequest req;
  req.set_payload("slow");
  std::string slow_reply;
  slow_ctx.set_credentials(slow_creds);
  std::promise<Status> slow_done;
  const auto start = std::chrono::steady_clock::now();
  ch->UnaryCallAsync(kUnary, &slow_ctx, req.SerializeAsString(), &slow_reply,
                     [&](Status s) { slow_done.set_value(s); });
  auto fast_creds = AccessTokenCredentials("t");
  for (int i = 0; i < 20; ++i) {
    Status s = Echo(*ch, "fast", nullptr, fast_creds);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1400))
      << "the fast calls waited for the slow plugin";
  Status slow = slow_done.get_future().get();
  EXPECT_TRUE(slow.ok()) << slow.ToString();
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1500));
}

TEST_F(TlsTest, ADeadlineEndsACallWhosePluginHangs) {
  auto server = TlsServer();
  auto seen = std::make_shared<TokenPlugin::Seen>();
  auto ch = CreateChannel(server->address(), SslCredentials({.pem_root_certs = ca_->cert_pem}));
  ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  ctx.set_credentials(MetadataCredentialsFromPlugin(
      std::make_unique<TokenPlugin>("t", seen, std::chrono::milliseconds(3000))));
  test::EchoRequest req;
  std::string reply;
  const auto start = std::chrono::steady_clock::now();
  Status s = ch->BlockingUnaryCall(kUnary, &ctx, req.SerializeAsString(), &reply);
  EXPECT_EQ(s.error_code(), StatusCode::DEADLINE_EXCEEDED) << s.ToString();
  EXPECT_THAT(s.error_message(), HasSubstr("call credentials"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500));
}

TEST_F(TlsTest, CallCredentialsNeedTlsUnlessTheChannelOptsIn) {
  auto server = testing::ServerProcess::Start("127.0.0.1:0", "tests/server/test_server",
                                              {"--require_token=t"});
  ASSERT_TRUE(server.ok());
  auto insecure = CreateChannel((*server)->address(), InsecureChannelCredentials());
  Status refused = Echo(*insecure, "x", nullptr, AccessTokenCredentials("t"));
  EXPECT_EQ(refused.error_code(), StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(refused.error_message(), HasSubstr("only over a secure (TLS) or local"));
  ChannelArguments args;
  args.SetInt("ringrpc.allow_insecure_call_credentials", 1);
  auto opted_in = CreateCustomChannel((*server)->address(), InsecureChannelCredentials(), args);
  Status s = Echo(*opted_in, "x", nullptr, AccessTokenCredentials("t"));
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST_F(TlsTest, APerCallAuthorityReachesTheServer) {
  auto server = TlsServer();
  auto ch = CreateChannel(server->address(), SslCredentials({.pem_root_certs = ca_->cert_pem}));
  ClientContext ctx;
  ctx.set_authority("virtual.example:8443");
  ctx.AddMetadata("x-want-authority", "1");
  test::EchoRequest req;
  std::string reply;
  Status s = ch->BlockingUnaryCall(kUnary, &ctx, req.SerializeAsString(), &reply);
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto it = ctx.GetServerInitialMetadata().find("x-authority");
  ASSERT_NE(it, ctx.GetServerInitialMetadata().end());
  EXPECT_EQ(it->second, "virtual.example:8443");
  ClientContext bad;
  bad.set_authority("has space");
  Status invalid = ch->BlockingUnaryCall(kUnary, &bad, req.SerializeAsString(), &reply);
  EXPECT_EQ(invalid.error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(invalid.error_message(), HasSubstr("set_authority"));
}

}  // namespace
}  // namespace ringrpc
