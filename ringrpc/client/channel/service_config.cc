#include "ringrpc/client/channel/service_config.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ringrpc/client/status.h"

namespace ringrpc::channel {
namespace {

using nlohmann::json;

absl::Status Error(std::string_view path, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("grpc.service_config: ", std::string(path),
                                                 path.empty() ? "" : ": ", std::string(what)));
}

// loadBalancingConfig (the first policy ringrpc knows, as gRPC picks), else
// the older loadBalancingPolicy.
absl::Status ReadLb(const json& j, ServiceConfig& out) {
  if (auto it = j.find("loadBalancingConfig"); it != j.end()) {
    if (!it->is_array()) return Error("loadBalancingConfig", "must be an array");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& entry = (*it)[i];
      if (!entry.is_object() || entry.size() != 1) {
        return Error(absl::StrCat("loadBalancingConfig[", i, "]"),
                     "must be an object with one policy");
      }
      std::shared_ptr<const LbPolicyFactory> f = FindLbPolicy(entry.begin().key());
      if (f == nullptr) continue;
      absl::StatusOr<std::shared_ptr<const LbConfig>> c =
          f->ParseConfig(entry.begin().value().dump());
      if (!c.ok()) {
        return Error(absl::StrCat("loadBalancingConfig[", i, "]"),
                     std::string(c.status().message()));
      }
      out.lb_config = *std::move(c);
      return absl::OkStatus();
    }
    return Error("loadBalancingConfig",
                 absl::StrCat("none of its policies is registered (registered: ",
                              absl::StrJoin(LbPolicyNames(), ", "), ")"));
  }
  if (auto it = j.find("loadBalancingPolicy"); it != j.end()) {
    if (!it->is_string()) return Error("loadBalancingPolicy", "must be a string");
    std::string name = it->get<std::string>();
    for (char& ch : name) ch = static_cast<char>(std::tolower(ch));  // "ROUND_ROBIN"
    absl::StatusOr<std::shared_ptr<const LbConfig>> c = LbConfigNamed(name);
    if (!c.ok()) return Error("loadBalancingPolicy", std::string(c.status().message()));
    out.lb_config = *std::move(c);
  }
  return absl::OkStatus();
}

// A uint32 field: a JSON number or a string of digits (proto3 JSON allows
// both); above 2^32-1 is capped there.
absl::StatusOr<uint32_t> ReadUint32(const json& v, std::string_view path) {
  uint64_t n = 0;
  if (v.is_number_unsigned()) {
    n = v.get<uint64_t>();
  } else if (v.is_number_integer() || v.is_number_float()) {
    return Error(path, "must be a non-negative integer");
  } else if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.empty() || s.size() > 19) return Error(path, absl::StrCat("\"", s, "\" is not a number"));
    for (char c : s) {
      if (c < '0' || c > '9') return Error(path, absl::StrCat("\"", s, "\" is not a number"));
      n = n * 10 + (c - '0');
    }
  } else {
    return Error(path, "must be a number");
  }
  return static_cast<uint32_t>(std::min<uint64_t>(n, std::numeric_limits<uint32_t>::max()));
}

// A duration field that must be there and be > 0.
absl::StatusOr<Duration> ReadPositiveDuration(const json& obj, const char* key,
                                              std::string_view at) {
  const std::string path = absl::StrCat(std::string(at), ".", key);
  auto it = obj.find(key);
  if (it == obj.end()) return Error(path, "is required");
  std::optional<Duration> d =
      it->is_string() ? ParseJsonDuration(it->get_ref<const std::string&>()) : std::nullopt;
  if (!d || *d <= Duration::zero()) {
    return Error(path,
                 absl::StrCat(it->dump(), " is not a positive duration (want e.g. \"0.1s\")"));
  }
  return *d;
}

// A list of status codes (names in any case, or numbers), as a bit set.
absl::StatusOr<uint32_t> ReadStatusCodes(const json& codes, const std::string& at);

// A policy's maxAttempts: required, an integer of at least 2; more than 5
// is capped at 5, as gRPC does.
absl::StatusOr<int> ReadMaxAttempts(const json& policy, const std::string& at) {
  auto max = policy.find("maxAttempts");
  if (max == policy.end() || !max->is_number_integer() || max->get<int64_t>() < 2) {
    return Error(at + ".maxAttempts", "is required and must be an integer of at least 2");
  }
  return static_cast<int>(std::min<int64_t>(max->get<int64_t>(), 5));
}

// A JSON duration string ("1.5s").
absl::StatusOr<Duration> ReadDuration(const json& v, const std::string& path) {
  std::optional<Duration> d =
      v.is_string() ? ParseJsonDuration(v.get_ref<const std::string&>()) : std::nullopt;
  if (!d) return Error(path, absl::StrCat(v.dump(), " is not a duration (want e.g. \"1.5s\")"));
  return *d;
}

absl::StatusOr<RetryPolicy> ReadRetryPolicy(const json& p, const std::string& at) {
  if (!p.is_object()) return Error(at, "must be an object");
  RetryPolicy r;
  absl::StatusOr<int> max = ReadMaxAttempts(p, at);
  if (!max.ok()) return max.status();
  r.max_attempts = *max;
  absl::StatusOr<Duration> initial = ReadPositiveDuration(p, "initialBackoff", at);
  if (!initial.ok()) return initial.status();
  absl::StatusOr<Duration> most = ReadPositiveDuration(p, "maxBackoff", at);
  if (!most.ok()) return most.status();
  r.initial_backoff = *initial;
  r.max_backoff = *most;
  auto mult = p.find("backoffMultiplier");
  if (mult == p.end() || !mult->is_number() || mult->get<double>() <= 0) {
    return Error(at + ".backoffMultiplier", "is required and must be a number above 0");
  }
  r.backoff_multiplier = mult->get<double>();
  if (p.contains("perAttemptRecvTimeout")) {
    absl::StatusOr<Duration> recv = ReadPositiveDuration(p, "perAttemptRecvTimeout", at);
    if (!recv.ok()) return recv.status();
    r.per_attempt_recv_timeout = *recv;
  }
  // With a perAttemptRecvTimeout the codes may be empty (only timed-out
  // attempts are retried), as in gRPC.
  auto codes = p.find("retryableStatusCodes");
  if (codes == p.end() || !codes->is_array() || (codes->empty() && !r.per_attempt_recv_timeout)) {
    return Error(at + ".retryableStatusCodes",
                 "is required and must be a non-empty array (or an empty one with "
                 "perAttemptRecvTimeout)");
  }
  absl::StatusOr<uint32_t> retryable = ReadStatusCodes(*codes, at + ".retryableStatusCodes");
  if (!retryable.ok()) return retryable.status();
  r.retryable_codes = *retryable;
  return r;
}

absl::StatusOr<HedgingPolicy> ReadHedgingPolicy(const json& p, const std::string& at) {
  if (!p.is_object()) return Error(at, "must be an object");
  HedgingPolicy h;
  absl::StatusOr<int> max = ReadMaxAttempts(p, at);
  if (!max.ok()) return max.status();
  h.max_attempts = *max;
  if (auto d = p.find("hedgingDelay"); d != p.end()) {
    absl::StatusOr<Duration> delay = ReadDuration(*d, at + ".hedgingDelay");
    if (!delay.ok()) return delay.status();
    h.hedging_delay = *delay;
  }
  if (auto codes = p.find("nonFatalStatusCodes"); codes != p.end()) {
    if (!codes->is_array()) return Error(at + ".nonFatalStatusCodes", "must be an array");
    absl::StatusOr<uint32_t> non_fatal = ReadStatusCodes(*codes, at + ".nonFatalStatusCodes");
    if (!non_fatal.ok()) return non_fatal.status();
    h.non_fatal_codes = *non_fatal;
  }
  return h;
}

absl::StatusOr<uint32_t> ReadStatusCodes(const json& codes, const std::string& at) {
  uint32_t set = 0;
  for (size_t i = 0; i < codes.size(); ++i) {
    const json& c = codes[i];
    int code = -1;
    if (c.is_number_integer() && c.get<int64_t>() >= 0 && c.get<int64_t>() <= 16) {
      code = static_cast<int>(c.get<int64_t>());
    } else if (c.is_string()) {
      std::string name = c.get<std::string>();
      for (char& ch : name) ch = static_cast<char>(std::toupper(ch));
      for (int k = 0; k <= 16; ++k) {
        if (name == StatusCodeName(static_cast<StatusCode>(k))) code = k;
      }
    }
    if (code < 0) {
      return Error(absl::StrCat(at, "[", i, "]"), absl::StrCat(c.dump(), " is not a status code"));
    }
    if (code == 0) return Error(absl::StrCat(at, "[", i, "]"), "OK is not a failure");
    set |= 1u << code;
  }
  return set;
}

absl::Status ReadMethodConfigs(const json& j, const ServiceConfigOptions& options,
                               ServiceConfig& out) {
  auto it = j.find("methodConfig");
  if (it == j.end()) return absl::OkStatus();
  if (!it->is_array()) return Error("methodConfig", "must be an array");
  absl::flat_hash_map<std::string, size_t> seen;  // name -> entry index
  for (size_t i = 0; i < it->size(); ++i) {
    const json& entry = (*it)[i];
    const std::string at = absl::StrCat("methodConfig[", i, "]");
    if (!entry.is_object()) return Error(at, "must be an object");
    MethodConfig mc;
    if (auto t = entry.find("timeout"); t != entry.end()) {
      absl::StatusOr<Duration> d = ReadDuration(*t, at + ".timeout");
      if (!d.ok()) return d.status();
      mc.timeout = *d;
    }
    if (auto w = entry.find("waitForReady"); w != entry.end()) {
      if (!w->is_boolean()) return Error(at + ".waitForReady", "must be true or false");
      mc.wait_for_ready = w->get<bool>();
    }
    for (auto [key, field] :
         {std::pair{"maxRequestMessageBytes", &MethodConfig::max_request_message_bytes},
          std::pair{"maxResponseMessageBytes", &MethodConfig::max_response_message_bytes}}) {
      if (auto f = entry.find(key); f != entry.end()) {
        absl::StatusOr<uint32_t> n = ReadUint32(*f, at + "." + key);
        if (!n.ok()) return n.status();
        mc.*field = *n;
      }
    }
    if (auto p = entry.find("retryPolicy"); p != entry.end()) {
      absl::StatusOr<RetryPolicy> r = ReadRetryPolicy(*p, at + ".retryPolicy");
      if (!r.ok()) return r.status();
      if (options.retries_enabled) mc.retry_policy = *r;
    }
    if (auto p = entry.find("hedgingPolicy"); p != entry.end()) {
      if (entry.contains("retryPolicy")) {
        return Error(at + ".hedgingPolicy",
                     "cannot be set with retryPolicy (gRFC A6: one or the other)");
      }
      absl::StatusOr<HedgingPolicy> h = ReadHedgingPolicy(*p, at + ".hedgingPolicy");
      if (!h.ok()) return h.status();
      if (options.retries_enabled) mc.hedging_policy = *h;
    }
    auto names = entry.find("name");
    if (names == entry.end()) continue;  // applies to no method
    if (!names->is_array()) return Error(at + ".name", "must be an array");
    for (size_t k = 0; k < names->size(); ++k) {
      const json& n = (*names)[k];
      const std::string nat = absl::StrCat(at, ".name[", k, "]");
      if (!n.is_object()) return Error(nat, "must be an object");
      std::string service, method;
      for (auto [field, dst] : {std::pair{"service", &service}, std::pair{"method", &method}}) {
        if (auto f = n.find(field); f != n.end()) {
          if (!f->is_string()) return Error(absl::StrCat(nat, ".", field), "must be a string");
          *dst = f->get<std::string>();
        }
      }
      if (service.empty() && !method.empty()) {
        return Error(nat, absl::StrCat("method \"", method, "\" without a service"));
      }
      std::string key = service.empty() ? "" : absl::StrCat(service, "/", method);
      if (auto [pos, fresh] = seen.emplace(key, i); !fresh) {
        return Error(nat,
                     absl::StrCat("the name ", key.empty() ? "(the default)" : "\"" + key + "\"",
                                  " is also in methodConfig[", pos->second, "]"));
      }
      out.methods[key] = mc;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<const LbConfig>> LbConfigNamed(const std::string& name) {
  if (std::shared_ptr<const LbPolicyFactory> f = FindLbPolicy(name)) return f->ParseConfig("{}");
  return absl::InvalidArgumentError(
      absl::StrCat("unknown load balancing policy \"", name,
                   "\" (registered: ", absl::StrJoin(LbPolicyNames(), ", "), ")"));
}

std::optional<Duration> ParseJsonDuration(std::string_view text) {
  if (text.size() < 2 || text.back() != 's') return std::nullopt;
  text.remove_suffix(1);
  const size_t dot = text.find('.');
  std::string_view whole = text.substr(0, dot);
  std::string_view frac = dot == std::string_view::npos ? std::string_view() : text.substr(dot + 1);
  if (whole.empty() || whole.size() > 12 || frac.size() > 9 ||
      (dot != std::string_view::npos && frac.empty())) {
    return std::nullopt;
  }
  int64_t seconds = 0, nanos = 0;
  for (char c : whole) {
    if (c < '0' || c > '9') return std::nullopt;
    seconds = seconds * 10 + (c - '0');
  }
  for (size_t i = 0; i < 9; ++i) {
    char c = i < frac.size() ? frac[i] : '0';
    if (c < '0' || c > '9') return std::nullopt;
    nanos = nanos * 10 + (c - '0');
  }
  constexpr int64_t kMaxSeconds = 315576000000;  // google.protobuf.Duration's limit
  if (seconds > kMaxSeconds) return std::nullopt;
  // Past what Duration holds (~292 years of nanoseconds): as good as forever.
  const int64_t representable =
      std::chrono::duration_cast<std::chrono::seconds>(Duration::max()).count() - 1;
  if (seconds >= representable) return Duration::max();
  return std::chrono::duration_cast<Duration>(std::chrono::seconds(seconds) +
                                              std::chrono::nanoseconds(nanos));
}

const MethodConfig* ServiceConfig::Find(std::string_view path) const {
  if (methods.empty()) return nullptr;
  if (!path.empty() && path[0] == '/') path.remove_prefix(1);
  auto look = [&](std::string_view key) -> const MethodConfig* {
    auto it = methods.find(absl::string_view(key.data(), key.size()));
    return it == methods.end() ? nullptr : &it->second;
  };
  if (const MethodConfig* m = look(path)) return m;
  if (size_t slash = path.find('/'); slash != std::string_view::npos) {
    if (const MethodConfig* m = look(path.substr(0, slash + 1))) return m;
  }
  return look("");
}

absl::StatusOr<ServiceConfig> ParseServiceConfig(std::string_view text,
                                                 const ServiceConfigOptions& options) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Error("", "not a JSON object");
  ServiceConfig out;
  if (absl::Status s = ReadLb(j, out); !s.ok()) return s;
  if (absl::Status s = ReadMethodConfigs(j, options, out); !s.ok()) return s;
  if (auto it = j.find("retryThrottling"); it != j.end()) {
    if (!it->is_object()) return Error("retryThrottling", "must be an object");
    RetryThrottling t;
    auto max = it->find("maxTokens");
    if (max == it->end() || !max->is_number() || max->get<double>() <= 0 ||
        max->get<double>() > 1000) {
      return Error("retryThrottling.maxTokens", "is required and must be in (0, 1000]");
    }
    auto ratio = it->find("tokenRatio");
    if (ratio == it->end() || !ratio->is_number() || ratio->get<double>() <= 0) {
      return Error("retryThrottling.tokenRatio", "is required and must be above 0");
    }
    t.max_tokens_milli = static_cast<int64_t>(max->get<double>() * 1000);
    t.token_ratio_milli = std::max<int64_t>(1, static_cast<int64_t>(ratio->get<double>() * 1000));
    if (options.retries_enabled) out.retry_throttling = t;
  }
  if (auto it = j.find("healthCheckConfig"); it != j.end()) {
    if (!it->is_object()) return Error("healthCheckConfig", "must be an object");
    auto name = it->find("serviceName");
    if (name != it->end() && !name->is_string()) {
      return Error("healthCheckConfig.serviceName", "must be a string");
    }
    // gRPC: a healthCheckConfig without serviceName checks nothing.
    if (name != it->end()) out.health_check_service = name->get<std::string>();
  }
  return out;
}

}  // namespace ringrpc::channel
