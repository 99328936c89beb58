// The default CQ thread count follows the CPUs the process may use: the
// affinity mask (pinned to one core: one thread) and the cgroup v2 quota
// (a fake cgroup tree: the tightest cpu.max on the way up).
#include "ringrpc/client/runtime/cpu_count.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "ringrpc/client/runtime/cq_threads.h"

namespace ringrpc::runtime {
namespace {

TEST(CpuCount, CpuMaxIsQuotaOverPeriodRoundedUp) {
  EXPECT_EQ(ParseCpuMax("max 100000\n"), std::nullopt);
  EXPECT_EQ(ParseCpuMax("200000 100000\n"), 2u);
  EXPECT_EQ(ParseCpuMax("150000 100000"), 2u);
  EXPECT_EQ(ParseCpuMax("50000 100000"), 1u);  // half a CPU is still one thread
  EXPECT_EQ(ParseCpuMax(""), std::nullopt);
  EXPECT_EQ(ParseCpuMax("12x 100000"), std::nullopt);
  EXPECT_EQ(ParseCpuMax("100000 0"), std::nullopt);
}

TEST(CpuCount, TheTightestQuotaOnThePathToTheRootWins) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") /
                        ("cgroup-" + std::to_string(::getpid()));
  fs::create_directories(root / "kubepods" / "pod1" / "ctr");
  auto write = [](const fs::path& p, const std::string& text) { std::ofstream(p) << text; };
  write(root / "kubepods" / "cpu.max", "max 100000\n");
  write(root / "kubepods" / "pod1" / "cpu.max", "300000 100000\n");  // 3 CPUs
  write(root / "kubepods" / "pod1" / "ctr" / "cpu.max", "max 100000\n");
  EXPECT_EQ(CgroupCpuLimit(root.string(), "/kubepods/pod1/ctr"), 3u);
  write(root / "kubepods" / "cpu.max", "150000 100000\n");  // a parent tighter still
  EXPECT_EQ(CgroupCpuLimit(root.string(), "/kubepods/pod1/ctr"), 2u);
  EXPECT_EQ(CgroupCpuLimit(root.string(), "/elsewhere"), std::nullopt);  // no files: no limit
  fs::remove_all(root);
}

TEST(CpuCount, PinnedToOneCpuTheDefaultSetHasOneThread) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  int first = -1;
  for (int i = 0; i < CPU_SETSIZE && first < 0; ++i) {
    if (CPU_ISSET(i, &before)) first = i;
  }
  ASSERT_GE(first, 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);  // as `taskset -c N` would
  EXPECT_EQ(AffinityCpus(), 1u);
  EXPECT_EQ(UsableCpus(), 1u);
  absl::StatusOr<std::unique_ptr<CqThreads>> cq = CqThreads::Start({});
  ASSERT_TRUE(cq.ok()) << cq.status();
  EXPECT_EQ((*cq)->size(), 1u);
  (*cq)->Shutdown();
  ASSERT_EQ(sched_setaffinity(0, sizeof before, &before), 0);
  EXPECT_EQ(AffinityCpus(), static_cast<size_t>(CPU_COUNT(&before)));
}

}  // namespace
}  // namespace ringrpc::runtime
