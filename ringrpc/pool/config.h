// ringrpc/pool/config.h — a pool's configuration and its validation.
//
// Every size is per shard, that is per thread: max_size = 4 on 8 threads
// allows up to 32 connections to the pool's backend in all.
//
//   PoolConfig config;
//   config.max_size = 4;
//   config.idle_timeout = std::chrono::minutes(4);
//   absl::Status ok = ValidatePoolConfig(config);  // clear error, never a fix
#ifndef RINGRPC_POOL_CONFIG_H_
#define RINGRPC_POOL_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "ringrpc/base/time.h"

namespace ringrpc::pool {
class PoolObserver;
}

namespace ringrpc::pool {

struct PoolConfig {
  // Most connections one shard may hold or be dialling at once. >= 1.
  size_t max_size = 8;
  // Idle connections the reaper keeps dialled, and below which a shard never
  // parks a connection in the exchange. <= max_size.
  size_t min_idle = 0;
  // Cap on concurrent leases of one connection (HTTP/2: streams). The
  // manager may report a lower capacity per connection. >= 1; 1 is exclusive
  // checkout.
  uint32_t max_leases_per_connection = 1;
  // Most dials (connects and attaches) in flight per shard; unset = no limit
  // beyond max_size. gRPC A105 uses 1. >= 1 when set.
  std::optional<size_t> max_concurrent_connects;
  // Bound on Acquire(): past it the acquire ends UNAVAILABLE (with the last
  // connect error) or DEADLINE_EXCEEDED. > 0 when set. Needs a Runtime.
  std::optional<Duration> acquire_timeout;
  // Retire a connection idle (no lease) this long. > 0 when set.
  std::optional<Duration> idle_timeout;
  // Retire a connection this old. > 0 when set.
  std::optional<Duration> max_lifetime;
  // Retire a connection after this many leases. >= 1 when set.
  std::optional<uint64_t> max_uses;
  // How often the per-shard reaper runs, when one is needed. > 0.
  Duration reap_interval = std::chrono::seconds(1);
  // Each connection's idle timeout and max lifetime are shortened by a random
  // fraction in [0, lifetime_jitter), so connections made together do not
  // retire together. In [0, 0.5].
  double lifetime_jitter = 0.05;
  // A connection parked in the exchange longer than this is destroyed when
  // popped instead of attached: a parked connection answers no PINGs and sees
  // no GOAWAY. > 0.
  Duration max_park_time = std::chrono::seconds(30);
  // Seed of the per-shard jitter generator (mixed with the shard's index), so
  // tests are repeatable.
  uint64_t jitter_seed = 0x9e3779b97f4a7c15ull;
  // Told of every connect, failed dial, retirement, park and unpark (from
  // the thread that saw it). Optional.
  std::shared_ptr<PoolObserver> observer;

  // Field by field; `observer` by identity.
  bool operator==(const PoolConfig&) const = default;

  // The reaper runs only when something needs doing in the background.
  bool NeedsReaper() const {
    return min_idle > 0 || idle_timeout.has_value() || max_lifetime.has_value();
  }
  // The clock is read on the checkout/return path only when a time limit is
  // set.
  bool NeedsClock() const { return idle_timeout.has_value() || max_lifetime.has_value(); }
};

// OK, or INVALID_ARGUMENT naming the first field that is out of range and
// the value it had.
absl::Status ValidatePoolConfig(const PoolConfig& config);

}  // namespace ringrpc::pool

#endif  // RINGRPC_POOL_CONFIG_H_
