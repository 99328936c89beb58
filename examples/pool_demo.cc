// pool_demo: ringrpc's pool on real loopback TCP sockets.
//
// Starts an echo server on 127.0.0.1 (an ephemeral port), then runs worker
// threads that each check connections out of one shared Pool, echo a
// message over them, and return them. Idle connections move between the
// threads through the lock-free reservoir; halfway through, Invalidate()
// retires every connection made so far. Prints the pool's metrics and
// exits 0 when the conservation identity holds.
//
// This is the repository's main program until the gRPC client exists.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ringrpc/pool/pool.h"
#include "ringrpc/pool/reservoir.h"

namespace {

using ringrpc::Task;
using ringrpc::pool::Lease;
using ringrpc::pool::Pool;
using ringrpc::pool::PoolConfig;
using ringrpc::pool::PoolMetrics;
using ringrpc::pool::Reservoir;
using ringrpc::pool::ThreadContext;

// An owned socket.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  void Reset() {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  }

 private:
  int fd_ = -1;
};

// Dials the echo server. Blocking connect: fine for a demo; ringrpc/client/runtime
// dials on io_uring.
struct TcpManager {
  using Connection = Fd;
  using Detached = Fd;  // a plain socket has no ring to leave

  explicit TcpManager(uint16_t port) : port(port) {}

  Task<absl::StatusOr<Fd>> Connect() {
    Fd fd(::socket(AF_INET, SOCK_STREAM, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd.get() < 0 || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      co_return absl::UnavailableError(
          absl::StrCat("connect 127.0.0.1:", port, ": ", std::strerror(errno)));
    }
    int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    co_return fd;
  }
  void Disconnect(Fd&& fd) { fd.Reset(); }
  absl::StatusOr<Fd> Detach(Fd&& fd) { return std::move(fd); }
  Task<absl::StatusOr<Fd>> Attach(Fd&& fd) { co_return std::move(fd); }

  uint16_t port;
};

// Echo server: one thread per connection, until the listener closes.
class EchoServer {
 public:
  EchoServer() {
    listener_ = Fd(::socket(AF_INET, SOCK_STREAM, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(listener_.get(), 128);
    socklen_t len = sizeof addr;
    ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] {
      for (;;) {
        int c = ::accept(listener_.get(), nullptr, nullptr);
        if (c < 0) return;
        handlers_.emplace_back([c] {
          char buf[256];
          for (ssize_t n; (n = ::read(c, buf, sizeof buf)) > 0;) {
            if (::write(c, buf, n) != n) break;
          }
          ::close(c);
        });
      }
    });
  }
  ~EchoServer() {
    ::shutdown(listener_.get(), SHUT_RDWR);
    acceptor_.join();
    for (auto& h : handlers_) h.join();
  }
  uint16_t port() const { return port_; }

 private:
  Fd listener_;
  uint16_t port_ = 0;
  std::thread acceptor_;
  std::vector<std::thread> handlers_;
};

bool Echo(const Fd& fd, const std::string& msg) {
  if (::write(fd.get(), msg.data(), msg.size()) != ssize_t(msg.size())) return false;
  std::string got(msg.size(), '\0');
  size_t have = 0;
  while (have < got.size()) {
    ssize_t n = ::read(fd.get(), got.data() + have, got.size() - have);
    if (n <= 0) return false;
    have += n;
  }
  return got == msg;
}

Task<absl::StatusOr<Lease<TcpManager>>> AcquireTask(Pool<TcpManager> pool) {
  co_return co_await pool.Acquire();
}

}  // namespace

int main() {
  constexpr int kThreads = 4;
  constexpr int kCallsPerThread = 500;
  EchoServer server;

  PoolConfig config;
  config.max_size = 2;  // per thread
  auto reservoir = std::make_shared<Reservoir<Fd>>(4);
  auto pool =
      Pool<TcpManager>::Create(config, std::make_shared<TcpManager>(server.port()), reservoir);
  if (!pool.ok()) {
    std::fprintf(stderr, "pool: %s\n", pool.status().ToString().c_str());
    return 1;
  }

  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      auto ctx = std::make_unique<ThreadContext>();
      ThreadContext::Scope scope(ctx.get());
      for (int i = 0; i < kCallsPerThread; ++i) {
        if (t == 0 && i == kCallsPerThread / 2) pool->Invalidate();
        Task<absl::StatusOr<Lease<TcpManager>>> op = AcquireTask(*pool);
        op.handle().resume();  // completes at once: dials are blocking here
        absl::StatusOr<Lease<TcpManager>>& lease = op.result();
        if (!lease.ok()) {
          std::fprintf(stderr, "acquire: %s\n", lease.status().ToString().c_str());
          failed.fetch_add(1);
          continue;
        }
        if (Echo(**lease, absl::StrCat("thread ", t, " call ", i))) {
          ok.fetch_add(1);
        } else {
          lease->Poison();
          failed.fetch_add(1);
        }
      }
      ctx.reset();  // the thread's shard closes its connections
    });
  }
  for (auto& w : workers) w.join();

  PoolMetrics before_close = pool->Metrics();
  pool->Close();
  PoolMetrics m = pool->Metrics();
  std::printf("pool_demo: %d threads x %d echo calls over loopback TCP on 127.0.0.1:%u\n", kThreads,
              kCallsPerThread, server.port());
  std::printf("  calls ok %d, failed %d\n", ok.load(), failed.load());
  std::printf("  before close: %s\n", before_close.ToString().c_str());
  std::printf("  after close:  %s\n", m.ToString().c_str());
  std::printf("  connections dialled %llu for %llu leases; %llu moved between threads\n",
              (unsigned long long)m.created, (unsigned long long)m.acquires,
              (unsigned long long)m.unparked);
  bool conserved = m.Conserved() && m.live == 0 && m.parked == 0;
  std::printf("  conservation created == closed + live + parked + taken + cleared: %s\n",
              conserved ? "holds" : "BROKEN");
  return (conserved && failed.load() == 0) ? 0 : 1;
}
