// pick_first (builtin.h).
#include "ringrpc/client/lb/builtin.h"

namespace ringrpc::lb {
namespace {

class PickFirstPicker final : public LbPicker {
 public:
  explicit PickFirstPicker(const LbPickerArgs&) {}
  std::optional<LbPick> Pick(const LbAddressList& a) override {
    const size_t n = a.size();
    for (size_t i = 0; i < n; ++i) {
      if (a.state(i) == GRPC_CHANNEL_READY) return LbPick{.index = i};
    }
    for (size_t i = 0; i < n; ++i) {
      if (a.state(i) != GRPC_CHANNEL_TRANSIENT_FAILURE) return LbPick{.index = i};
    }
    return LbPick{.index = 0};
  }
};

}  // namespace

std::shared_ptr<const LbConfig> PickFirstConfig() {
  return PlainConfigOf<PickFirstPicker>("pick_first", /*health_checks=*/false);
}

std::shared_ptr<const LbPolicyFactory> PickFirstFactory() {
  return std::make_shared<PlainFactory>(PickFirstConfig());
}

}  // namespace ringrpc::lb
