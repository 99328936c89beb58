// tests/testing/daemon.h — a helper process a test fixture runs (dnsmasq,
// tinyproxy): started with its stdout and stderr appended to a log file in
// a directory of its own under TEST_TMPDIR, stopped by SIGTERM and reaped.
// Test-only.
//
//   Daemon d("dns");
//   absl::Status s = d.Spawn({"/usr/sbin/dnsmasq", "--no-daemon", ...});
//   ... d.Log() ...
#ifndef RINGRPC_TESTS_TESTING_DAEMON_H_
#define RINGRPC_TESTS_TESTING_DAEMON_H_

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

extern char** environ;

namespace ringrpc::testing {

class Daemon {
 public:
  // Makes its directory: TEST_TMPDIR (else /tmp) / name.pid.serial.
  explicit Daemon(const std::string& name) {
    const char* tmp = std::getenv("TEST_TMPDIR");
    static int serial = 0;
    dir_ = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name, ".", ::getpid(), ".", ++serial);
    ::mkdir(dir_.c_str(), 0755);
    log_ = dir_ + "/log";
  }
  ~Daemon() { Stop(); }
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  const std::string& dir() const { return dir_; }

  // Starts argv[0] with `argv` (stopping a previous run first).
  absl::Status Spawn(std::vector<std::string> argv) {
    Stop();
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    int rc = posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
      pid_ = -1;
      return absl::InternalError(absl::StrCat("spawn ", argv[0], ": ", std::strerror(rc)));
    }
    return absl::OkStatus();
  }

  // It ended by itself (reaped).
  bool Exited() {
    int status;
    if (pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) pid_ = -1;
    return pid_ <= 0;
  }

  void Signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }

  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  // Its output so far.
  std::string Log() const {
    std::ifstream f(log_);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  // How many lines of its output contain `needle`.
  int CountLines(const std::string& needle) const {
    std::ifstream f(log_);
    std::string line;
    int n = 0;
    while (std::getline(f, line)) n += line.find(needle) != std::string::npos ? 1 : 0;
    return n;
  }

 private:
  std::string dir_, log_;
  pid_t pid_ = -1;
};

}  // namespace ringrpc::testing

#endif  // RINGRPC_TESTS_TESTING_DAEMON_H_
