#include "ringrpc/client/channel/subchannel.h"

#include <algorithm>
#include <climits>

#include "absl/strings/str_cat.h"
#include "ringrpc/base/random.h"
#include "ringrpc/client/channel/health_check.h"
#include "ringrpc/pool/reservoir.h"
#include "ringrpc/pool/retire.h"

namespace ringrpc::channel {

void AddressRecord::Set(ConnectivityState s) { state_.store(s, std::memory_order_release); }

absl::Status AddressRecord::CheckBackoff(TimePoint now) const {
  MutexLock lock(&mu_);
  if (now >= next_attempt_) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat("backing off reconnecting to ", name_, " after: ", last_error_.message()));
}

absl::StatusOr<Duration> AddressRecord::MayDial(TimePoint now) {
  if (absl::Status s = CheckBackoff(now); !s.ok()) return s;
  attempts_.fetch_add(1);
  if (state() != ConnectivityState::kReady) Set(ConnectivityState::kConnecting);
  MutexLock lock(&mu_);
  return backoff_.ConnectDeadline();
}

void AddressRecord::OnConnected() {
  {
    MutexLock lock(&mu_);
    backoff_.Reset();
    next_attempt_ = TimePoint{};
  }
  Set(ConnectivityState::kReady);
}

void AddressRecord::OnConnectFailed(const absl::Status& error, TimePoint now) {
  {
    MutexLock lock(&mu_);
    // A copy of its own: `error` is also the failed dial's answer to calls
    // on the dialling thread, and an absl::Status shares its message by a
    // reference count that Debian's Abseil (not built for TSAN) keeps out
    // of ThreadSanitizer's sight. Kept whole here, it is read and dropped
    // only under mu_.
    last_error_ = absl::Status(error.code(), std::string(error.message()));
    next_attempt_ = now + backoff_.NextDelay(NextRandom(rng_));
  }
  Set(ConnectivityState::kTransientFailure);
}

std::optional<Duration> AddressRecord::KeepaliveTime(std::optional<Duration> configured) const {
  if (!configured) return std::nullopt;
  const Duration cap = std::chrono::milliseconds(INT_MAX);
  Duration t = *configured;
  for (int i = keepalive_doublings_.load(std::memory_order_relaxed); i > 0 && t < cap; --i) t *= 2;
  return std::min(t, cap);
}

absl::Status AddressRecord::last_error() const {
  MutexLock lock(&mu_);
  return last_error_;
}

TimePoint AddressRecord::next_attempt() const {
  MutexLock lock(&mu_);
  return next_attempt_;
}

// HTTP/2's ENHANCE_YOUR_CALM error code (RFC 9113 section 7).
constexpr uint32_t kEnhanceYourCalm = 0xb;

Task<absl::StatusOr<SubchannelManager::Connection>> SubchannelManager::Connect() {
  runtime::EventLoop* loop = runtime::EventLoop::Current();
  if (loop == nullptr) {
    co_return absl::FailedPreconditionError("subchannel: dial off a completion-queue thread");
  }
  absl::StatusOr<Duration> may = record->MayDial(loop->Now());
  if (!may.ok()) co_return may.status();
  transport::ConnectionOptions o = options;
  // The backoff's deadline for this attempt, bounded by
  // ringrpc.connect_timeout_ms when the user set it (which before overwrote
  // nothing: a 300 ms setting still waited 20 s on a silent server).
  o.connect_timeout = std::min(options.connect_timeout, *may);
  o.keepalive_time = record->KeepaliveTime(options.keepalive_time);
  absl::StatusOr<Connection> c =
      co_await transport::Http2Connection::Connect(*loop, record->address(), o);
  if (c.ok()) {
    record->OnConnected();
    transport::Http2Connection* conn = c->get();  // the handler runs inside it
    // Counted open until lost, or until the connection goes with its
    // handler never run (retired by the pool).
    auto open = std::make_shared<AddressRecord::OpenConnection>(record);
    (*c)->OnLost([conn, record = record, events = events, configured = options.keepalive_time,
                  open = std::move(open)](const absl::Status& why) mutable {
      open.reset();  // before the event: whoever it wakes sees the count
      std::string reason(why.message());
      if (conn->goaway_code() == kEnhanceYourCalm && conn->goaway_debug() == "too_many_pings") {
        record->OnTooManyPings();
        if (std::optional<Duration> t = record->KeepaliveTime(configured)) {
          absl::StrAppend(&reason, "; keepalive time for this address now ",
                          std::chrono::duration_cast<std::chrono::milliseconds>(*t).count(), " ms");
        }
      }
      if (events) events->Emit(SubchannelEvent::Kind::kConnectionLost, std::move(reason));
    });
  } else {
    record->OnConnectFailed(c.status(), loop->Now());
  }
  co_return c;
}

Task<absl::StatusOr<SubchannelManager::Connection>> SubchannelManager::Attach(Detached&& d) {
  Detached mine = std::move(d);  // owned by this frame from the start
  runtime::EventLoop* loop = runtime::EventLoop::Current();
  if (loop == nullptr) {
    co_return absl::FailedPreconditionError("subchannel: attach off a completion-queue thread");
  }
  co_return transport::Http2Connection::Attach(*loop, std::move(mine));
}

absl::Status SubchannelManager::Recycle(Connection& c) {
  if (c->accepting_streams()) return absl::OkStatus();
  return c->close_reason().ok() ? absl::UnavailableError("connection draining") : c->close_reason();
}

const char* RetireName(pool::RetireReason r) {
  return pool::RetireReasonName(r).data();  // names are literals
}

// A listener given to several channels that share this subchannel hears
// each event once: entries are counted, not repeated.
void EventHub::Add(std::shared_ptr<SubchannelEventListener> l) {
  if (!l) return;
  MutexLock lock(&mu_);
  for (auto& [listener, n] : listeners_) {
    if (listener == l) {
      ++n;
      return;
    }
  }
  listeners_.emplace_back(std::move(l), 1);
}

void EventHub::Remove(const std::shared_ptr<SubchannelEventListener>& l) {
  if (!l) return;
  MutexLock lock(&mu_);
  for (auto it = listeners_.begin(); it != listeners_.end(); ++it) {
    if (it->first == l) {
      if (--it->second == 0) listeners_.erase(it);
      return;
    }
  }
}

void EventHub::Emit(SubchannelEvent::Kind kind, std::string reason) {
  std::vector<std::shared_ptr<SubchannelEventListener>> to;
  {
    MutexLock lock(&mu_);
    for (auto& entry : listeners_) to.push_back(entry.first);
  }
  SubchannelEvent e{kind, address_, std::move(reason)};
  for (auto& l : to) l->OnSubchannelEvent(e);
}

void EventHub::OnPoolEvent(const pool::PoolEvent& e) {
  switch (e.kind) {
    case pool::PoolEventKind::kConnect:
      Emit(SubchannelEvent::Kind::kConnect);
      break;
    case pool::PoolEventKind::kConnectFailed:
      Emit(SubchannelEvent::Kind::kConnectFailed);
      break;
    case pool::PoolEventKind::kRetire:
      Emit(SubchannelEvent::Kind::kRetire, RetireName(e.reason));
      break;
    case pool::PoolEventKind::kPark:
      Emit(SubchannelEvent::Kind::kPark);
      break;
    case pool::PoolEventKind::kUnpark:
      Emit(SubchannelEvent::Kind::kUnpark);
      break;
  }
}

SharingKey SharingKey::Of(const std::string& address, const ChannelConfig& c, const void* cq,
                          std::optional<std::string> health_service) {
  return SharingKey{address,
                    c.connection,
                    c.backoff,
                    c.pool,
                    c.reservoir_capacity,
                    cq,
                    std::move(health_service)};
}

bool Subchannel::Healthy() const {
  return health == nullptr || health->state() == Health::kServing;
}

ConnectivityState Subchannel::PickState() const {
  const ConnectivityState s = record->state();
  if (health == nullptr || s == ConnectivityState::kTransientFailure) return s;
  switch (health->state()) {
    case Health::kServing:
      return s;
    case Health::kUnknown:
      return ConnectivityState::kConnecting;
    case Health::kNotServing:
      return ConnectivityState::kTransientFailure;
  }
  return s;
}

SubchannelRegistry& SubchannelRegistry::Global() {
  static auto* registry = new SubchannelRegistry();  // lives for the process
  return *registry;
}

absl::StatusOr<std::shared_ptr<Subchannel>> SubchannelRegistry::Attach(
    const transport::Address& address, const ChannelConfig& config, runtime::CqThreads& cq,
    bool local, uint64_t seed, const Listeners& listeners,
    std::optional<std::string> health_service) {
  std::string name = address.ToString();
  SharingKey key = SharingKey::Of(name, config, &cq, std::move(health_service));
  MutexLock lock(&mu_);
  std::shared_ptr<Subchannel> sc;
  if (!local) {
    for (auto& [k, s] : shared_) {
      if (k == key) {
        sc = s;
        break;
      }
    }
  }
  bool fresh = sc == nullptr;
  if (fresh) {
    auto record = std::make_shared<AddressRecord>(address, config.backoff, seed);
    auto events = std::make_shared<EventHub>(name);
    auto manager = std::make_shared<SubchannelManager>();
    manager->record = record;
    manager->options = config.connection;
    manager->events = events;
    pool::PoolConfig pc = config.pool;
    pc.observer = events;
    std::shared_ptr<pool::Exchange<SubchannelManager::Detached>> reservoir;
    if (config.reservoir_capacity > 0) {
      reservoir =
          std::make_shared<pool::Reservoir<SubchannelManager::Detached>>(config.reservoir_capacity);
    }
    absl::StatusOr<SubchannelPool> p = SubchannelPool::Create(pc, manager, reservoir);
    if (!p.ok()) return p.status();
    sc = std::make_shared<Subchannel>(record, *p, events);
    if (key.health_service) {
      sc->health =
          std::make_shared<HealthWatch>(*key.health_service, record, *p, events, config.backoff);
    }
    if (!local) shared_.emplace_back(key, sc);
  }
  for (const auto& l : listeners) sc->events->Add(l);
  ++sc->attachments;
  if (fresh) sc->events->Emit(SubchannelEvent::Kind::kInit);
  sc->events->Emit(SubchannelEvent::Kind::kAttach);
  if (fresh && sc->health) {
    // One Watch stream for the address, on a CQ thread chosen by its name
    // (addresses spread over the threads). Started only now: its first
    // answer can come before this thread runs again, and the listeners
    // must hear it (a state change is said once).
    sc->health->Start(cq, std::hash<std::string>()(name) % cq.size());
  }
  return sc;
}

void SubchannelRegistry::Detach(const std::shared_ptr<Subchannel>& sc, runtime::CqThreads& cq,
                                const Listeners& listeners) {
  bool last;
  {
    MutexLock lock(&mu_);
    last = --sc->attachments == 0;
    if (last) {
      std::erase_if(shared_, [&](auto& entry) { return entry.second == sc; });
    }
  }
  sc->events->Emit(SubchannelEvent::Kind::kDetach);
  if (last) {
    sc->events->Emit(SubchannelEvent::Kind::kClose);
    if (sc->health) sc->health->Stop();
    SubchannelPool pool = sc->pool;
    for (size_t i = 0; i < cq.size(); ++i) cq.Post(i, [pool] { pool.Close(); });
  }
  for (const auto& l : listeners) sc->events->Remove(l);
}

size_t SubchannelRegistry::shared_count() {
  MutexLock lock(&mu_);
  return shared_.size();
}

}  // namespace ringrpc::channel
