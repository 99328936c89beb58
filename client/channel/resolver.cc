#include "client/channel/resolver.h"

#include <netdb.h>
#include <netinet/in.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace ringrpc::channel {

DnsResolver::DnsResolver(std::string host, uint16_t port, Duration min_interval)
    : host_(std::move(host)), port_(port), min_interval_(min_interval) {}

DnsResolver::~DnsResolver() { Shutdown(); }

void DnsResolver::Start(ResolverListener listener) {
  MutexLock lock(&mu_);
  listener_ = std::move(listener);
  requested_ = true;
  thread_ = std::thread([this] { Loop(); });
}

void DnsResolver::RequestReresolution() {
  MutexLock lock(&mu_);
  requested_ = true;
  cv_.Signal();
}

void DnsResolver::Shutdown() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
    cv_.Signal();
  }
  if (thread_.joinable()) thread_.join();
}

void DnsResolver::Loop() {
  auto last = Clock::now() - min_interval_;
  for (;;) {
    {
      MutexLock lock(&mu_);
      cv_.Wait(&mu_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || requested_; });
      if (stop_) return;
      // No more often than the minimum interval (waiting out the rest).
      auto next = last + min_interval_;
      if (Clock::now() < next &&
          cv_.WaitUntil(&mu_, next, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; })) {
        return;
      }
      requested_ = false;
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    std::string port = std::to_string(port_);
    int rc = ::getaddrinfo(host_.c_str(), port.c_str(), &hints, &res);
    absl::StatusOr<AddressList> result;
    if (rc != 0) {
      result = absl::UnavailableError(
          absl::StrCat("DNS resolution of ", host_, " failed: ", gai_strerror(rc)));
    } else {
      AddressList list;
      for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
        transport::Address a;
        std::memcpy(&a.storage, ai->ai_addr, ai->ai_addrlen);
        a.len = ai->ai_addrlen;
        bool dup = false;
        for (auto& b : list) dup |= b.ToString() == a.ToString();
        if (!dup) list.push_back(a);
      }
      ::freeaddrinfo(res);
      result = std::move(list);
    }
    ++resolutions_;
    last = Clock::now();
    ResolverListener listener;
    {
      MutexLock lock(&mu_);
      if (stop_) return;
      listener = listener_;
    }
    listener(std::move(result));  // one call at a time: only this thread calls
  }
}

}  // namespace ringrpc::channel
