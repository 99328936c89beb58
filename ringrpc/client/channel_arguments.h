// ringrpc/client/channel_arguments.h — the key/value settings a channel is created
// with, as grpc::ChannelArguments: grpc keys keep grpc's meaning; ringrpc's
// own knobs use "ringrpc.*" keys. docs/channel-args.md lists every key read.
//
//   ringrpc::ChannelArguments args;
//   args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
//   args.SetLoadBalancingPolicyName("round_robin");
//   auto channel = ringrpc::CreateCustomChannel(target, creds, args);
#ifndef RINGRPC_CLIENT_CHANNEL_ARGUMENTS_H_
#define RINGRPC_CLIENT_CHANNEL_ARGUMENTS_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>

#include "ringrpc/base/socket_mutator.h"
#include "ringrpc/client/call_metrics.h"
#include "ringrpc/client/channel_arg_names.h"
#include "ringrpc/client/client_context.h"
#include "ringrpc/client/cq_thread_set.h"
#include "ringrpc/client/subchannel_events.h"

namespace ringrpc {

class ChannelArguments {
 public:
  using Value = std::variant<int, std::string>;

  void SetInt(const std::string& key, int value) { values_[key] = value; }
  void SetString(const std::string& key, const std::string& value) { values_[key] = value; }
  // -1: unlimited.
  void SetMaxReceiveMessageSize(int size) { SetInt("grpc.max_receive_message_length", size); }
  void SetMaxSendMessageSize(int size) { SetInt("grpc.max_send_message_length", size); }
  void SetLoadBalancingPolicyName(const std::string& name) {
    SetString("grpc.lb_policy_name", name);
  }
  void SetServiceConfigJSON(const std::string& json) { SetString("grpc.service_config", json); }
  void SetUserAgentPrefix(const std::string& prefix) {
    SetString("grpc.primary_user_agent", prefix);
  }
  // grpc.default_compression_algorithm: request messages of every call.
  void SetCompressionAlgorithm(CompressionAlgorithm algorithm) {
    SetInt("grpc.default_compression_algorithm", static_cast<int>(algorithm));
  }
  // grpc.ssl_target_name_override: the name TLS sends and checks.
  void SetSslTargetNameOverride(const std::string& name) {
    SetString("grpc.ssl_target_name_override", name);
  }
  std::string GetSslTargetNameOverride() const {
    auto it = values_.find("grpc.ssl_target_name_override");
    const std::string* name = it == values_.end() ? nullptr : std::get_if<std::string>(&it->second);
    return name == nullptr ? "" : *name;
  }
  void SetGrpclbFallbackTimeout(int timeout_ms) {
    SetInt("grpc.grpclb_fallback_timeout_ms", timeout_ms);
  }
  // Pointer-valued keys are grpc core internals (grpc.resource_quota,
  // grpc.socket_mutator, ...): kept, so code that sets them compiles, and
  // never read (docs/channel-args.md says why for each).
  void SetPointer(const std::string& key, void* value) { pointers_[key] = value; }
  const std::map<std::string, void*>& pointers() const { return pointers_; }
  void Swap(ChannelArguments& other) noexcept {
    std::swap(values_, other.values_);
    std::swap(pointers_, other.pointers_);
    std::swap(listener_, other.listener_);
    std::swap(recorder_, other.recorder_);
    std::swap(cq_thread_set_, other.cq_thread_set_);
    std::swap(socket_mutator_, other.socket_mutator_);
  }

  // ringrpc: receives the lifecycle events of this channel's subchannels.
  void SetSubchannelEventListener(std::shared_ptr<SubchannelEventListener> listener) {
    listener_ = std::move(listener);
  }
  const std::shared_ptr<SubchannelEventListener>& subchannel_event_listener() const {
    return listener_;
  }

  // ringrpc: hears every call's telemetry (ringrpc/client/call_metrics.h) on the
  // call's CQ thread, e.g. to record it in OpenTelemetry instruments.
  void SetCallMetricsRecorder(std::shared_ptr<CallMetricsRecorder> recorder) {
    recorder_ = std::move(recorder);
  }
  const std::shared_ptr<CallMetricsRecorder>& call_metrics_recorder() const { return recorder_; }

  // ringrpc: the channel runs on these shared CQ threads
  // (ringrpc/client/cq_thread_set.h) instead of the process-wide set or threads of
  // its own (then ringrpc.cq_threads and ringrpc.poller must not be set).
  void SetCqThreadSet(std::shared_ptr<CqThreadSet> set) { cq_thread_set_ = std::move(set); }
  const std::shared_ptr<CqThreadSet>& cq_thread_set() const { return cq_thread_set_; }

  // Runs on every socket the channel dials, before it connects
  // (ringrpc/base/socket_mutator.h); grpc++'s takes a
  // grpc_socket_mutator, which is grpc core's. Two channels given different
  // mutators never share a connection.
  void SetSocketMutator(std::shared_ptr<SocketMutator> mutator) {
    socket_mutator_ = std::move(mutator);
  }
  const std::shared_ptr<SocketMutator>& socket_mutator() const { return socket_mutator_; }

  const std::map<std::string, Value>& values() const { return values_; }

 private:
  std::map<std::string, Value> values_;
  std::map<std::string, void*> pointers_;
  std::shared_ptr<SubchannelEventListener> listener_;
  std::shared_ptr<CallMetricsRecorder> recorder_;
  std::shared_ptr<CqThreadSet> cq_thread_set_;
  std::shared_ptr<SocketMutator> socket_mutator_;
};

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_CHANNEL_ARGUMENTS_H_
