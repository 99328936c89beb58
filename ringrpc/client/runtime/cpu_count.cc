#include "ringrpc/client/runtime/cpu_count.h"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

namespace ringrpc::runtime {
namespace {

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The process's cgroup v2 path ("0::/a/b" in /proc/self/cgroup).
std::optional<std::string> OwnCgroupPath() {
  std::optional<std::string> all = ReadFile("/proc/self/cgroup");
  if (!all) return std::nullopt;
  std::istringstream lines(*all);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return std::nullopt;
}

}  // namespace

size_t AffinityCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return static_cast<size_t>(CPU_COUNT(&set));
}

std::optional<size_t> ParseCpuMax(std::string_view contents) {
  std::istringstream in{std::string(contents)};
  std::string quota;
  uint64_t period = 0;
  if (!(in >> quota) || quota == "max") return std::nullopt;
  if (!(in >> period) || period == 0) return std::nullopt;
  uint64_t q = 0;
  for (char c : quota) {
    if (c < '0' || c > '9') return std::nullopt;
    q = q * 10 + static_cast<uint64_t>(c - '0');
  }
  return static_cast<size_t>(std::max<uint64_t>(1, (q + period - 1) / period));
}

std::optional<size_t> CgroupCpuLimit(const std::string& cgroup_root,
                                     const std::string& cgroup_path) {
  std::optional<size_t> limit;
  std::string path = cgroup_path;
  for (;;) {
    if (std::optional<std::string> max = ReadFile(cgroup_root + path + "/cpu.max")) {
      if (std::optional<size_t> n = ParseCpuMax(*max)) limit = limit ? std::min(*limit, *n) : *n;
    }
    if (path.empty() || path == "/") break;
    const size_t slash = path.find_last_of('/');
    path = slash == std::string::npos || slash == 0 ? std::string() : path.substr(0, slash);
  }
  return limit;
}

size_t UsableCpus() {
  size_t n = AffinityCpus();
  if (n == 0) n = std::max(1u, std::thread::hardware_concurrency());
  if (std::optional<std::string> own = OwnCgroupPath()) {
    if (std::optional<size_t> quota = CgroupCpuLimit("/sys/fs/cgroup", *own)) {
      n = std::min(n, *quota);
    }
  }
  return std::max<size_t>(1, n);
}

}  // namespace ringrpc::runtime
