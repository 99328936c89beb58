#include "ringrpc/pool/config.h"

#include <chrono>

#include "absl/strings/str_cat.h"

namespace ringrpc::pool {
namespace {

std::string Ms(Duration d) {
  return absl::StrCat(std::chrono::duration<double, std::milli>(d).count(), "ms");
}

absl::Status PositiveIfSet(const char* name, const std::optional<Duration>& d) {
  if (d.has_value() && *d <= Duration::zero()) {
    return absl::InvalidArgumentError(
        absl::StrCat("pool config: ", name, " must be > 0 when set, got ", Ms(*d)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidatePoolConfig(const PoolConfig& c) {
  if (c.max_size == 0) {
    return absl::InvalidArgumentError("pool config: max_size must be >= 1, got 0");
  }
  if (c.min_idle > c.max_size) {
    return absl::InvalidArgumentError(absl::StrCat("pool config: min_idle (", c.min_idle,
                                                   ") must be <= max_size (", c.max_size, ")"));
  }
  if (c.max_leases_per_connection == 0) {
    return absl::InvalidArgumentError("pool config: max_leases_per_connection must be >= 1, got 0");
  }
  if (c.max_concurrent_connects.has_value() && *c.max_concurrent_connects == 0) {
    return absl::InvalidArgumentError(
        "pool config: max_concurrent_connects must be >= 1 when set, got 0");
  }
  if (c.max_uses.has_value() && *c.max_uses == 0) {
    return absl::InvalidArgumentError("pool config: max_uses must be >= 1 when set, got 0");
  }
  if (absl::Status s = PositiveIfSet("acquire_timeout", c.acquire_timeout); !s.ok()) {
    return s;
  }
  if (absl::Status s = PositiveIfSet("idle_timeout", c.idle_timeout); !s.ok()) {
    return s;
  }
  if (absl::Status s = PositiveIfSet("max_lifetime", c.max_lifetime); !s.ok()) {
    return s;
  }
  if (c.reap_interval <= Duration::zero()) {
    return absl::InvalidArgumentError(
        absl::StrCat("pool config: reap_interval must be > 0, got ", Ms(c.reap_interval)));
  }
  if (c.max_park_time <= Duration::zero()) {
    return absl::InvalidArgumentError(
        absl::StrCat("pool config: max_park_time must be > 0, got ", Ms(c.max_park_time)));
  }
  // Written so that NaN fails too.
  if (!(c.lifetime_jitter >= 0.0 && c.lifetime_jitter <= 0.5)) {
    return absl::InvalidArgumentError(
        absl::StrCat("pool config: lifetime_jitter must be in [0, 0.5], got ", c.lifetime_jitter));
  }
  return absl::OkStatus();
}

}  // namespace ringrpc::pool
