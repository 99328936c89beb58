#include "ringrpc/client/resolver.h"

#include <cctype>
#include <map>
#include <string_view>
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

ResolverArgs SplitTarget(const std::string& target) {
  ResolverArgs a;
  a.target = target;
  // RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"
  size_t colon = 0;
  while (colon < target.size() &&
         (std::isalpha(static_cast<unsigned char>(target[colon])) ||
          (colon > 0 && (std::isdigit(static_cast<unsigned char>(target[colon])) ||
                         target[colon] == '+' || target[colon] == '-' || target[colon] == '.')))) {
    ++colon;
  }
  if (colon == 0 || colon >= target.size() || target[colon] != ':') {
    a.endpoint = target;
    return a;
  }
  a.scheme = target.substr(0, colon);
  std::string_view rest = std::string_view(target).substr(colon + 1);
  if (rest.substr(0, 2) == "//") {
    const size_t slash = rest.find('/', 2);
    a.authority =
        std::string(rest.substr(2, slash == std::string_view::npos ? rest.npos : slash - 2));
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  }
  a.endpoint = std::string(rest);
  return a;
}

}  // namespace ringrpc
