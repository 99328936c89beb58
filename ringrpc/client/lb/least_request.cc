// least_request_experimental (builtin.h).
#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ringrpc/base/random.h"
#include "ringrpc/client/channel_arguments.h"
#include "ringrpc/client/lb/builtin.h"

namespace ringrpc::lb {
namespace {

constexpr std::string_view kName = "least_request_experimental";

// One CQ thread's calls in flight per address (the thread scope): touched
// by that thread's pickers and trackers only.
using ThreadCounts = absl::flat_hash_map<const void*, uint32_t>;

class ThreadTracker final : public LbCallTracker {
 public:
  ThreadTracker(ThreadCounts* counts, const void* id) : counts_(counts), id_(id) {}
  void Start() override { ++(*counts_)[id_]; }
  void Finish() override {
    auto it = counts_->find(id_);
    if (it == counts_->end()) return;
    if (--it->second == 0) counts_->erase(it);  // addresses that went leave no entry
  }

 private:
  ThreadCounts* const counts_;  // the balancer's, which outlives the channel's calls
  const void* const id_;
};

// The channel scope: the address's counter every thread shares. The call
// holds the address while it is tracked, so the counter outlives it.
class SharedTracker final : public LbCallTracker {
 public:
  explicit SharedTracker(std::atomic<uint32_t>* count) : count_(count) {}
  void Start() override { count_->fetch_add(1, std::memory_order_relaxed); }
  void Finish() override { count_->fetch_sub(1, std::memory_order_relaxed); }

 private:
  std::atomic<uint32_t>* const count_;
};

class LeastRequestPicker final : public LbPicker {
 public:
  // counts: this thread's, or null for the channel scope.
  LeastRequestPicker(int choice_count, uint64_t seed, ThreadCounts* counts)
      : choice_count_(choice_count), rng_(seed), counts_(counts) {}

  std::optional<LbPick> Pick(const LbAddressList& a) override {
    const size_t n = a.size();
    auto failing = [&](size_t i) { return a.state(i) == GRPC_CHANNEL_TRANSIENT_FAILURE; };
    auto load = [&](size_t i) -> uint32_t {
      if (counts_ == nullptr) return a.shared_count(i).load(std::memory_order_relaxed);
      auto it = counts_->find(a.id(i));
      return it == counts_->end() ? 0 : it->second;
    };
    // Draws among the usable addresses; if none is usable, among all.
    bool any_usable = false;
    for (size_t i = 0; i < n && !any_usable; ++i) any_usable = !failing(i);
    std::optional<size_t> best;
    uint32_t best_load = 0;
    for (int drawn = 0, tries = 0; drawn < choice_count_ && tries < 4 * choice_count_ + 8;
         ++tries) {
      const size_t i = NextRandom(rng_) % n;
      if (any_usable && failing(i)) continue;
      ++drawn;
      const uint32_t l = load(i);
      if (!best || l < best_load) {
        best = i;
        best_load = l;
      }
    }
    if (!best) {  // unlucky draws: the first usable one
      best = 0;
      for (size_t i = 0; i < n; ++i) {
        if (!failing(i)) {
          best = i;
          break;
        }
      }
    }
    LbPick pick{.index = *best};
    if (counts_ != nullptr) {
      pick.tracker = std::make_unique<ThreadTracker>(counts_, a.id(*best));
    } else {
      pick.tracker = std::make_unique<SharedTracker>(&a.shared_count(*best));
    }
    return pick;
  }

 private:
  const int choice_count_;
  uint64_t rng_;  // NextRandom's state
  ThreadCounts* const counts_;
};

class LeastRequestBalancer final : public LbBalancer {
 public:
  LeastRequestBalancer(int choice_count, size_t threads, bool channel_wide)
      : choice_count_(choice_count), per_thread_(channel_wide ? 0 : threads) {}
  std::unique_ptr<LbPicker> NewPicker(const LbPickerArgs& args) override {
    ThreadCounts* counts = per_thread_.empty() ? nullptr : &per_thread_.at(args.thread);
    return std::make_unique<LeastRequestPicker>(choice_count_, args.seed, counts);
  }

 private:
  const int choice_count_;
  // Thread scope: element i is CQ thread i's alone (no lock); made up
  // front, never resized.
  std::vector<ThreadCounts> per_thread_;
};

class LeastRequestConfigImpl final : public LbConfig {
 public:
  explicit LeastRequestConfigImpl(int choice_count) : choice_count_(choice_count) {}
  std::string_view name() const override { return kName; }
  std::string ToJson() const override {
    return absl::StrCat(R"({"choiceCount":)", choice_count_, "}");
  }
  std::shared_ptr<LbBalancer> NewBalancer(const LbBalancerArgs& args) const override {
    // ringrpc.least_request_scope: "thread" (default) or "channel"
    // (validated with the channel's other arguments).
    bool channel_wide = false;
    if (args.channel_args != nullptr) {
      auto it = args.channel_args->values().find("ringrpc.least_request_scope");
      if (it != args.channel_args->values().end()) {
        const std::string* v = std::get_if<std::string>(&it->second);
        channel_wide = v != nullptr && *v == "channel";
      }
    }
    return std::make_shared<LeastRequestBalancer>(
        choice_count_, std::max<size_t>(args.cq_threads, 1), channel_wide);
  }

 private:
  const int choice_count_;
};

class LeastRequestFactoryImpl final : public LbPolicyFactory {
 public:
  explicit LeastRequestFactoryImpl(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  // {"choiceCount": N}, 2 .. 10 (more is capped at 10, as gRFC A48 says).
  absl::StatusOr<std::shared_ptr<const LbConfig>> ParseConfig(
      std::string_view json) const override {
    if (absl::Status s = CheckObject(name_, json); !s.ok()) return s;
    const nlohmann::json j = nlohmann::json::parse(json);
    int choices = 2;
    if (auto c = j.find("choiceCount"); c != j.end()) {
      if (!c->is_number_integer() || c->get<int64_t>() < 2) {
        return absl::InvalidArgumentError(
            absl::StrCat(name_, ".choiceCount: must be an integer of at least 2"));
      }
      choices = static_cast<int>(std::min<int64_t>(c->get<int64_t>(), 10));
    }
    return LeastRequestConfig(choices);
  }

 private:
  const std::string name_;
};

}  // namespace

std::shared_ptr<const LbConfig> LeastRequestConfig(int choice_count) {
  return std::make_shared<LeastRequestConfigImpl>(std::clamp(choice_count, 2, 10));
}

std::shared_ptr<const LbPolicyFactory> LeastRequestFactory(std::string name) {
  return std::make_shared<LeastRequestFactoryImpl>(std::move(name));
}

}  // namespace ringrpc::lb
