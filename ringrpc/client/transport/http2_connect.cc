// Establishing a connection: dial, TLS handshake, the server's SETTINGS
// (Connect), or taking over a connected socket (Adopt). Part of
// Http2Connection (http2_connection.h).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "ringrpc/client/transport/http2_connection.h"
#include "ringrpc/client/transport/internal/ms.h"

namespace ringrpc::transport {
namespace {

// The socket's options before its connect: TCP_NODELAY, TCP_USER_TIMEOUT
// (if set), then the channel's SocketMutator (if any).
absl::Status PrepareSocket(int fd, const Address& address, const ConnectionOptions& options,
                           const std::string& dialled, const std::string& dial_name) {
  if (address.family() != AF_UNIX) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (options.tcp_user_timeout) {
      const unsigned ms = unsigned(options.tcp_user_timeout->count());
      if (::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms) != 0) {
        return absl::UnavailableError(
            absl::StrCat("setting TCP_USER_TIMEOUT for ", dial_name, ": ", std::strerror(errno)));
      }
    }
  }
  if (options.socket_mutator != nullptr &&
      !options.socket_mutator->Mutate(
          SocketInfo{.fd = fd, .family = address.family(), .address = dialled})) {
    return absl::UnavailableError(
        absl::StrCat("the channel's socket mutator refused the socket for ", dial_name));
  }
  return absl::OkStatus();
}

// LocalCredentials' check of a connected socket's own end (as grpc++'s:
// the local address, not the one dialled): OK, or why not.
absl::Status CheckLocality(int fd, ConnectionOptions::Locality want, const std::string& dialled) {
  using L = ConnectionOptions::Locality;
  if (want == L::kAny) return absl::OkStatus();
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) {
    return absl::UnavailableError(
        absl::StrCat("getsockname for ", dialled, ": ", std::strerror(errno)));
  }
  bool ok = false;
  if (want == L::kUnixSocket) {
    ok = local.ss_family == AF_UNIX;
  } else if (local.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&local);
    ok = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  } else if (local.ss_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(&local)->sin6_addr;
    ok = IN6_IS_ADDR_LOOPBACK(&a) || (IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127);
  }
  if (ok) return absl::OkStatus();
  // Not a passing failure: the channel's credentials rule the address out.
  return absl::FailedPreconditionError(
      absl::StrCat("LocalCredentials(", want == L::kUnixSocket ? "UDS" : "LOCAL_TCP", ") refuse ",
                   dialled, ": the connection is not ",
                   want == L::kUnixSocket ? "over a unix socket" : "from a loopback address"));
}

}  // namespace

// After the dial: the proxy's CONNECT tunnel, then the TLS handshake,
// each within what is left of the connect timeout. The TLS session (null
// without TLS), or why the connection cannot go on.
Task<absl::StatusOr<std::unique_ptr<TlsSession>>> Http2Connection::Handshake(
    EventLoop& loop, int fd, const ConnectionOptions& options, const std::string& dialled,
    const std::string& where, TimePoint start) {
  if (!options.http_connect_target.empty()) {
    Duration left = options.connect_timeout - (loop.Now() - start);
    std::optional<absl::Status> tunnel = co_await runtime::WithTimeout<absl::Status>(
        loop, HttpConnect(loop, fd, options, dialled),
        std::max(left, Duration(std::chrono::milliseconds(1))));
    if (!tunnel) {
      co_return absl::UnavailableError(
          absl::StrCat("HTTP proxy ", dialled, " did not answer CONNECT ",
                       options.http_connect_target, " within ", Ms(options.connect_timeout)));
    }
    if (!tunnel->ok()) co_return *tunnel;
  }
  if (options.tls) {
    // Sessions are filed under the server (past a proxy: the target).
    absl::StatusOr<std::unique_ptr<TlsSession>> session = TlsSession::New(*options.tls, where);
    if (!session.ok()) co_return session.status();
    Duration left = options.connect_timeout - (loop.Now() - start);
    std::optional<absl::Status> shaken = co_await runtime::WithTimeout<absl::Status>(
        loop, TlsHandshake(loop, fd, session->get(), where),
        std::max(left, Duration(std::chrono::milliseconds(1))));
    if (!shaken) {
      co_return absl::UnavailableError(absl::StrCat(
          "TLS handshake with ", where, " timed out after ", Ms(options.connect_timeout)));
    }
    if (!shaken->ok()) co_return *shaken;
    co_return std::move(*session);
  }
  co_return std::unique_ptr<TlsSession>();
}

Task<absl::StatusOr<std::shared_ptr<Http2Connection>>> Http2Connection::Connect(
    EventLoop& loop, Address address, ConnectionOptions options) {
  const TimePoint start = loop.Now();
  const std::string dialled = address.ToString();
  // What messages name past the tunnel: the server, and the proxy between.
  const std::string where =
      options.http_connect_target.empty()
          ? dialled
          : absl::StrCat(options.http_connect_target, " via HTTP proxy ", dialled);
  const std::string dial_name =
      options.http_connect_target.empty() ? dialled : absl::StrCat("HTTP proxy ", dialled);
  int fd = ::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    co_return absl::UnavailableError(
        absl::StrCat("socket for ", dial_name, ": ", std::strerror(errno)));
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
  if (absl::Status set = PrepareSocket(fd, address, options, dialled, dial_name); !set.ok()) {
    co_return set;
  }
  auto dial = [](EventLoop& loop, int fd, Address a) -> Task<int> {
    runtime::IoResult r = co_await loop.Connect(fd, a.sockaddr_ptr(), a.len);
    co_return r.res;
  };
  std::optional<int> res =
      co_await runtime::WithTimeout<int>(loop, dial(loop, fd, address), options.connect_timeout);
  if (!res || *res < 0) {
    co_return absl::UnavailableError(
        !res ? absl::StrCat("connect to ", dial_name, " timed out after ",
                            Ms(options.connect_timeout))
             : absl::StrCat("connect to ", dial_name, ": ", std::strerror(-*res)));
  }
  if (absl::Status local = CheckLocality(fd, options.locality, dialled); !local.ok()) {
    co_return local;
  }
  absl::StatusOr<std::unique_ptr<TlsSession>> tls =
      co_await Handshake(loop, fd, options, dialled, where, start);
  if (!tls.ok()) co_return tls.status();
  guard.fd = -1;  // Adopt owns it from here, even when it fails
  absl::StatusOr<std::shared_ptr<Http2Connection>> adopted =
      Adopt(loop, fd, address, std::move(options), std::move(*tls));
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
    absl::Status s = absl::UnavailableError(
        absl::StrCat("no HTTP/2 SETTINGS from ", where, " within ",
                     Ms(conn->options_.connect_timeout), " (is it an HTTP/2 server?)"));
    conn->Close(s);
    co_return s;
  }
  conn->StartKeepalive();
  co_return conn;
}

Task<absl::Status> Http2Connection::HttpConnect(EventLoop& loop, int fd,
                                                const ConnectionOptions& options,
                                                std::string where) {
  const std::string& target = options.http_connect_target;
  std::string request = absl::StrCat("CONNECT ", target, " HTTP/1.1\r\nHost: ", target, "\r\n");
  if (!options.http_connect_authorization.empty()) {
    absl::StrAppend(&request, "Proxy-Authorization: ", options.http_connect_authorization, "\r\n");
  }
  absl::StrAppend(&request, "\r\n");
  std::vector<uint8_t> out(request.begin(), request.end());
  for (size_t off = 0; off < out.size();) {
    runtime::IoResult r = co_await loop.Send(fd, std::move(out), off);
    out = std::move(r.buf);
    if (r.res < 0) {
      co_return absl::UnavailableError(
          absl::StrCat("HTTP proxy ", where, ": send: ", std::strerror(-r.res)));
    }
    off += r.res;
  }
  // The answer's header, and not one byte more: peek, then take exactly
  // up to the blank line.
  constexpr size_t kMaxHeader = 8 << 10;
  std::string head;
  char buf[2048];
  size_t end = std::string::npos;
  while (end == std::string::npos) {
    runtime::IoResult ready = co_await loop.PollIn(fd);
    if (ready.res < 0) {
      co_return absl::UnavailableError(
          absl::StrCat("HTTP proxy ", where, ": poll: ", std::strerror(-ready.res)));
    }
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_PEEK);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) {
      co_return absl::UnavailableError(absl::StrCat(
          "HTTP proxy ", where, " closed the connection before answering CONNECT ", target));
    }
    const size_t before = head.size();
    head.append(buf, n);
    end = head.find("\r\n\r\n", before >= 3 ? before - 3 : 0);
    size_t take = end == std::string::npos ? size_t(n) : end + 4 - before;
    head.resize(before + take);
    if (::recv(fd, buf, take, 0) != ssize_t(take)) {
      co_return absl::UnavailableError(absl::StrCat("HTTP proxy ", where, ": short read"));
    }
    if (end == std::string::npos && head.size() > kMaxHeader) {
      co_return absl::UnavailableError(
          absl::StrCat("HTTP proxy ", where, ": its answer to CONNECT has no end of header in ",
                       kMaxHeader, " bytes"));
    }
  }
  // "HTTP/1.x 200 ..." (any 2xx) opens the tunnel.
  std::string status_line = head.substr(0, head.find("\r\n"));
  const bool ok = status_line.size() >= 12 && status_line.rfind("HTTP/1.", 0) == 0 &&
                  status_line[8] == ' ' && status_line[9] == '2';
  if (!ok) {
    co_return absl::UnavailableError(absl::StrCat("HTTP proxy ", where, " refused CONNECT ", target,
                                                  ": ", absl::CHexEscape(status_line)));
  }
  co_return absl::OkStatus();
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
  std::shared_ptr<Http2Connection> conn(new Http2Connection(loop, address, std::move(options), fd));
  conn->tls_ = std::move(tls);
  if (absl::Status s = conn->InitSession(); !s.ok()) return s;
  conn->Start();
  return conn;
}

}  // namespace ringrpc::transport
