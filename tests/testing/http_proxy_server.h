// tests/testing/http_proxy_server.h — a real HTTP CONNECT proxy for tests:
// Debian's tinyproxy, started on a free port of 127.0.0.1 with the basic
// credentials and CONNECT ports the test asks for, stopped by PID when
// destroyed. Its log tells which tunnels were asked for. Test-only.
//
//   auto proxy = HttpProxyServer::Start({.user = "alice", .password = "s3cret"});
//   args.SetString("grpc.http_proxy", "http://alice:s3cret@" + (*proxy)->address());
#ifndef RINGRPC_TESTS_TESTING_HTTP_PROXY_SERVER_H_
#define RINGRPC_TESTS_TESTING_HTTP_PROXY_SERVER_H_

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "tests/testing/loopback.h"

extern char** environ;

namespace ringrpc::testing {

inline constexpr const char* kTinyproxy = "/usr/bin/tinyproxy";

class HttpProxyServer {
 public:
  struct Options {
    std::string user, password;     // set: Proxy-Authorization required
    std::vector<int> connect_ports;  // empty: CONNECT to any port
  };

  static absl::StatusOr<std::unique_ptr<HttpProxyServer>> Start(Options o) {
    if (::access(kTinyproxy, X_OK) != 0) {
      return absl::FailedPreconditionError(
          "tinyproxy is not installed (tools/install-deps.sh installs tinyproxy-bin)");
    }
    const char* tmp = std::getenv("TEST_TMPDIR");
    static int serial = 0;
    std::string dir =
        absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/proxy.", ::getpid(), ".", ++serial);
    ::mkdir(dir.c_str(), 0755);
    std::unique_ptr<HttpProxyServer> s(new HttpProxyServer(dir));
    for (int tries = 0; tries < 5; ++tries) {
      const int port = UnusedLoopbackPort();
      const std::string conf = dir + "/tinyproxy.conf";
      {
        std::ofstream f(conf);
        f << "Port " << port << "\nListen 127.0.0.1\nTimeout 60\nMaxClients 200\n"
          << "LogLevel Connect\nAllow 127.0.0.1\n";
        if (!o.user.empty()) f << "BasicAuth " << o.user << " " << o.password << "\n";
        for (int p : o.connect_ports) f << "ConnectPort " << p << "\n";
      }
      std::string bin = kTinyproxy, d = "-d", c = "-c", conf_arg = conf;
      std::vector<char*> argv = {bin.data(), d.data(), c.data(), conf_arg.data(), nullptr};
      posix_spawn_file_actions_t fa;
      posix_spawn_file_actions_init(&fa);
      // In the foreground tinyproxy logs to stdout.
      posix_spawn_file_actions_addopen(&fa, 1, s->log_.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                       0644);
      posix_spawn_file_actions_adddup2(&fa, 1, 2);
      pid_t pid;
      int rc = posix_spawn(&pid, kTinyproxy, &fa, nullptr, argv.data(), environ);
      posix_spawn_file_actions_destroy(&fa);
      if (rc != 0) return absl::InternalError("spawn tinyproxy failed");
      s->pid_ = pid;
      s->port_ = port;
      for (int i = 0; i < 100; ++i) {  // up once it accepts
        if (Accepts(port)) return s;
        int status;
        if (::waitpid(pid, &status, WNOHANG) == pid) break;  // the port was taken: again
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      s->Stop();
    }
    return absl::InternalError("tinyproxy did not start; its log: " + s->Log());
  }

  ~HttpProxyServer() { Stop(); }

  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  // How many CONNECT requests it has had for `target` ("host:port").
  int Connects(const std::string& target) const {
    std::ifstream f(log_);
    std::string line;
    int n = 0;
    const std::string needle = "): CONNECT " + target + " ";
    while (std::getline(f, line)) n += line.find(needle) != std::string::npos ? 1 : 0;
    return n;
  }
  std::string Log() const {
    std::ifstream f(log_);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }

  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  explicit HttpProxyServer(const std::string& dir) : log_(dir + "/tinyproxy.log") {}

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

  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace ringrpc::testing

#endif  // RINGRPC_TESTS_TESTING_HTTP_PROXY_SERVER_H_
