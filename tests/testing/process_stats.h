// tests/testing/process_stats.h — what tests read about their own process:
// resident memory and open sockets (from /proc/self). Test-only.
#ifndef RINGRPC_TESTS_TESTING_PROCESS_STATS_H_
#define RINGRPC_TESTS_TESTING_PROCESS_STATS_H_

#include <dirent.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace ringrpc::testing {

// Built with ASAN or TSAN: memory and address-space measurements mean
// little (shadow memory, reservations of terabytes).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// VmRSS in KiB (-1 if unreadable).
inline long RssKiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

// Threads of this process (-1 if unreadable).
inline long ThreadCount() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::atol(line.c_str() + 8);
  }
  return -1;
}

// Threads of this process not named `name` (pthread_setname_np; /proc's
// comm), -1 if unreadable: pools of workers that end by themselves later,
// such as ringrpc's call-credentials threads ("ringrpc-creds", 30 s after
// their last job), left out.
inline long ThreadCountExcept(const std::string& name) {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  long n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string c;
    std::getline(comm, c);
    if (c != name) ++n;
  }
  closedir(d);
  return n;
}

// CPU time (user + system) process `pid` has used, in ms (-1 if
// unreadable): another process's (a test server's), from /proc/PID/stat.
inline double ProcessCpuMs(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');  // the name may hold spaces
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  long utime = -1, stime = -1;
  // Fields after the name start at 3 (state); utime and stime are 14, 15.
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stol(field);
    if (i == 15) stime = std::stol(field);
  }
  if (utime < 0 || stime < 0) return -1;
  return double(utime + stime) * 1000.0 / double(::sysconf(_SC_CLK_TCK));
}

// Open file descriptors of this process (sockets, io_uring instances,
// eventfds, files), not counting the one used to list them.
inline int OpenFds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n - 1;
}

// File descriptors of this process that are sockets.
inline int OpenSockets() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d)) {
    char link[64] = {0};
    std::string path = std::string("/proc/self/fd/") + e->d_name;
    if (readlink(path.c_str(), link, sizeof link - 1) > 0 &&
        std::strncmp(link, "socket:", 7) == 0) {
      ++n;
    }
  }
  closedir(d);
  return n;
}

}  // namespace ringrpc::testing

#endif  // RINGRPC_TESTS_TESTING_PROCESS_STATS_H_
