// Establishing a connection: dial, TLS handshake, the server's SETTINGS
// (Connect), or taking over a connected socket (Adopt). Part of
// Http2Connection (http2_connection.h).
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "client/transport/http2_connection.h"
#include "client/transport/internal/ms.h"

namespace ringrpc::transport {

Task<absl::StatusOr<std::shared_ptr<Http2Connection>>> Http2Connection::Connect(
    EventLoop& loop, Address address, ConnectionOptions options) {
  const TimePoint start = loop.Now();
  const std::string where = address.ToString();
  int fd = ::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    co_return absl::UnavailableError(
        absl::StrCat("socket for ", where, ": ", std::strerror(errno)));
  }
  if (address.family() != AF_UNIX) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  // The socket is this frame's until Adopt takes it: a caller that gives
  // up (its deadline) destroys the frame mid-connect, and the socket must
  // close with it (the fault suite found one left ESTABLISHED).
  struct SocketGuard {
    EventLoop& loop;
    int fd;
    ~SocketGuard() {
      if (fd >= 0) loop.Close(fd);
    }
  } guard{loop, fd};
  auto dial = [](EventLoop& loop, int fd, Address a) -> Task<int> {
    runtime::IoResult r = co_await loop.Connect(fd, a.sockaddr_ptr(), a.len);
    co_return r.res;
  };
  std::optional<int> res = co_await runtime::WithTimeout<int>(
      loop, dial(loop, fd, address), options.connect_timeout);
  if (!res || *res < 0) {
    co_return absl::UnavailableError(
        !res ? absl::StrCat("connect to ", where, " timed out after ",
                            Ms(options.connect_timeout))
             : absl::StrCat("connect to ", where, ": ", std::strerror(-*res)));
  }
  std::unique_ptr<TlsSession> tls;
  if (options.tls) {
    absl::StatusOr<std::unique_ptr<TlsSession>> session = TlsSession::New(*options.tls);
    if (!session.ok()) co_return session.status();
    Duration left = options.connect_timeout - (loop.Now() - start);
    std::optional<absl::Status> shaken = co_await runtime::WithTimeout<absl::Status>(
        loop, TlsHandshake(loop, fd, session->get(), where),
        std::max(left, Duration(std::chrono::milliseconds(1))));
    if (!shaken) {
      co_return absl::UnavailableError(absl::StrCat("TLS handshake with ", where,
                                                    " timed out after ",
                                                    Ms(options.connect_timeout)));
    }
    if (!shaken->ok()) co_return *shaken;
    tls = std::move(*session);
  }
  guard.fd = -1;  // Adopt owns it from here, even when it fails
  absl::StatusOr<std::shared_ptr<Http2Connection>> adopted =
      Adopt(loop, fd, address, std::move(options), std::move(tls));
  if (!adopted.ok()) co_return adopted.status();
  std::shared_ptr<Http2Connection> conn = std::move(*adopted);

  // The server's SETTINGS prove it speaks HTTP/2 (and end the backoff,
  // gRPC's connection-backoff spec).
  auto settings = [](Http2Connection* c) -> Task<int> {
    while (!c->settings_received_ && c->closed_.ok()) co_await c->settings_event_->Wait();
    co_return 0;
  };
  Duration left = conn->options_.connect_timeout - (loop.Now() - start);
  std::optional<int> got = co_await runtime::WithTimeout<int>(
      loop, settings(conn.get()), std::max(left, Duration(std::chrono::milliseconds(1))));
  if (!conn->closed_.ok()) co_return conn->closed_;
  if (!got) {
    absl::Status s = absl::UnavailableError(absl::StrCat(
        "no HTTP/2 SETTINGS from ", where, " within ",
        Ms(conn->options_.connect_timeout), " (is it an HTTP/2 server?)"));
    conn->Close(s);
    co_return s;
  }
  conn->StartKeepalive();
  co_return conn;
}

Task<absl::Status> Http2Connection::TlsHandshake(EventLoop& loop, int fd, TlsSession* tls,
                                                 std::string where) {
  std::vector<uint8_t> in(16 << 10), out;
  for (;;) {
    absl::StatusOr<bool> done = tls->Handshake();
    out.clear();
    tls->TakeCiphertext(&out);  // a ClientHello, a Finished, or an alert
    for (size_t off = 0; off < out.size();) {
      runtime::IoResult r = co_await loop.Send(fd, std::move(out), off);
      out = std::move(r.buf);
      if (r.res < 0) {
        co_return absl::UnavailableError(
            absl::StrCat("TLS handshake with ", where, ": send: ", std::strerror(-r.res)));
      }
      off += r.res;
    }
    if (!done.ok()) {
      co_return absl::UnavailableError(absl::StrCat(done.status().message(), " (", where, ")"));
    }
    if (*done) break;
    runtime::IoResult r = co_await loop.Recv(fd, std::move(in));
    in = std::move(r.buf);
    if (r.res <= 0) {
      co_return absl::UnavailableError(absl::StrCat(
          "TLS handshake with ", where, ": the connection closed (is it a TLS server?)"));
    }
    tls->FeedCiphertext(in.data(), r.res);
  }
  if (tls->alpn() != "h2") {
    co_return absl::UnavailableError(absl::StrCat(
        "TLS server ", where, " did not choose HTTP/2 by ALPN (it chose \"", tls->alpn(), "\")"));
  }
  co_return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Http2Connection>> Http2Connection::Adopt(
    EventLoop& loop, int fd, Address address, ConnectionOptions options,
    std::unique_ptr<TlsSession> tls) {
  std::shared_ptr<Http2Connection> conn(
      new Http2Connection(loop, address, std::move(options), fd));
  conn->tls_ = std::move(tls);
  if (absl::Status s = conn->InitSession(); !s.ok()) return s;
  conn->Start();
  return conn;
}

}  // namespace ringrpc::transport
