// ringrpc/client/transport/testing/raw_server.h — a misbehaving HTTP/2 "server" for
// fault tests: on each connection it accepts on 127.0.0.1 it drains
// whatever the client sends and writes bytes the test scripts, built with the small
// frame encoder below (HPACK literals without indexing, so no state).
// Test-only.
#ifndef RINGRPC_CLIENT_TRANSPORT_TESTING_RAW_SERVER_H_
#define RINGRPC_CLIENT_TRANSPORT_TESTING_RAW_SERVER_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "tests/testing/loopback.h"

namespace ringrpc::transport::testing {

// ---- frame encoding ---------------------------------------------------------

inline std::string Frame(uint8_t type, uint8_t flags, uint32_t stream, std::string_view payload) {
  std::string f;
  uint32_t n = static_cast<uint32_t>(payload.size());
  f.push_back(char(n >> 16));
  f.push_back(char(n >> 8));
  f.push_back(char(n));
  f.push_back(char(type));
  f.push_back(char(flags));
  f.push_back(char((stream >> 24) & 0x7f));
  f.push_back(char(stream >> 16));
  f.push_back(char(stream >> 8));
  f.push_back(char(stream));
  f.append(payload);
  return f;
}

constexpr uint8_t kData = 0, kHeaders = 1, kRst = 3, kSettings = 4, kPing = 6, kGoaway = 7,
                  kWindowUpdate = 8, kContinuation = 9;
constexpr uint8_t kEndStream = 1, kAck = 1, kEndHeaders = 4;

inline void HpackInt(std::string& out, uint32_t v, uint8_t prefix_bits, uint8_t first) {
  uint32_t max = (1u << prefix_bits) - 1;
  if (v < max) {
    out.push_back(char(first | v));
    return;
  }
  out.push_back(char(first | max));
  v -= max;
  while (v >= 128) {
    out.push_back(char((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(char(v));
}

// A header block of literal fields without indexing (new names).
inline std::string HeaderBlock(const std::vector<std::pair<std::string, std::string>>& headers) {
  std::string b;
  for (const auto& [k, v] : headers) {
    b.push_back(0);
    HpackInt(b, k.size(), 7, 0);
    b += k;
    HpackInt(b, v.size(), 7, 0);
    b += v;
  }
  return b;
}

inline std::string Headers(uint32_t stream, bool end_stream,
                           const std::vector<std::pair<std::string, std::string>>& h) {
  return Frame(kHeaders, kEndHeaders | (end_stream ? kEndStream : 0), stream, HeaderBlock(h));
}

inline std::string ResponseHeaders(uint32_t stream) {
  return Headers(stream, false, {{":status", "200"}, {"content-type", "application/grpc"}});
}

inline std::string Trailers(uint32_t stream, std::string grpc_status, std::string message = "") {
  std::vector<std::pair<std::string, std::string>> h = {{"grpc-status", grpc_status}};
  if (!message.empty()) h.emplace_back("grpc-message", message);
  return Headers(stream, true, h);
}

// A gRPC message: flag byte, 4-byte length (as given), then the bytes.
inline std::string GrpcMessage(std::string_view body, uint8_t flag = 0,
                               int64_t claimed_length = -1) {
  uint32_t n = claimed_length < 0 ? uint32_t(body.size()) : uint32_t(claimed_length);
  std::string m;
  m.push_back(char(flag));
  m.push_back(char(n >> 24));
  m.push_back(char(n >> 16));
  m.push_back(char(n >> 8));
  m.push_back(char(n));
  m.append(body);
  return m;
}

inline std::string Data(uint32_t stream, std::string_view bytes, bool end_stream = false) {
  return Frame(kData, end_stream ? kEndStream : 0, stream, bytes);
}

inline std::string ServerSettings() { return Frame(kSettings, 0, 0, ""); }

// A connected, non-blocking socket to 127.0.0.1:`port` (-1 on failure),
// for Http2Connection::Adopt.
inline int ConnectNonBlocking(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

// ---- the server ---------------------------------------------------------------

class RawServer {
 public:
  // `script` is written after the client's first bytes arrive (so the
  // client's stream 1 exists); `delay_ms` later, `late` is written too.
  // `reset`: then the connection is reset (RST), not kept open.
  explicit RawServer(std::string script, std::string late = "", int delay_ms = 0,
                     bool reset = false)
      : script_(std::move(script)), late_(std::move(late)), delay_ms_(delay_ms), reset_(reset) {
    sockaddr_in a{};
    listen_fd_ = ::ringrpc::testing::ListenLoopback(4, &a);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~RawServer() {
    stop_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    thread_.join();
    ::close(listen_fd_);
    // A script still being written to a client that stopped reading (its
    // loop no longer runs) would block its thread's send forever: shut the
    // sockets down first.
    for (auto& c : sockets_) {
      std::lock_guard<std::mutex> lock(c->mu);
      if (!c->closed) ::shutdown(c->fd, SHUT_RDWR);
    }
    for (std::thread& t : connections_) t.join();
  }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  size_t bytes_received() const { return received_.load(); }
  // Connections accepted so far; each plays the script.
  size_t accepts() const { return accepts_.load(); }

 private:
  void Serve() {
    for (;;) {
      int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      accepts_.fetch_add(1);
      auto socket = std::make_shared<Socket>();
      socket->fd = c;
      sockets_.push_back(socket);
      connections_.emplace_back([this, socket] {
        Play(socket->fd);
        std::lock_guard<std::mutex> lock(socket->mu);
        ::close(socket->fd);
        socket->closed = true;
      });
    }
  }
  // Plays the script on `c`; the caller closes it (the destructor may shut
  // it down meanwhile, never after).
  void Play(int c) {
    // Wait for the client's preface (and, usually, its first HEADERS).
    Drain(c, 200);
    WriteAll(c, script_);
    if (!late_.empty() || reset_) {
      Drain(c, delay_ms_);
      WriteAll(c, late_);
    }
    if (reset_) {  // linger 0: the close sends RST ("connection reset by peer")
      linger l{1, 0};
      ::setsockopt(c, SOL_SOCKET, SO_LINGER, &l, sizeof l);
      return;
    }
    while (!stop_ && Drain(c, 50)) {
    }
  }
  // Reads what arrives for up to `ms`. False once the client closed.
  bool Drain(int c, int ms) {
    char buf[65536];
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 10) <= 0) continue;
      ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return false;
      received_ += n;
    }
    return true;
  }
  static void WriteAll(int c, const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = ::send(c, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += n;
    }
  }

  std::string script_, late_;
  int delay_ms_;
  bool reset_;
  int listen_fd_;
  int port_ = 0;
  std::thread thread_;
  struct Socket {
    std::mutex mu;
    int fd = -1;
    bool closed = false;  // under mu
  };
  std::vector<std::shared_ptr<Socket>> sockets_;  // the accept thread's, then the destructor's
  std::vector<std::thread> connections_;          // the accept thread's only
  std::atomic<bool> stop_{false};
  std::atomic<size_t> accepts_{0};
  std::atomic<size_t> received_{0};
};

// A server that takes each call's stream and then refuses it unprocessed
// (GOAWAY, last stream id 0): every call on it is "never sent".
inline std::unique_ptr<RawServer> RefusingServer() {
  return std::make_unique<RawServer>(ServerSettings(), Frame(kGoaway, 0, 0, std::string(8, '\0')),
                                     150);
}

}  // namespace ringrpc::transport::testing

#endif  // RINGRPC_CLIENT_TRANSPORT_TESTING_RAW_SERVER_H_
