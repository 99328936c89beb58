// ringrpc/client/transport/tls.h — TLS for a connection, over OpenSSL with memory
// BIOs: the connection's loop does the socket I/O (io_uring or epoll), the
// session only turns ciphertext into plaintext and back.
//
// Threading: TlsConfig is immutable and shared by every connection of a
// channel (any thread); so is its TlsSessionCache (a mutex). A TlsSession
// belongs to one connection (its loop's thread).
//
//   auto config = MakeTlsConfig({.root_certs = ca_pem}, "server.example");
//   auto session = TlsSession::New(**config, "10.0.0.2:443");
//   // handshake: Handshake(), send TakeCiphertext(), FeedCiphertext(recv)...
#ifndef RINGRPC_CLIENT_TRANSPORT_TLS_H_
#define RINGRPC_CLIENT_TRANSPORT_TLS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ringrpc/base/mutex.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;
typedef struct bio_st BIO;
typedef struct ssl_session_st SSL_SESSION;

namespace ringrpc::transport {

struct TlsPem {
  std::string root_certs;   // empty: the system's roots
  std::string private_key;  // with cert_chain: a client certificate (mutual TLS)
  std::string cert_chain;
};

// The sessions servers gave a channel's connections (a TLS 1.3 ticket, a
// TLS 1.2 ticket or session id), the latest per dialled address: the
// channel's next dial there, from any CQ thread, offers it and is a
// resumption (no certificate sent or checked, no signature) when the
// server takes it back, a full handshake when it does not. At most
// `capacity` addresses, the least recently stored going first.
class TlsSessionCache {
 public:
  explicit TlsSessionCache(size_t capacity) : capacity_(capacity) {}
  ~TlsSessionCache();
  TlsSessionCache(const TlsSessionCache&) = delete;
  TlsSessionCache& operator=(const TlsSessionCache&) = delete;

  // A reference of the caller's own (SSL_SESSION_free it), or null.
  SSL_SESSION* Get(std::string_view key);
  // Takes `session` (a reference the caller owned).
  void Put(std::string_view key, SSL_SESSION* session);
  // Handshakes completed: resumed or full.
  void CountHandshake(bool resumed) {
    (resumed ? resumed_ : full_).fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t resumed() const { return resumed_.load(std::memory_order_relaxed); }
  uint64_t full() const { return full_.load(std::memory_order_relaxed); }

 private:
  const size_t capacity_;
  Mutex mu_;
  std::vector<std::pair<std::string, SSL_SESSION*>> sessions_ ABSL_GUARDED_BY(mu_);  // oldest first
  std::atomic<uint64_t> resumed_{0};
  std::atomic<uint64_t> full_{0};
};

// What every TLS connection of a channel shares.
struct TlsConfig {
  std::shared_ptr<SSL_CTX> ctx;  // verify peer, TLS >= 1.2, ALPN h2, roots, client cert
  // Sent as SNI (unless an IP address) and checked against the server's
  // certificate (an IP address against its IP SANs).
  std::string server_name;
  // Null: every dial a full handshake.
  std::shared_ptr<TlsSessionCache> sessions;
};

// INVALID_ARGUMENT naming the field for PEM that does not parse, a key
// without a chain (or the reverse), or a key that does not match.
// `session_cache`: how many addresses' sessions the channel keeps for
// resumption (0: none).
absl::StatusOr<std::shared_ptr<const TlsConfig>> MakeTlsConfig(const TlsPem& pem,
                                                               std::string server_name,
                                                               size_t session_cache = 64);

class TlsSession {
 public:
  // `session_key`: what the config's session cache files this
  // connection's sessions under (the address dialled).
  static absl::StatusOr<std::unique_ptr<TlsSession>> New(const TlsConfig& config,
                                                         std::string_view session_key = {});
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // Advances the handshake with what was fed: true when it is complete;
  // UNAVAILABLE saying why it failed (certificate verification names the
  // reason). Send TakeCiphertext() after each call, whatever it returned.
  absl::StatusOr<bool> Handshake();
  // The protocol the server chose by ALPN ("h2"), after the handshake.
  std::string alpn() const;
  // The handshake resumed a session from the cache (after it completed).
  bool resumed() const;

  void FeedCiphertext(const uint8_t* data, size_t n);
  // Decrypts what was fed into `buf` (up to `cap` bytes; `*n` says how
  // many): fewer than `cap` means all of it is out. UNAVAILABLE on a TLS
  // error; `closed` is set when the server sent close_notify.
  absl::Status ReadPlaintext(uint8_t* buf, size_t cap, size_t* n, bool* closed);
  absl::Status WritePlaintext(const uint8_t* data, size_t n);
  // Appends the ciphertext waiting to be sent.
  void TakeCiphertext(std::vector<uint8_t>* out);
  bool has_ciphertext() const;

 private:
  TlsSession() = default;
  absl::Status Error(const char* what, int rv) const;
  // OpenSSL's new-session callback: files it under the session's key.
  static int OnNewSession(SSL* ssl, SSL_SESSION* session);
  friend absl::StatusOr<std::shared_ptr<const TlsConfig>> MakeTlsConfig(const TlsPem&, std::string,
                                                                        size_t);

  std::shared_ptr<TlsSessionCache> cache_;  // null: none
  std::string key_;
  SSL* ssl_ = nullptr;
  BIO* rbio_ = nullptr;  // owned by ssl_
  BIO* wbio_ = nullptr;  // owned by ssl_
};

}  // namespace ringrpc::transport

#endif  // RINGRPC_CLIENT_TRANSPORT_TLS_H_
