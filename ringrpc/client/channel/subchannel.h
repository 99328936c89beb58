// ringrpc/client/channel/subchannel.h — one resolved address: a small record all
// CQ threads share (connectivity state and reconnect backoff, so N threads
// never make N times the connection storm) and a pool::Pool whose per-
// thread shards hold that thread's HTTP/2 connections to the address.
//
// Threading: AddressRecord — any thread (a mutex, off the per-call path
// except on dial). Subchannel — shared; its pool hands each CQ thread its
// own shard.
#ifndef RINGRPC_CLIENT_CHANNEL_SUBCHANNEL_H_
#define RINGRPC_CLIENT_CHANNEL_SUBCHANNEL_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ringrpc/base/mutex.h"
#include "ringrpc/base/task.h"
#include "ringrpc/base/time.h"
#include "ringrpc/client/channel/backoff.h"
#include "ringrpc/client/channel/channel_config.h"
#include "ringrpc/client/channel/connectivity_state.h"
#include "ringrpc/client/runtime/cq_threads.h"
#include "ringrpc/client/subchannel_events.h"
#include "ringrpc/client/transport/http2_connection.h"
#include "ringrpc/pool/observer.h"
#include "ringrpc/pool/pool.h"

namespace ringrpc::channel {

class HealthWatch;

// What client-side health checking (gRFC A17, health_check.h) last heard.
enum class Health : uint8_t { kUnknown, kServing, kNotServing };

class AddressRecord {
 public:
  AddressRecord(transport::Address address, BackoffConfig backoff, uint64_t seed)
      : address_(address), name_(address.ToString()), backoff_(backoff), rng_(seed) {}

  const transport::Address& address() const { return address_; }
  const std::string& name() const { return name_; }
  ConnectivityState state() const { return state_.load(std::memory_order_acquire); }

  // OK to dial now (and the time a connect attempt may take), or
  // UNAVAILABLE carrying the last connect error while backing off.
  absl::StatusOr<Duration> MayDial(TimePoint now);
  // OK if a dial may start now; else UNAVAILABLE with the last connect
  // error (the address is backing off, for every thread).
  absl::Status CheckBackoff(TimePoint now) const;
  void OnConnected();  // SETTINGS arrived
  // Connections to this address that are open and not lost (no GOAWAY, no
  // failure), on every thread: the pool may still hold a lost one until it
  // next looks at it, this count drops at once. Held by an OpenConnection.
  int open_connections() const { return open_.load(std::memory_order_acquire); }
  class OpenConnection {
   public:
    explicit OpenConnection(std::shared_ptr<AddressRecord> r) : r_(std::move(r)) {
      r_->open_.fetch_add(1);
    }
    ~OpenConnection() { r_->open_.fetch_sub(1); }
    OpenConnection(const OpenConnection&) = delete;
    OpenConnection& operator=(const OpenConnection&) = delete;

   private:
    const std::shared_ptr<AddressRecord> r_;
  };
  void OnConnectFailed(const absl::Status& error, TimePoint now);
  absl::Status last_error() const;
  TimePoint next_attempt() const;
  uint64_t connect_attempts() const { return attempts_.load(); }
  // The keepalive time this address's new connections use: the configured
  // one, doubled for each GOAWAY ENHANCE_YOUR_CALM "too_many_pings" (gRFC
  // A8), at most INT_MAX ms.
  std::optional<Duration> KeepaliveTime(std::optional<Duration> configured) const;
  void OnTooManyPings() { keepalive_doublings_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void Set(ConnectivityState s);

  const transport::Address address_;
  const std::string name_;
  std::atomic<ConnectivityState> state_{ConnectivityState::kIdle};
  std::atomic<uint64_t> attempts_{0};
  std::atomic<int> open_{0};
  std::atomic<int> keepalive_doublings_{0};
  mutable Mutex mu_;
  ConnectionBackoff backoff_ ABSL_GUARDED_BY(mu_);
  uint64_t rng_ ABSL_GUARDED_BY(mu_);
  TimePoint next_attempt_ ABSL_GUARDED_BY(mu_){};
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
};

// The pool's manager: dials the address on the calling CQ thread's loop.
class EventHub;

struct SubchannelManager {
  using Connection = std::shared_ptr<transport::Http2Connection>;
  using Detached = transport::DetachedConnection;

  std::shared_ptr<AddressRecord> record;
  transport::ConnectionOptions options;
  // Hears kConnectionLost when a connection made here is lost.
  std::shared_ptr<EventHub> events;

  Task<absl::StatusOr<Connection>> Connect();
  // A connection goes back into use only if it still takes new streams.
  absl::Status Recycle(Connection& c);
  uint32_t Capacity(const Connection& c) { return c->max_concurrent_streams(); }
  void Disconnect(Connection&& c) { c.reset(); }

  // The reservoir (decision 0013): an idle connection parks once its reader
  // has given up its receive (the reaper's Quiesce asks it to); it attaches
  // on the calling CQ thread's loop.
  bool Parkable(Connection& c) { return c->Quiescent(); }
  void Quiesce(Connection& c) { c->TryQuiesce(); }
  absl::StatusOr<Detached> Detach(Connection&& c) {
    return transport::Http2Connection::Detach(std::move(c));
  }
  Task<absl::StatusOr<Connection>> Attach(Detached&& d);
};

using SubchannelPool = pool::Pool<SubchannelManager>;
using SubchannelLease = pool::Lease<SubchannelManager>;

// Fans a subchannel's events out to the listeners of the channels attached
// to it. Also the pool's observer (connect, retire, park, unpark).
class EventHub final : public pool::PoolObserver {
 public:
  explicit EventHub(std::string address) : address_(std::move(address)) {}
  void Add(std::shared_ptr<SubchannelEventListener> l);
  void Remove(const std::shared_ptr<SubchannelEventListener>& l);
  void Emit(SubchannelEvent::Kind kind, std::string reason = "");
  void OnPoolEvent(const pool::PoolEvent& e) override;

 private:
  const std::string address_;
  Mutex mu_;
  std::vector<std::pair<std::shared_ptr<SubchannelEventListener>, int>> listeners_
      ABSL_GUARDED_BY(mu_);
};

// Everything about an address's connections that shapes them: channels
// whose keys are equal (value equality of every field, no hashing) share
// one subchannel.
struct SharingKey {
  std::string address;
  // The parts of the channel's configuration that shape a connection, whole
  // (a field added to one of these structs is part of the key by itself).
  transport::ConnectionOptions connection;
  BackoffConfig backoff;
  pool::PoolConfig pool;
  size_t reservoir_capacity = 0;
  const void* cq = nullptr;  // the CQ thread set the shards live on
  // The health check's service name (A17): channels that check another
  // service (or none) do not share the address's health.
  std::optional<std::string> health_service;
  bool operator==(const SharingKey&) const = default;

  static SharingKey Of(const std::string& address, const ChannelConfig& c, const void* cq,
                       std::optional<std::string> health_service);
};

struct Subchannel {
  Subchannel(std::shared_ptr<AddressRecord> r, SubchannelPool p, std::shared_ptr<EventHub> e)
      : record(std::move(r)), pool(std::move(p)), events(std::move(e)) {}

  std::shared_ptr<AddressRecord> record;
  SubchannelPool pool;
  std::shared_ptr<EventHub> events;
  int attachments = 0;  // guarded by the registry's mutex
  // LbAddressList::shared_count: the LB policy's counter for this address,
  // seen by every thread (and every channel that shares the subchannel);
  // least_request at channel scope counts calls in flight in it.
  std::atomic<uint32_t> lb_count{0};
  // Client-side health checking (null: off for this subchannel).
  std::shared_ptr<HealthWatch> health;

  // The address may take a new call: its health check (if any) says
  // SERVING. Any thread.
  bool Healthy() const;
  // The address's state as the LB policy sees it: the record's, except
  // that a health check still waiting for its answer is CONNECTING and one
  // that said anything but SERVING is TRANSIENT_FAILURE.
  ConnectivityState PickState() const;
};

// The process-wide table of shared subchannels (seeds/003: refcounted
// attach and detach; the pool closes when the last channel detaches).
class SubchannelRegistry {
 public:
  static SubchannelRegistry& Global();

  // A subchannel for `address` under `config`, shared with every channel
  // whose SharingKey is equal, or a private one when `local`; health-checked
  // with `health_service` (A17) if set. `listeners` (null ones skipped)
  // hear every event from the first on: they are added before a fresh
  // subchannel's health check starts.
  using Listeners = std::vector<std::shared_ptr<SubchannelEventListener>>;
  absl::StatusOr<std::shared_ptr<Subchannel>> Attach(
      const transport::Address& address, const ChannelConfig& config, runtime::CqThreads& cq,
      bool local, uint64_t seed, const Listeners& listeners,
      std::optional<std::string> health_service = std::nullopt);
  // Ends one attachment (the listeners Attach added stop hearing). The last
  // one closes the pool on every CQ thread (each thread closes its own
  // shard) and forgets the subchannel.
  void Detach(const std::shared_ptr<Subchannel>& sc, runtime::CqThreads& cq,
              const Listeners& listeners);
  size_t shared_count();

 private:
  Mutex mu_;
  std::vector<std::pair<SharingKey, std::shared_ptr<Subchannel>>> shared_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_SUBCHANNEL_H_
