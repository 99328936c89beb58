#include "ringrpc/pool/metrics.h"

#include "absl/strings/str_cat.h"

namespace ringrpc::pool {

void ShardCounters::AddTo(PoolMetrics& m) const {
  m.created += created.Get();
  m.closed += closed.Get();
  m.live += live.Get();
  m.parked += attaching.Get();
  m.taken += taken.Get();
  m.leases += leases.Get();
  m.acquires += acquires.Get();
  m.waits += waits.Get();
  m.timeouts += timeouts.Get();
  m.connect_failures += connect_failures.Get();
  m.recycle_failures += recycle_failures.Get();
  m.parks += parks.Get();
  m.unparked += unparked.Get();
  m.poisoned += poisoned.Get();
  for (size_t i = 0; i < kRetireReasonCount; ++i) {
    m.retired[i] += retired[i].Get();
  }
}

PoolMetrics& PoolMetrics::operator+=(const PoolMetrics& o) {
  created += o.created;
  closed += o.closed;
  live += o.live;
  parked += o.parked;
  taken += o.taken;
  cleared += o.cleared;
  leases += o.leases;
  acquires += o.acquires;
  waits += o.waits;
  timeouts += o.timeouts;
  connect_failures += o.connect_failures;
  recycle_failures += o.recycle_failures;
  parks += o.parks;
  unparked += o.unparked;
  poisoned += o.poisoned;
  for (size_t i = 0; i < kRetireReasonCount; ++i) retired[i] += o.retired[i];
  return *this;
}

std::string PoolMetrics::ToString() const {
  std::string s =
      absl::StrCat("created=", created, " closed=", closed, " live=", live, " parked=", parked,
                   " taken=", taken, " cleared=", cleared, " leases=", leases,
                   " acquires=", acquires, " waits=", waits, " timeouts=", timeouts,
                   " connect_failures=", connect_failures, " recycle_failures=", recycle_failures,
                   " parks=", parks, " unparked=", unparked, " poisoned=", poisoned, " retired{");
  bool first = true;
  for (size_t i = 1; i < kRetireReasonCount; ++i) {
    if (retired[i] == 0) continue;
    absl::StrAppend(&s, first ? "" : " ",
                    std::string(RetireReasonName(static_cast<RetireReason>(i))), "=", retired[i]);
    first = false;
  }
  absl::StrAppend(&s, "}");
  return s;
}

}  // namespace ringrpc::pool
