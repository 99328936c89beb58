// ringrpc/client/transport/tls.h — TLS for a connection, over OpenSSL with memory
// BIOs: the connection's loop does the socket I/O (io_uring or epoll), the
// session only turns ciphertext into plaintext and back.
//
// Threading: TlsConfig is immutable and shared by every connection of a
// channel (any thread). A TlsSession belongs to one connection (its loop's
// thread).
//
//   auto config = MakeTlsConfig({.root_certs = ca_pem}, "server.example");
//   auto session = TlsSession::New(**config);
//   // handshake: Handshake(), send TakeCiphertext(), FeedCiphertext(recv)...
#ifndef RINGRPC_CLIENT_TRANSPORT_TLS_H_
#define RINGRPC_CLIENT_TRANSPORT_TLS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;
typedef struct bio_st BIO;

namespace ringrpc::transport {

struct TlsPem {
  std::string root_certs;   // empty: the system's roots
  std::string private_key;  // with cert_chain: a client certificate (mutual TLS)
  std::string cert_chain;
};

// What every TLS connection of a channel shares.
struct TlsConfig {
  std::shared_ptr<SSL_CTX> ctx;  // verify peer, TLS >= 1.2, ALPN h2, roots, client cert
  // Sent as SNI (unless an IP address) and checked against the server's
  // certificate (an IP address against its IP SANs).
  std::string server_name;
};

// INVALID_ARGUMENT naming the field for PEM that does not parse, a key
// without a chain (or the reverse), or a key that does not match.
absl::StatusOr<std::shared_ptr<const TlsConfig>> MakeTlsConfig(const TlsPem& pem,
                                                               std::string server_name);

class TlsSession {
 public:
  static absl::StatusOr<std::unique_ptr<TlsSession>> New(const TlsConfig& config);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // Advances the handshake with what was fed: true when it is complete;
  // UNAVAILABLE saying why it failed (certificate verification names the
  // reason). Send TakeCiphertext() after each call, whatever it returned.
  absl::StatusOr<bool> Handshake();
  // The protocol the server chose by ALPN ("h2"), after the handshake.
  std::string alpn() const;

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

  SSL* ssl_ = nullptr;
  BIO* rbio_ = nullptr;  // owned by ssl_
  BIO* wbio_ = nullptr;  // owned by ssl_
};

}  // namespace ringrpc::transport

#endif  // RINGRPC_CLIENT_TRANSPORT_TLS_H_
