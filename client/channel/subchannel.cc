#include "client/channel/subchannel.h"

#include "absl/strings/str_cat.h"
#include "pool/retire.h"

namespace ringrpc::channel {

const char* ConnectivityStateName(ConnectivityState s) {
  switch (s) {
    case ConnectivityState::kIdle: return "IDLE";
    case ConnectivityState::kConnecting: return "CONNECTING";
    case ConnectivityState::kReady: return "READY";
    case ConnectivityState::kTransientFailure: return "TRANSIENT_FAILURE";
    case ConnectivityState::kShutdown: return "SHUTDOWN";
  }
  return "?";
}

void AddressRecord::Set(ConnectivityState s) {
  if (state_.exchange(s, std::memory_order_acq_rel) != s && on_change_) on_change_();
}

absl::Status AddressRecord::CheckBackoff(TimePoint now) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (now >= next_attempt_) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("backing off reconnecting to ", name_,
                                             " after: ", last_error_.message()));
}

absl::StatusOr<Duration> AddressRecord::MayDial(TimePoint now) {
  if (absl::Status s = CheckBackoff(now); !s.ok()) return s;
  attempts_.fetch_add(1);
  if (state() != ConnectivityState::kReady) Set(ConnectivityState::kConnecting);
  std::lock_guard<std::mutex> lock(mu_);
  return backoff_.ConnectDeadline();
}

void AddressRecord::OnConnected() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    backoff_.Reset();
    next_attempt_ = TimePoint{};
  }
  Set(ConnectivityState::kReady);
}

void AddressRecord::OnConnectFailed(const absl::Status& error, TimePoint now) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_error_ = error;
    next_attempt_ = now + backoff_.NextDelay(pool::NextRandom(rng_));
  }
  Set(ConnectivityState::kTransientFailure);
}

absl::Status AddressRecord::last_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

TimePoint AddressRecord::next_attempt() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_attempt_;
}

pool::Task<absl::StatusOr<SubchannelManager::Connection>> SubchannelManager::Connect() {
  runtime::EventLoop* loop = runtime::EventLoop::Current();
  if (loop == nullptr) {
    co_return absl::FailedPreconditionError("subchannel: dial off a completion-queue thread");
  }
  absl::StatusOr<Duration> may = record->MayDial(loop->Now());
  if (!may.ok()) co_return may.status();
  transport::ConnectionOptions o = options;
  o.connect_timeout = *may;
  absl::StatusOr<Connection> c =
      co_await transport::Http2Connection::Connect(*loop, record->address(), o);
  if (c.ok()) {
    record->OnConnected();
  } else {
    record->OnConnectFailed(c.status(), loop->Now());
  }
  co_return c;
}

absl::Status SubchannelManager::Recycle(Connection& c) {
  if (c->accepting_streams()) return absl::OkStatus();
  return c->close_reason().ok() ? absl::UnavailableError("connection draining")
                                : c->close_reason();
}

absl::StatusOr<std::shared_ptr<Subchannel>> MakeSubchannel(const transport::Address& address,
                                                          const ChannelConfig& config,
                                                          uint64_t seed) {
  auto record = std::make_shared<AddressRecord>(address, config.backoff, seed);
  auto manager = std::make_shared<SubchannelManager>();
  manager->record = record;
  manager->options = config.connection;
  absl::StatusOr<SubchannelPool> p = SubchannelPool::Create(config.pool, manager);
  if (!p.ok()) return p.status();
  return std::make_shared<Subchannel>(Subchannel{record, *p});
}

}  // namespace ringrpc::channel
