// ringrpc/client/call_metrics.h — per-call telemetry in the names of gRFC A66
// (OpenTelemetry metrics), per method, target and status:
//
//   grpc.client.attempt.started                              counter
//   grpc.client.attempt.duration                             histogram, s
//   grpc.client.attempt.sent_total_compressed_message_size   histogram, bytes
//   grpc.client.attempt.rcvd_total_compressed_message_size   histogram, bytes
//   grpc.client.call.duration                                histogram, s
//
// A channel keeps them per CQ thread (written by that thread alone, no
// shared atomic on the call path) and merges them when read:
// Channel::CallMetrics() gives the numbers, Channel::MetricsText() serves
// them as Prometheus text (grpc_client_attempt_duration_seconds_bucket,
// ...). To feed OpenTelemetry (or anything else) call by call, give the
// channel a recorder:
//
//   struct ToOtel : ringrpc::CallMetricsRecorder {
//     void OnAttemptEnded(const ringrpc::CallAttemptEnd& e) override {
//       duration_->Record(e.duration_seconds, {{"grpc.method", e.method}, ...});
//     }
//   };
//   args.SetCallMetricsRecorder(std::make_shared<ToOtel>());
//
// Threading: a recorder's methods run on the CQ thread where the call
// runs, any of them at once: they must be thread-safe and quick.
#ifndef RINGRPC_CLIENT_CALL_METRICS_H_
#define RINGRPC_CLIENT_CALL_METRICS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ringrpc/client/status.h"

namespace ringrpc {

// gRFC A66's recommended bucket boundaries (upper bounds, inclusive).
std::span<const double> CallLatencyBucketsSeconds();
std::span<const double> CallSizeBucketsBytes();

// One attempt (one try at a stream; a transparent retry is a second one)
// or one call, ended.
struct CallAttemptEnd {
  std::string_view method;  // "package.Service/Method" (A66's grpc.method)
  std::string_view target;  // the channel's target (grpc.target)
  StatusCode status;        // grpc.status
  double duration_seconds;
  uint64_t sent_compressed_message_bytes;  // messages as sent, no framing
  uint64_t rcvd_compressed_message_bytes;  // messages as received
};
struct CallEnd {
  std::string_view method;
  std::string_view target;
  StatusCode status;
  double duration_seconds;
};

class CallMetricsRecorder {
 public:
  virtual ~CallMetricsRecorder() = default;
  virtual void OnAttemptStarted(std::string_view method, std::string_view target) {}
  virtual void OnAttemptEnded(const CallAttemptEnd& attempt) {}
  virtual void OnCallEnded(const CallEnd& call) {}
};

// The channel's numbers, merged over its CQ threads at the time of asking.
struct CallMetricsSnapshot {
  struct Histogram {
    std::span<const double> bounds;  // upper bounds
    std::vector<uint64_t> counts;    // per bucket (not cumulative); last: above every bound
    uint64_t count = 0;
    double sum = 0;
  };
  struct Started {
    std::string method;
    uint64_t attempts = 0;
  };
  struct Ended {
    std::string method;
    StatusCode status = StatusCode::OK;
    Histogram attempt_duration_seconds;
    Histogram attempt_sent_compressed_bytes;
    Histogram attempt_rcvd_compressed_bytes;
    Histogram call_duration_seconds;  // count: calls (attempts may be more)
  };
  std::string target;
  std::vector<Started> started;  // by method
  std::vector<Ended> ended;      // by method and status
};

// The snapshot as Prometheus text exposition (A66's names with '.' as '_',
// the unit appended: grpc_client_attempt_started_total,
// grpc_client_attempt_duration_seconds, ..._size_bytes,
// grpc_client_call_duration_seconds; labels grpc_method, grpc_target,
// grpc_status).
void AppendCallMetricsText(const CallMetricsSnapshot& snapshot, std::string* out);

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_CALL_METRICS_H_
