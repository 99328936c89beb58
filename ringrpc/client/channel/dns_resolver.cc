#include "ringrpc/client/channel/dns_resolver.h"

#include <ares.h>
#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ringrpc/base/fork.h"
#include "ringrpc/client/channel/backoff.h"

namespace ringrpc::channel {
namespace {

using std::chrono::milliseconds;

constexpr std::string_view kTxtPrefix = "grpc_config=";

// RFC 6761 6.3: "localhost." and names under it are the loopback address.
bool IsLocalhost(std::string_view host) {
  std::string h = absl::AsciiStrToLower(absl::string_view(host.data(), host.size()));
  if (!h.empty() && h.back() == '.') h.pop_back();
  return h == "localhost" || absl::EndsWith(h, ".localhost");
}

}  // namespace

std::optional<AddressList> ResolveLocally(std::string_view host, uint16_t port) {
  if (IsLocalhost(host)) {
    AddressList list;
    for (const char* ip : {"[::1]", "127.0.0.1"}) {
      list.push_back(*transport::Address::Parse(absl::StrCat(ip, ":", port)));
    }
    return list;
  }
  // inet_pton, strict: only a literal that names exactly one address
  // (a dotted quad, or IPv6 text) skips DNS.
  in6_addr scratch;
  const std::string h(host);
  const bool v4 = inet_pton(AF_INET, h.c_str(), &scratch) == 1;
  if (!v4 && inet_pton(AF_INET6, h.c_str(), &scratch) != 1) return std::nullopt;
  absl::StatusOr<transport::Address> a =
      transport::Address::Parse(v4 ? absl::StrCat(h, ":", port) : absl::StrCat("[", h, "]:", port));
  if (!a.ok()) return std::nullopt;
  return AddressList{*a};
}

namespace {

// What one resolution collects; c-ares calls back on the resolver thread.
struct Pending {
  int outstanding = 0;
  uint16_t port = 0;
  AddressList addresses;
  int addr_status = ARES_SUCCESS;
  std::optional<std::string> txt;  // the grpc_config= payload
};

void OnAddrInfo(void* arg, int status, int /*timeouts*/, ares_addrinfo* result) {
  auto* p = static_cast<Pending*>(arg);
  --p->outstanding;
  p->addr_status = status;
  if (result == nullptr) return;
  for (ares_addrinfo_node* n = result->nodes; n != nullptr; n = n->ai_next) {
    if (n->ai_family != AF_INET && n->ai_family != AF_INET6) continue;
    transport::Address a;
    std::memcpy(&a.storage, n->ai_addr, n->ai_addrlen);
    a.len = n->ai_addrlen;
    // The port is the target's (c-ares sets it from the service string,
    // which is numeric; set it again so nothing depends on that).
    if (n->ai_family == AF_INET) {
      reinterpret_cast<sockaddr_in*>(&a.storage)->sin_port = htons(p->port);
    } else {
      reinterpret_cast<sockaddr_in6*>(&a.storage)->sin6_port = htons(p->port);
    }
    const std::string name = a.ToString();
    if (std::none_of(p->addresses.begin(), p->addresses.end(),
                     [&](const transport::Address& b) { return b.ToString() == name; })) {
      p->addresses.push_back(a);
    }
  }
  ares_freeaddrinfo(result);
}

// gRFC A2: the record whose first string starts with "grpc_config=", its
// strings joined.
void OnTxt(void* arg, int status, int /*timeouts*/, unsigned char* buf, int len) {
  auto* p = static_cast<Pending*>(arg);
  --p->outstanding;
  if (status != ARES_SUCCESS) return;  // no record: no service config
  ares_txt_ext* reply = nullptr;
  if (ares_parse_txt_reply_ext(buf, len, &reply) != ARES_SUCCESS) return;
  bool in_config = false;
  for (ares_txt_ext* t = reply; t != nullptr; t = t->next) {
    std::string_view chunk(reinterpret_cast<const char*>(t->txt), t->length);
    if (t->record_start) {
      if (in_config) break;  // the config record ended
      in_config = chunk.rfind(kTxtPrefix, 0) == 0;
      if (in_config) p->txt = std::string(chunk.substr(kTxtPrefix.size()));
    } else if (in_config) {
      p->txt->append(chunk);
    }
  }
  ares_free_data(reply);
}

std::string AresError(int status) {
  switch (status) {
    case ARES_ENOTFOUND:
    case ARES_ENODATA:
      return "no such name (NXDOMAIN or no A/AAAA record)";
    case ARES_ETIMEOUT:
      return "the DNS server did not answer";
    case ARES_ECONNREFUSED:
      return "the DNS server refused the connection";
    default:
      return ares_strerror(status);
  }
}

void InitAresOnce() {
  static std::once_flag once;
  std::call_once(once, [] { ares_library_init(ARES_LIB_INIT_ALL); });
}

}  // namespace

absl::StatusOr<std::optional<std::string>> ChooseServiceConfig(std::string_view payload,
                                                               std::string_view hostname,
                                                               int percent) {
  auto bad = [](std::string why) {
    return absl::InvalidArgumentError(absl::StrCat("DNS TXT record grpc_config: ", why));
  };
  nlohmann::json choices = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (choices.is_discarded()) return bad("not valid JSON");
  if (!choices.is_array()) return bad("not a JSON array of choices");
  auto lists = [](const nlohmann::json& list, std::string_view want) {
    for (const auto& v : list) {
      if (v.is_string() && v.get_ref<const std::string&>() == want) return true;
    }
    return false;
  };
  for (size_t i = 0; i < choices.size(); ++i) {
    const nlohmann::json& c = choices[i];
    const std::string at = absl::StrCat("[", i, "]");
    if (!c.is_object()) return bad(at + " is not an object");
    for (const auto& [key, value] : c.items()) {
      if (key != "clientLanguage" && key != "clientHostname" && key != "percentage" &&
          key != "serviceConfig") {
        return bad(absl::StrCat(at, " has the unknown field \"", key, "\""));
      }
    }
    for (const char* field : {"clientLanguage", "clientHostname"}) {
      if (c.contains(field) && !c[field].is_array()) {
        return bad(absl::StrCat(at, ".", field, " is not an array"));
      }
    }
    if (c.contains("percentage") &&
        (!c["percentage"].is_number_integer() || c["percentage"].get<int64_t>() < 0 ||
         c["percentage"].get<int64_t>() > 100)) {
      return bad(at + ".percentage is not an integer 0..100");
    }
    if (!c.contains("serviceConfig") || !c["serviceConfig"].is_object()) {
      return bad(at + ".serviceConfig is missing or not an object");
    }
    if (c.contains("clientLanguage") && !lists(c["clientLanguage"], "c++")) continue;
    if (c.contains("clientHostname") && !lists(c["clientHostname"], hostname)) continue;
    if (c.contains("percentage") && percent >= c["percentage"].get<int>()) continue;
    return std::optional<std::string>(c["serviceConfig"].dump());
  }
  return std::optional<std::string>();
}

struct DnsResolver::Lookup {
  ares_channel channel = nullptr;
  ~Lookup() {
    if (channel != nullptr) ares_destroy(channel);
  }
};

DnsResolver::DnsResolver(std::string host, uint16_t port, Options options)
    : host_(std::move(host)), port_(port), options_(std::move(options)) {
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

DnsResolver::~DnsResolver() {
  Shutdown();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void DnsResolver::Start(ResolverListener listener) {
  MutexLock lock(&mu_);
  listener_ = std::move(listener);
  requested_ = true;
  thread_ = std::thread([this] { Loop(); });
}

bool DnsResolver::ForkedAway() const { return ForkGeneration() != fork_generation_; }

void DnsResolver::RequestReresolution() {
  if (ForkedAway()) return;  // no thread here to resolve (see Shutdown)
  MutexLock lock(&mu_);
  requested_ = true;
  cv_.Signal();
}

void DnsResolver::Shutdown() {
  if (ForkedAway()) {
    // A child of the process that made this resolver: its thread is not
    // here to join, its mutex may have been held by that thread at the
    // fork, and the eventfd is shared with the parent's (a write would wake
    // the parent's thread). None is touched.
    if (thread_.joinable()) AbandonForever(std::make_unique<std::thread>(std::move(thread_)));
    return;
  }
  {
    MutexLock lock(&mu_);
    stop_ = true;
    cv_.Signal();
  }
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
}

namespace {

// What one lookup found: the addresses and the chosen service config, or
// why there are none (a timeout, c-ares' error, no address). `percent`
// is A2's draw for the service config's percentage.
absl::StatusOr<ResolverResult> Outcome(Pending& p, bool timed_out, const std::string& host,
                                       const std::string& asked, Duration query_timeout,
                                       int percent) {
  const auto timeout_ms = std::chrono::duration_cast<milliseconds>(query_timeout).count();
  if (timed_out || (p.addr_status == ARES_ECANCELLED && p.addresses.empty())) {
    return absl::UnavailableError(absl::StrCat("DNS resolution of ", host, " timed out after ",
                                               timeout_ms, " ms (asked ", asked, ")"));
  }
  if (p.addr_status != ARES_SUCCESS && p.addresses.empty()) {
    return absl::UnavailableError(absl::StrCat(
        "DNS resolution of ", host, " failed: ", AresError(p.addr_status), " (asked ", asked, ")"));
  }
  if (p.addresses.empty()) {
    return absl::UnavailableError(
        absl::StrCat("DNS resolution of ", host, " found no address (asked ", asked, ")"));
  }
  ResolverResult result{std::move(p.addresses), std::nullopt};
  if (p.txt) {
    char hostname[256] = {};
    ::gethostname(hostname, sizeof hostname - 1);
    absl::StatusOr<std::optional<std::string>> chosen =
        ChooseServiceConfig(*p.txt, hostname, percent);
    if (chosen.ok()) {
      result.service_config = std::move(*chosen);
    } else {
      result.service_config_error = chosen.status();
    }
  }
  return result;
}

}  // namespace

absl::StatusOr<ResolverResult> DnsResolver::ResolveOnce(void* ares) {
  auto channel = static_cast<ares_channel>(ares);
  const std::string asked = options_.server.empty() ? "the system's DNS servers" : options_.server;
  Pending p;
  p.port = port_;
  p.outstanding = options_.request_service_config ? 2 : 1;
  ares_addrinfo_hints hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = ARES_AI_NUMERICSERV;
  const std::string port = std::to_string(port_);
  ares_getaddrinfo(channel, host_.c_str(), port.c_str(), &hints, &OnAddrInfo, &p);
  if (options_.request_service_config) {
    const std::string txt_name = absl::StrCat("_grpc_config.", host_);
    ares_query(channel, txt_name.c_str(), ns_c_in, ns_t_txt, &OnTxt, &p);
  }
  const bool limited = options_.query_timeout > Duration::zero();
  const TimePoint deadline = Clock::now() + options_.query_timeout;
  bool timed_out = false;
  while (p.outstanding > 0) {
    ares_socket_t socks[ARES_GETSOCK_MAXNUM];
    const int bits = ares_getsock(channel, socks, ARES_GETSOCK_MAXNUM);
    std::vector<pollfd> fds{{wake_fd_, POLLIN, 0}};
    for (int i = 0; i < ARES_GETSOCK_MAXNUM; ++i) {
      short events = (ARES_GETSOCK_READABLE(bits, i) ? POLLIN : 0) |
                     (ARES_GETSOCK_WRITABLE(bits, i) ? POLLOUT : 0);
      if (events != 0) fds.push_back({socks[i], events, 0});
    }
    // c-ares' next retransmission, or our deadline, whichever is first.
    timeval max_tv{1, 0};
    if (limited) {
      auto left = std::max(Duration::zero(), deadline - Clock::now());
      auto us = std::chrono::duration_cast<std::chrono::microseconds>(left).count();
      max_tv = {static_cast<time_t>(us / 1000000), static_cast<suseconds_t>(us % 1000000)};
    }
    timeval tv{};
    ares_timeout(channel, &max_tv, &tv);
    int wait_ms = static_cast<int>(tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000);
    int n = ::poll(fds.data(), fds.size(), wait_ms);
    if (fds[0].revents != 0) {
      bool stop;
      {
        MutexLock lock(&mu_);
        stop = stop_;
      }
      if (stop) {
        ares_cancel(channel);  // calls back with ARES_ECANCELLED
        return absl::CancelledError("resolver shut down");
      }
    }
    bool any = false;
    for (size_t i = 1; n > 0 && i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      any = true;
      bool r = (fds[i].revents & (POLLIN | POLLERR | POLLHUP)) != 0;
      bool w = (fds[i].revents & (POLLOUT | POLLERR | POLLHUP)) != 0;
      ares_process_fd(channel, r ? fds[i].fd : ARES_SOCKET_BAD, w ? fds[i].fd : ARES_SOCKET_BAD);
    }
    if (!any) ares_process_fd(channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);  // timeouts
    if (limited && p.outstanding > 0 && Clock::now() >= deadline) {
      timed_out = p.addr_status == ARES_SUCCESS && p.addresses.empty();
      ares_cancel(channel);
    }
  }
  return Outcome(p, timed_out, host_, asked, options_.query_timeout,
                 static_cast<int>(rng_() % 100));
}

void DnsResolver::Loop() {
  Lookup lookup;
  absl::Status init;
  InitAresOnce();
  ares_options opts{};
  int mask = 0;
  if (options_.query_timeout > Duration::zero()) {
    // Several tries within the query's time (c-ares doubles each wait).
    opts.timeout = static_cast<int>(std::clamp<int64_t>(
        std::chrono::duration_cast<milliseconds>(options_.query_timeout).count() / 4, 50, 5000));
    opts.tries = 3;
    mask |= ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES;
  }
  if (int rc = ares_init_options(&lookup.channel, &opts, mask); rc != ARES_SUCCESS) {
    lookup.channel = nullptr;
    init = absl::UnavailableError(absl::StrCat("DNS: c-ares did not start: ", ares_strerror(rc)));
  } else if (!options_.server.empty()) {
    if (int rc = ares_set_servers_ports_csv(lookup.channel, options_.server.c_str());
        rc != ARES_SUCCESS) {
      init = absl::UnavailableError(absl::StrCat("DNS: c-ares does not take the server ",
                                                 options_.server, ": ", ares_strerror(rc)));
    }
  }
  ConnectionBackoff backoff{BackoffConfig{}};
  // A failed resolution is tried again by itself at retry_at (max: none).
  TimePoint retry_at = TimePoint::max();
  auto last = Clock::now() - options_.min_interval;
  for (;;) {
    {
      MutexLock lock(&mu_);
      auto woken = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || requested_; };
      if (retry_at != TimePoint::max()) {
        cv_.WaitUntil(&mu_, retry_at, woken);
      } else {
        cv_.Wait(&mu_, woken);
      }
      if (stop_) return;
      // No more often than the minimum interval (waiting out the rest).
      auto next = last + options_.min_interval;
      if (Clock::now() < next &&
          cv_.WaitUntil(&mu_, next, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; })) {
        return;
      }
      requested_ = false;
    }
    absl::StatusOr<ResolverResult> result;
    if (!init.ok()) {
      result = init;
    } else if (std::optional<AddressList> local = ResolveLocally(host_, port_)) {
      result = ResolverResult{*std::move(local), std::nullopt};
    } else {
      result = ResolveOnce(lookup.channel);
      if (result.status().code() == absl::StatusCode::kCancelled) return;  // shut down
    }
    ++resolutions_;
    last = Clock::now();
    if (result.ok()) {
      backoff.Reset();
      retry_at = TimePoint::max();
    } else {
      retry_at = last + backoff.NextDelay(rng_());
    }
    ResolverListener listener;
    {
      MutexLock lock(&mu_);
      if (stop_) return;
      listener = listener_;
    }
    listener.Update(std::move(result));  // one call at a time: only this thread calls
  }
}

}  // namespace ringrpc::channel
