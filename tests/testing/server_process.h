// tests/testing/server_process.h — runs tests/server/test_server (a real
// grpc++ server) as a child process, so a test can kill, stop or gracefully
// terminate it, and so no grpc++ code runs in the test's own process.
#ifndef RINGRPC_TESTS_TESTING_SERVER_PROCESS_H_
#define RINGRPC_TESTS_TESTING_SERVER_PROCESS_H_

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

extern char** environ;

namespace ringrpc::testing {

class ServerProcess {
 public:
  // `listen`: "127.0.0.1:0" (a free port) or "unix:/path". `binary`: the
  // server's path relative to the test's working directory (runfiles).
  // `extra`: more arguments for the server.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      std::string listen = "127.0.0.1:0", std::string binary = "tests/server/test_server",
      std::vector<std::string> extra = {}) {
    int out[2];
    if (::pipe(out) != 0) return absl::InternalError("pipe");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    std::string arg = "--listen=" + listen;
    std::vector<char*> argv = {binary.data(), arg.data()};
    for (std::string& e : extra) argv.push_back(e.data());
    argv.push_back(nullptr);
    // The server is a test fixture, not code under test: under TSAN its
    // grpc++ and Abseil (not built for TSAN, decision 0006) report
    // races that are not ringrpc's, so the child reports nothing.
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::strncmp(*e, "TSAN_OPTIONS=", 13) != 0) env_strings.push_back(*e);
    }
    env_strings.push_back("TSAN_OPTIONS=report_bugs=0");
    std::vector<char*> envp;
    for (std::string& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid;
    int rc = posix_spawn(&pid, binary.c_str(), &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    ::close(out[1]);
    if (rc != 0) {
      ::close(out[0]);
      return absl::InternalError(absl::StrCat("spawn ", binary, ": ", std::strerror(rc)));
    }
    std::unique_ptr<ServerProcess> p(new ServerProcess(pid, listen));
    // Wait (at most 10 s) for "LISTENING <port>".
    std::string line;
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (line.find('\n') == std::string::npos) {
      pollfd pfd{out[0], POLLIN, 0};
      if (std::chrono::steady_clock::now() > end || ::poll(&pfd, 1, 100) < 0) break;
      char buf[64];
      if (pfd.revents == 0) continue;
      ssize_t n = ::read(out[0], buf, sizeof buf);
      if (n <= 0) break;
      line.append(buf, n);
    }
    ::close(out[0]);
    int port = 0;
    if (std::sscanf(line.c_str(), "LISTENING %d", &port) != 1) {
      return absl::InternalError(absl::StrCat("test server did not start: \"", line, "\""));
    }
    p->port_ = port;
    return p;
  }

  ~ServerProcess() { Kill(); }

  int port() const { return port_; }
  // What to dial: "<host it listens on>:<port>" ("127.0.0.1:<port>",
  // "[::1]:<port>") or the unix address it listens on.
  std::string address() const {
    if (listen_.rfind("unix", 0) == 0) return listen_;
    return absl::StrCat(listen_.substr(0, listen_.rfind(':')), ":", port_);
  }
  pid_t pid() const { return pid_; }

  void Signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  // SIGKILL and reap.
  void Kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  // SIGTERM (graceful shutdown) and reap; returns the exit status.
  int Terminate() {
    if (pid_ <= 0) return -1;
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return status;
  }

 private:
  ServerProcess(pid_t pid, std::string listen) : pid_(pid), listen_(std::move(listen)) {}
  pid_t pid_;
  std::string listen_;
  int port_ = 0;
};

}  // namespace ringrpc::testing

#endif  // RINGRPC_TESTS_TESTING_SERVER_PROCESS_H_
