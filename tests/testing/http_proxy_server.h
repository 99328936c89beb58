// tests/testing/http_proxy_server.h — a real HTTP CONNECT proxy for tests:
// Debian's tinyproxy, started on a free port of 127.0.0.1 with the basic
// credentials and CONNECT ports the test asks for, stopped by PID when
// destroyed. Its log tells which tunnels were asked for. Test-only.
//
//   auto proxy = HttpProxyServer::Start({.user = "alice", .password = "s3cret"});
//   args.SetString("grpc.http_proxy", "http://alice:s3cret@" + (*proxy)->address());
#ifndef RINGRPC_TESTS_TESTING_HTTP_PROXY_SERVER_H_
#define RINGRPC_TESTS_TESTING_HTTP_PROXY_SERVER_H_

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "tests/testing/daemon.h"
#include "tests/testing/loopback.h"

namespace ringrpc::testing {

inline constexpr const char* kTinyproxy = "/usr/bin/tinyproxy";

class HttpProxyServer {
 public:
  struct Options {
    std::string user, password;      // set: Proxy-Authorization required
    std::vector<int> connect_ports;  // empty: CONNECT to any port
  };

  static absl::StatusOr<std::unique_ptr<HttpProxyServer>> Start(Options o) {
    if (::access(kTinyproxy, X_OK) != 0) {
      return absl::FailedPreconditionError(
          "tinyproxy is not installed (tools/install-deps.sh installs tinyproxy-bin)");
    }
    std::unique_ptr<HttpProxyServer> s(new HttpProxyServer());
    for (int tries = 0; tries < 5; ++tries) {
      const int port = UnusedLoopbackPort();
      const std::string conf = s->daemon_.dir() + "/tinyproxy.conf";
      {
        std::ofstream f(conf);
        f << "Port " << port << "\nListen 127.0.0.1\nTimeout 60\nMaxClients 200\n"
          << "LogLevel Connect\nAllow 127.0.0.1\n";
        if (!o.user.empty()) f << "BasicAuth " << o.user << " " << o.password << "\n";
        for (int p : o.connect_ports) f << "ConnectPort " << p << "\n";
      }
      if (absl::Status st = s->daemon_.Spawn({kTinyproxy, "-d", "-c", conf}); !st.ok()) return st;
      s->port_ = port;
      for (int i = 0; i < 100; ++i) {  // up once it accepts
        if (Accepts(port)) return s;
        if (s->daemon_.Exited()) break;  // the port was taken: again
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      s->daemon_.Stop();
    }
    return absl::InternalError("tinyproxy did not start; its log: " + s->daemon_.Log());
  }

  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  // How many CONNECT requests it has had for `target` ("host:port").
  int Connects(const std::string& target) const {
    return daemon_.CountLines("): CONNECT " + target + " ");
  }
  std::string Log() const { return daemon_.Log(); }

 private:
  HttpProxyServer() : daemon_("proxy") {}

  static bool Accepts(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
  }

  Daemon daemon_;
  int port_ = 0;
};

}  // namespace ringrpc::testing

#endif  // RINGRPC_TESTS_TESTING_HTTP_PROXY_SERVER_H_
