// round_robin (builtin.h).
#include "ringrpc/client/lb/builtin.h"

namespace ringrpc::lb {
namespace {

// Rotates over every address that is not failing (gRPC's connects all
// eagerly, then rotates over READY ones; a READY-first rotation here
// starved the lazily connected backends).
class RoundRobinPicker final : public LbPicker {
 public:
  explicit RoundRobinPicker(const LbPickerArgs&) {}
  std::optional<LbPick> Pick(const LbAddressList& a) override {
    const size_t n = a.size();
    for (size_t k = 0; k < n; ++k) {
      const size_t i = (next_ + k) % n;
      if (a.state(i) != GRPC_CHANNEL_TRANSIENT_FAILURE) {
        next_ = (i + 1) % n;
        return LbPick{.index = i};
      }
    }
    return LbPick{.index = next_++ % n};
  }

 private:
  size_t next_ = 0;  // where the next pick starts looking
};

}  // namespace

std::shared_ptr<const LbConfig> RoundRobinConfig() {
  return PlainConfigOf<RoundRobinPicker>("round_robin", /*health_checks=*/true);
}

std::shared_ptr<const LbPolicyFactory> RoundRobinFactory() {
  return std::make_shared<PlainFactory>(RoundRobinConfig());
}

}  // namespace ringrpc::lb
