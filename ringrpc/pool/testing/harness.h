// ringrpc/pool/testing/harness.h — shared helpers for pool tests: a pool of
// FakeManager connections on simulated threads, and the whole-pool checks
// every test ends with. Test-only.
#ifndef RINGRPC_POOL_TESTING_HARNESS_H_
#define RINGRPC_POOL_TESTING_HARNESS_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ringrpc/base/task.h"
#include "ringrpc/pool/pool.h"
#include "ringrpc/pool/reservoir.h"
#include "ringrpc/pool/testing/fake_manager.h"
#include "ringrpc/pool/testing/fake_runtime.h"

namespace ringrpc::pool::testing {

using FakePool = Pool<FakeManager>;
using FakeLease = Lease<FakeManager>;
using AcquireResult = absl::StatusOr<FakeLease>;

inline Task<AcquireResult> AcquireTask(FakePool pool) { co_return co_await pool.Acquire(); }

// OK when the pool's counters and the manager's independent count agree:
// conservation, closed == sum of retirements, and every connection the
// manager thinks exists is live in a shard or parked (none in flight).
inline absl::Status CheckConservation(const FakePool& pool, const FakeManager& m,
                                      uint64_t taken_still_open = 0) {
  PoolMetrics x = pool.Metrics();
  if (!x.Conserved()) {
    return absl::InternalError("conservation broken: " + x.ToString());
  }
  if (x.closed != x.retired_total()) {
    return absl::InternalError("closed != sum(retired): " + x.ToString());
  }
  if (m.open() != x.live + x.parked + taken_still_open) {
    return absl::InternalError(
        absl::StrCat("manager has ", m.open(), " open connections; pool says ", x.ToString()));
  }
  if (m.double_closes() != 0) {
    return absl::InternalError("a connection was closed twice");
  }
  return absl::OkStatus();
}

}  // namespace ringrpc::pool::testing

#endif  // RINGRPC_POOL_TESTING_HARNESS_H_
