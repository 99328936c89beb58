// The policy registry (lb_policy.h) and what PlainFactory shares.
#include <map>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "ringrpc/base/mutex.h"
#include "ringrpc/client/lb/builtin.h"

namespace ringrpc {
namespace {

struct Registry {
  Mutex mu;
  std::map<std::string, std::shared_ptr<const LbPolicyFactory>, std::less<>> by_name
      ABSL_GUARDED_BY(mu);
};

// ringrpc's own policies are there from the first use: registered by
// name like a user's (and replaceable by one), with no static
// initializer for the linker to drop.
Registry& TheRegistry() {
  static Registry* r = [] {
    auto* r = new Registry();  // never destroyed: channels may outlive main's statics
    MutexLock lock(&r->mu);
    for (auto f : {lb::PickFirstFactory(), lb::RoundRobinFactory(),
                   lb::LeastRequestFactory("least_request_experimental"),
                   lb::LeastRequestFactory("least_request")}) {
      r->by_name.emplace(std::string(f->name()), std::move(f));
    }
    return r;
  }();
  return *r;
}

}  // namespace

void RegisterLbPolicy(std::shared_ptr<const LbPolicyFactory> factory) {
  if (factory == nullptr) return;
  Registry& r = TheRegistry();
  MutexLock lock(&r.mu);
  r.by_name[std::string(factory->name())] = std::move(factory);
}

std::shared_ptr<const LbPolicyFactory> FindLbPolicy(std::string_view name) {
  Registry& r = TheRegistry();
  MutexLock lock(&r.mu);
  auto it = r.by_name.find(name);
  return it == r.by_name.end() ? nullptr : it->second;
}

std::vector<std::string> LbPolicyNames() {
  Registry& r = TheRegistry();
  MutexLock lock(&r.mu);
  std::vector<std::string> names;
  for (const auto& [name, f] : r.by_name) names.push_back(name);
  return names;
}

namespace lb {

absl::Status CheckObject(std::string_view policy, std::string_view json) {
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(policy), ": the policy's config must be a JSON object, got ",
                     std::string(json)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const LbConfig>> PlainFactory::ParseConfig(
    std::string_view json) const {
  if (absl::Status s = CheckObject(config_->name(), json); !s.ok()) return s;
  return config_;
}

}  // namespace lb
}  // namespace ringrpc
