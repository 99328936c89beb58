#include "ringrpc/client/resolver.h"

#include <map>
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

namespace {
struct Factories {
  Mutex mu;
  std::map<std::string, ResolverFactory> by_scheme ABSL_GUARDED_BY(mu);
};
Factories& GlobalFactories() {
  static Factories* f = new Factories();  // never destroyed: used from static initializers
  return *f;
}
}  // namespace

void RegisterResolverFactory(const std::string& scheme, ResolverFactory factory) {
  Factories& f = GlobalFactories();
  MutexLock lock(&f.mu);
  f.by_scheme[scheme] = std::move(factory);
}

ResolverFactory FindResolverFactory(const std::string& scheme) {
  Factories& f = GlobalFactories();
  MutexLock lock(&f.mu);
  auto it = f.by_scheme.find(scheme);
  return it == f.by_scheme.end() ? ResolverFactory() : it->second;
}

}  // namespace ringrpc
