#include "ringrpc/client/transport/tls.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"

namespace ringrpc::transport {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

BioPtr MemBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

std::string LastError() {
  unsigned long e = ERR_peek_last_error();
  if (e == 0) return "no OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

bool IsIpAddress(const std::string& name) {
  unsigned char addr[16];
  return inet_pton(AF_INET, name.c_str(), addr) == 1 ||
         inet_pton(AF_INET6, name.c_str(), addr) == 1;
}

// OpenSSL frees its global locks in an atexit handler unless told not to.
// ringrpc's CQ threads outlive main() (they are never joined at exit) and
// may be closing a TLS connection (SSL_CTX_free takes such a lock) while
// that handler runs: a use of freed memory at exit. So OpenSSL is set up
// without the handler, once, before ringrpc's first use of it. (If the
// program set OpenSSL up first, its choice stands: see the user guide.)
void InitOpenSslOnce() {
  static const bool done = [] {
    OPENSSL_init_ssl(
        OPENSSL_INIT_NO_ATEXIT | OPENSSL_INIT_LOAD_SSL_STRINGS | OPENSSL_INIT_LOAD_CRYPTO_STRINGS,
        nullptr);
    return true;
  }();
  (void)done;
}

// Where an SSL carries its TlsSession (for OnNewSession).
int SessionIndex() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

}  // namespace

TlsSessionCache::~TlsSessionCache() {
  for (auto& [key, session] : sessions_) SSL_SESSION_free(session);
}

SSL_SESSION* TlsSessionCache::Get(std::string_view key) {
  MutexLock lock(&mu_);
  for (auto& [k, session] : sessions_) {
    if (k != key) continue;
    SSL_SESSION_up_ref(session);
    return session;
  }
  return nullptr;
}

void TlsSessionCache::Put(std::string_view key, SSL_SESSION* session) {
  SSL_SESSION* old = nullptr;
  {
    MutexLock lock(&mu_);
    auto it = std::find_if(sessions_.begin(), sessions_.end(),
                           [key](const auto& entry) { return entry.first == key; });
    if (it != sessions_.end()) {
      old = it->second;
      sessions_.erase(it);
    } else if (sessions_.size() >= capacity_ && !sessions_.empty()) {
      old = sessions_.front().second;
      sessions_.erase(sessions_.begin());
    }
    sessions_.emplace_back(std::string(key), session);
  }
  if (old != nullptr) SSL_SESSION_free(old);
}

int TlsSession::OnNewSession(SSL* ssl, SSL_SESSION* session) {
  auto* self = static_cast<TlsSession*>(SSL_get_ex_data(ssl, SessionIndex()));
  if (self == nullptr || self->cache_ == nullptr || !SSL_SESSION_is_resumable(session)) return 0;
  self->cache_->Put(self->key_, session);
  return 1;  // the cache holds the reference now
}

absl::StatusOr<std::shared_ptr<const TlsConfig>> MakeTlsConfig(const TlsPem& pem,
                                                               std::string server_name,
                                                               size_t session_cache) {
  InitOpenSslOnce();
  ERR_clear_error();
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  if (ctx == nullptr) return absl::InternalError("SSL_CTX_new: " + LastError());
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  static const unsigned char kAlpn[] = {2, 'h', '2'};
  SSL_CTX_set_alpn_protos(ctx.get(), kAlpn, sizeof kAlpn);  // 0 on success
  if (pem.root_certs.empty()) {
    SSL_CTX_set_default_verify_paths(ctx.get());
  } else {
    X509_STORE* store = SSL_CTX_get_cert_store(ctx.get());
    BioPtr bio = MemBio(pem.root_certs);
    int n = 0;
    while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
      X509_STORE_add_cert(store, cert);
      X509_free(cert);
      ++n;
    }
    ERR_clear_error();  // the read that ended the loop
    if (n == 0) {
      return absl::InvalidArgumentError(
          "SslCredentialsOptions.pem_root_certs holds no PEM certificate");
    }
  }
  if (pem.private_key.empty() != pem.cert_chain.empty()) {
    return absl::InvalidArgumentError(
        "SslCredentialsOptions.pem_private_key and pem_cert_chain go together (mutual TLS "
        "needs both)");
  }
  if (!pem.cert_chain.empty()) {
    BioPtr chain = MemBio(pem.cert_chain);
    X509* leaf = PEM_read_bio_X509(chain.get(), nullptr, nullptr, nullptr);
    if (leaf == nullptr || SSL_CTX_use_certificate(ctx.get(), leaf) != 1) {
      if (leaf != nullptr) X509_free(leaf);
      return absl::InvalidArgumentError(
          "SslCredentialsOptions.pem_cert_chain holds no usable PEM certificate");
    }
    X509_free(leaf);
    while (X509* extra = PEM_read_bio_X509(chain.get(), nullptr, nullptr, nullptr)) {
      SSL_CTX_add_extra_chain_cert(ctx.get(), extra);  // takes it
    }
    ERR_clear_error();
    BioPtr key_bio = MemBio(pem.private_key);
    EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr);
    if (key == nullptr) {
      return absl::InvalidArgumentError(
          "SslCredentialsOptions.pem_private_key holds no PEM private key");
    }
    bool used = SSL_CTX_use_PrivateKey(ctx.get(), key) == 1;
    EVP_PKEY_free(key);
    if (!used || SSL_CTX_check_private_key(ctx.get()) != 1) {
      return absl::InvalidArgumentError(
          "SslCredentialsOptions.pem_private_key does not match pem_cert_chain");
    }
  }
  auto config = std::make_shared<TlsConfig>();
  if (session_cache > 0) {
    // Client sessions go to the channel's cache (OpenSSL keeps none).
    SSL_CTX_set_session_cache_mode(ctx.get(),
                                   SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx.get(), &TlsSession::OnNewSession);
    config->sessions = std::make_shared<TlsSessionCache>(session_cache);
  }
  config->ctx = std::move(ctx);
  config->server_name = std::move(server_name);
  return std::shared_ptr<const TlsConfig>(std::move(config));
}

absl::StatusOr<std::unique_ptr<TlsSession>> TlsSession::New(const TlsConfig& config,
                                                            std::string_view session_key) {
  ERR_clear_error();
  std::unique_ptr<TlsSession> s(new TlsSession());
  s->ssl_ = SSL_new(config.ctx.get());
  if (s->ssl_ == nullptr) return absl::InternalError("SSL_new: " + LastError());
  if (config.sessions != nullptr) {
    s->cache_ = config.sessions;
    s->key_ = std::string(session_key);
    SSL_set_ex_data(s->ssl_, SessionIndex(), s.get());
    if (SSL_SESSION* cached = s->cache_->Get(s->key_)) {
      SSL_set_session(s->ssl_, cached);  // takes a reference of its own
      SSL_SESSION_free(cached);
    }
  }
  s->rbio_ = BIO_new(BIO_s_mem());
  s->wbio_ = BIO_new(BIO_s_mem());
  SSL_set_bio(s->ssl_, s->rbio_, s->wbio_);
  SSL_set_connect_state(s->ssl_);
  X509_VERIFY_PARAM* param = SSL_get0_param(s->ssl_);
  if (IsIpAddress(config.server_name)) {
    X509_VERIFY_PARAM_set1_ip_asc(param, config.server_name.c_str());
  } else if (!config.server_name.empty()) {
    SSL_set_tlsext_host_name(s->ssl_, config.server_name.c_str());
    X509_VERIFY_PARAM_set1_host(param, config.server_name.c_str(), 0);
  }
  return s;
}

TlsSession::~TlsSession() {
  if (ssl_ != nullptr) SSL_free(ssl_);  // frees both BIOs
}

absl::Status TlsSession::Error(const char* what, int rv) const {
  long verify = SSL_get_verify_result(ssl_);
  if (verify != X509_V_OK) {
    return absl::UnavailableError(
        absl::StrCat("TLS: the server's certificate failed verification: ",
                     X509_verify_cert_error_string(verify)));
  }
  int e = SSL_get_error(ssl_, rv);
  std::string why = e == SSL_ERROR_SSL ? LastError() : absl::StrCat("SSL error ", e);
  return absl::UnavailableError(absl::StrCat("TLS ", what, " failed: ", why));
}

absl::StatusOr<bool> TlsSession::Handshake() {
  ERR_clear_error();
  int rv = SSL_do_handshake(ssl_);
  if (rv == 1) {
    if (cache_ != nullptr) cache_->CountHandshake(resumed());
    return true;
  }
  int e = SSL_get_error(ssl_, rv);
  if (e == SSL_ERROR_WANT_READ) return false;
  return Error("handshake", rv);
}

bool TlsSession::resumed() const { return SSL_session_reused(ssl_) == 1; }

std::string TlsSession::alpn() const {
  const unsigned char* p = nullptr;
  unsigned int n = 0;
  SSL_get0_alpn_selected(ssl_, &p, &n);
  return p == nullptr ? "" : std::string(reinterpret_cast<const char*>(p), n);
}

void TlsSession::FeedCiphertext(const uint8_t* data, size_t n) {
  BIO_write(rbio_, data, static_cast<int>(n));  // a memory BIO takes it all
}

absl::Status TlsSession::ReadPlaintext(uint8_t* buf, size_t cap, size_t* n, bool* closed) {
  *n = 0;
  while (*n < cap) {
    ERR_clear_error();
    // Straight into the caller's buffer (a receive block): no copy after
    // decryption.
    int rv = SSL_read(ssl_, buf + *n, static_cast<int>(std::min<size_t>(cap - *n, INT_MAX)));
    if (rv > 0) {
      *n += static_cast<size_t>(rv);
      continue;
    }
    int e = SSL_get_error(ssl_, rv);
    if (e == SSL_ERROR_WANT_READ) return absl::OkStatus();
    if (e == SSL_ERROR_ZERO_RETURN) {
      *closed = true;
      return absl::OkStatus();
    }
    return Error("read", rv);
  }
  return absl::OkStatus();
}

absl::Status TlsSession::WritePlaintext(const uint8_t* data, size_t n) {
  ERR_clear_error();
  size_t off = 0;
  while (off < n) {
    int rv = SSL_write(ssl_, data + off, static_cast<int>(n - off));
    if (rv <= 0) return Error("write", rv);
    off += rv;
  }
  return absl::OkStatus();
}

void TlsSession::TakeCiphertext(std::vector<uint8_t>* out) {
  size_t pending = BIO_ctrl_pending(wbio_);
  if (pending == 0) return;
  size_t at = out->size();
  out->resize(at + pending);
  int n = BIO_read(wbio_, out->data() + at, static_cast<int>(pending));
  out->resize(at + (n > 0 ? n : 0));
}

bool TlsSession::has_ciphertext() const { return BIO_ctrl_pending(wbio_) > 0; }

}  // namespace ringrpc::transport
