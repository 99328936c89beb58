// ringrpc/client/channel/health_check.h — client-side health checking (gRFC A17)
// for one address: one grpc.health.v1.Health/Watch stream, on a connection
// of one CQ thread's shard, whose answers every CQ thread (and every
// channel sharing the subchannel) reads from one atomic. Not one stream
// per thread: the server's health is a property of the address.
//
// What the answers mean for picks (Subchannel::Usable):
//   before the first answer            kUnknown     not picked; calls wait
//   SERVING                            kServing     picked
//   NOT_SERVING, SERVICE_UNKNOWN, ...  kNotServing  not picked
//   the server has no Watch            kServing     picked (A17: health
//     (UNIMPLEMENTED)                               checking off for it)
// A stream that ends after an answer is opened again at once, keeping the
// last answer meanwhile (the server said nothing new). One whose connection
// went away before any answer (Invalidate(), a GOAWAY, a reset) makes the
// address kUnknown, as a dial that fails does: the next connection waits
// for a fresh answer; it is opened again at once after an answered stream,
// after the backoff otherwise. One that the server ended before any answer,
// on a connection that still takes streams, makes the address kNotServing
// and is opened again after the address's reconnect backoff.
//
// Threading: Start/Stop from any thread; the stream lives on CQ thread
// `thread`; state() from any thread (one acquire load).
//
//   auto watch = std::make_shared<HealthWatch>("svc", record, pool, events, backoff);
//   watch->Start(cq, 0);   ...   watch->Stop();
#ifndef RINGRPC_CLIENT_CHANNEL_HEALTH_CHECK_H_
#define RINGRPC_CLIENT_CHANNEL_HEALTH_CHECK_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ringrpc/base/task.h"
#include "ringrpc/client/channel/backoff.h"
#include "ringrpc/client/channel/subchannel.h"
#include "ringrpc/client/runtime/cq_threads.h"
#include "ringrpc/client/transport/call.h"

namespace ringrpc::channel {

// grpc.health.v1.HealthCheckRequest{service} on the wire.
std::string EncodeHealthCheckRequest(std::string_view service);
// grpc.health.v1.HealthCheckResponse's status (0 UNKNOWN, 1 SERVING,
// 2 NOT_SERVING, 3 SERVICE_UNKNOWN), or nullopt for bytes that are not one.
std::optional<int> DecodeHealthCheckStatus(std::string_view message);

class HealthWatch : public std::enable_shared_from_this<HealthWatch> {
 public:
  HealthWatch(std::string service, std::shared_ptr<AddressRecord> record, SubchannelPool pool,
              std::shared_ptr<EventHub> events, BackoffConfig backoff);
  ~HealthWatch();

  // Opens the stream on CQ thread `thread` of `cq`. Once.
  void Start(runtime::CqThreads& cq, size_t thread);
  // Cancels the stream and lets go of its connection. Any thread.
  void Stop();

  Health state() const { return state_.load(std::memory_order_acquire); }
  const std::string& service() const { return service_; }

 private:
  static Task<void> Run(std::shared_ptr<HealthWatch> self);
  // How one stream ended: after an answer; before any, with its connection
  // gone; before any, the server's doing (or Stop()).
  enum class End { kAnswered, kConnectionLost, kFailed };
  // One stream, on the loop thread.
  Task<End> Watch();
  void Set(Health h, std::string_view why);

  const std::string service_;
  const std::shared_ptr<AddressRecord> record_;
  const SubchannelPool pool_;
  const std::shared_ptr<EventHub> events_;
  const BackoffConfig backoff_;
  std::atomic<Health> state_{Health::kUnknown};
  std::atomic<bool> stopped_{false};
  runtime::EventLoop* loop_ = nullptr;  // set by Start
  // Loop thread only: the open stream; the server has no Watch.
  transport::Call* call_ = nullptr;
  bool disabled_ = false;
};

}  // namespace ringrpc::channel

#endif  // RINGRPC_CLIENT_CHANNEL_HEALTH_CHECK_H_
