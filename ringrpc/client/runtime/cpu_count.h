// ringrpc/client/runtime/cpu_count.h — how many CPUs this process may really use:
// what the default CQ thread count follows (one thread per usable CPU).
//
// The rule: the number of CPUs in the process's affinity mask (taskset,
// sched_setaffinity, a cpuset), capped by the cgroup v2 CPU quota of the
// process's cgroup and every cgroup above it (cpu.max "quota period": the
// tightest ceil(quota / period)), and at least 1. No affinity answer:
// std::thread::hardware_concurrency().
#ifndef RINGRPC_CLIENT_RUNTIME_CPU_COUNT_H_
#define RINGRPC_CLIENT_RUNTIME_CPU_COUNT_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ringrpc::runtime {

size_t UsableCpus();

// The parts, separately testable.
// CPUs in the calling thread's affinity mask (0 if it cannot be read).
size_t AffinityCpus();
// cpu.max's contents: "max 100000" is no limit; "150000 100000" is 2 CPUs.
std::optional<size_t> ParseCpuMax(std::string_view contents);
// The tightest cpu.max limit from `cgroup_root`/`cgroup_path` up to the
// root (files that are missing or unreadable do not limit).
std::optional<size_t> CgroupCpuLimit(const std::string& cgroup_root,
                                     const std::string& cgroup_path);

}  // namespace ringrpc::runtime

#endif  // RINGRPC_CLIENT_RUNTIME_CPU_COUNT_H_
