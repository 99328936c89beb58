#include "ringrpc/pool/retire.h"

namespace ringrpc::pool {
namespace {

Duration Jittered(Duration limit, double jitter, uint64_t random) {
  if (jitter <= 0.0) return limit;
  // 53 random bits -> [0, 1).
  double u = static_cast<double>(random >> 11) * 0x1.0p-53;
  auto cut = std::chrono::duration_cast<Duration>(limit * (jitter * u));
  return limit - cut;
}

}  // namespace

std::string_view RetireReasonName(RetireReason r) {
  switch (r) {
    case RetireReason::kNone:
      return "none";
    case RetireReason::kGeneration:
      return "generation";
    case RetireReason::kMaxLifetime:
      return "max_lifetime";
    case RetireReason::kIdleTimeout:
      return "idle_timeout";
    case RetireReason::kMaxUses:
      return "max_uses";
    case RetireReason::kPoisoned:
      return "poisoned";
    case RetireReason::kPoolClosed:
      return "pool_closed";
    case RetireReason::kRecycleFailed:
      return "recycle_failed";
    case RetireReason::kParkTimeout:
      return "park_timeout";
    case RetireReason::kDetachFailed:
      return "detach_failed";
    case RetireReason::kAttachFailed:
      return "attach_failed";
    case RetireReason::kShardGone:
      return "shard_gone";
  }
  return "unknown";
}

SlotMeta NewSlotMeta(const PoolConfig& config, TimePoint now, uint64_t generation,
                     uint64_t random) {
  SlotMeta meta;
  meta.created_at = now;
  meta.last_used = now;
  meta.generation = generation;
  if (config.max_lifetime) {
    meta.expires_at = now + Jittered(*config.max_lifetime, config.lifetime_jitter, random);
  }
  if (config.idle_timeout) {
    // A different slice of the same random word, so the two jitters differ.
    uint64_t r2 = (random << 32) | (random >> 32);
    meta.idle_limit = Jittered(*config.idle_timeout, config.lifetime_jitter, r2);
  }
  return meta;
}

RetireReason CheckRetirement(const SlotMeta& meta, const PoolConfig& config, TimePoint now,
                             uint64_t generation, bool idle) {
  if (meta.generation != generation) return RetireReason::kGeneration;
  if (config.max_uses && meta.uses >= *config.max_uses) {
    return RetireReason::kMaxUses;
  }
  if (now >= meta.expires_at) return RetireReason::kMaxLifetime;
  if (idle && meta.idle_limit != Duration::max() && now - meta.last_used >= meta.idle_limit) {
    return RetireReason::kIdleTimeout;
  }
  return RetireReason::kNone;
}

}  // namespace ringrpc::pool
