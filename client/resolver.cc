#include "client/resolver.h"

#include <utility>

namespace ringrpc {

void ManualResolver::Start(ResolverListener listener) {
  std::optional<absl::StatusOr<ResolverResult>> pending;
  {
    MutexLock lock(&mu_);
    listener_ = std::move(listener);
    pending.swap(pending_);
  }
  if (pending) PushResult(std::move(*pending));
}

void ManualResolver::Push(absl::StatusOr<AddressList> update) {
  if (!update.ok()) {
    PushResult(update.status());
  } else {
    PushResult(ResolverResult{std::move(*update), std::nullopt});
  }
}

void ManualResolver::PushResult(absl::StatusOr<ResolverResult> result) {
  MutexLock lock(&mu_);  // one listener call at a time
  if (!listener_) {
    pending_ = std::move(result);
    return;
  }
  listener_.Update(std::move(result));
}

void ManualResolver::Shutdown() {
  MutexLock lock(&mu_);
  listener_ = nullptr;
}

}  // namespace ringrpc
