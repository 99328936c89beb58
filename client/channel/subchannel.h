// client/channel/subchannel.h — one resolved address: a small record all
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
#include <string>

#include "absl/status/statusor.h"
#include "client/channel/backoff.h"
#include "client/channel/channel_config.h"
#include "client/transport/http2_connection.h"
#include "pool/pool.h"

namespace ringrpc::channel {

enum class ConnectivityState { kIdle, kConnecting, kReady, kTransientFailure, kShutdown };
const char* ConnectivityStateName(ConnectivityState s);

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
  void OnConnected();                                   // SETTINGS arrived
  void OnConnectFailed(const absl::Status& error, TimePoint now);
  absl::Status last_error() const;
  TimePoint next_attempt() const;
  uint64_t connect_attempts() const { return attempts_.load(); }

  // Called (from any thread) on each state change.
  void set_on_change(std::function<void()> fn) { on_change_ = std::move(fn); }

 private:
  void Set(ConnectivityState s);

  const transport::Address address_;
  const std::string name_;
  std::atomic<ConnectivityState> state_{ConnectivityState::kIdle};
  std::atomic<uint64_t> attempts_{0};
  mutable std::mutex mu_;
  ConnectionBackoff backoff_;
  uint64_t rng_;
  TimePoint next_attempt_{};
  absl::Status last_error_;
  std::function<void()> on_change_;
};

// The pool's manager: dials the address on the calling CQ thread's loop.
struct SubchannelManager {
  using Connection = std::shared_ptr<transport::Http2Connection>;

  std::shared_ptr<AddressRecord> record;
  transport::ConnectionOptions options;

  pool::Task<absl::StatusOr<Connection>> Connect();
  // A connection goes back into use only if it still takes new streams.
  absl::Status Recycle(Connection& c);
  uint32_t Capacity(const Connection& c) { return c->max_concurrent_streams(); }
  void Disconnect(Connection&& c) { c.reset(); }
};

using SubchannelPool = pool::Pool<SubchannelManager>;
using SubchannelLease = pool::Lease<SubchannelManager>;

struct Subchannel {
  std::shared_ptr<AddressRecord> record;
  SubchannelPool pool;
};

absl::StatusOr<std::shared_ptr<Subchannel>> MakeSubchannel(
    const transport::Address& address, const ChannelConfig& config, uint64_t seed);

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_SUBCHANNEL_H_
