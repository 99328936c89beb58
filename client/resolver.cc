#include "client/resolver.h"

#include <utility>

namespace ringrpc {

void ManualResolver::Start(ResolverListener listener) {
  std::optional<absl::StatusOr<AddressList>> pending;
  {
    MutexLock lock(&mu_);
    listener_ = std::move(listener);
    pending.swap(pending_);
  }
  if (pending) Push(std::move(*pending));
}

void ManualResolver::Push(absl::StatusOr<AddressList> update) {
  MutexLock lock(&mu_);  // one listener call at a time
  if (!listener_) {
    pending_ = std::move(update);
    return;
  }
  listener_(std::move(update));
}

void ManualResolver::Shutdown() {
  MutexLock lock(&mu_);
  listener_ = nullptr;
}

}  // namespace ringrpc
