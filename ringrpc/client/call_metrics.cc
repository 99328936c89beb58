#include "ringrpc/client/call_metrics.h"

#include <array>
#include <charconv>

#include "absl/strings/str_cat.h"

namespace ringrpc {
namespace {

// gRFC A66, "Units": latency in seconds, sizes in bytes.
constexpr std::array<double, 40> kLatency = {
    0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002, 0.003, 0.004,
    0.005,   0.006,   0.008,  0.01,   0.013,  0.016,  0.02,  0.025, 0.03,  0.04,
    0.05,    0.065,   0.08,   0.1,    0.13,   0.16,   0.2,   0.25,  0.3,   0.4,
    0.5,     0.65,    0.8,    1,      2,      5,      10,    20,    50,    100};
constexpr std::array<double, 13> kSize = {1024,      2048,       4096,      16384,    65536,
                                          262144,    1048576,    4194304,   16777216, 67108864,
                                          268435456, 1073741824, 4294967296};

// Label values are quoted strings: backslash, quote and newline escaped.
std::string Escaped(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// The shortest text that reads back as `v` ("1e-05", "4294967296").
std::string Number(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

void AppendHistogram(std::string* out, const char* name, const std::string& labels,
                     const CallMetricsSnapshot::Histogram& h) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.bounds.size(); ++i) {
    cumulative += i < h.counts.size() ? h.counts[i] : 0;
    absl::StrAppend(out, name, "_bucket{", labels, ",le=\"", Number(h.bounds[i]), "\"} ",
                    cumulative, "\n");
  }
  absl::StrAppend(out, name, "_bucket{", labels, ",le=\"+Inf\"} ", h.count, "\n");
  absl::StrAppend(out, name, "_sum{", labels, "} ", Number(h.sum), "\n");
  absl::StrAppend(out, name, "_count{", labels, "} ", h.count, "\n");
}

}  // namespace

std::span<const double> CallLatencyBucketsSeconds() { return kLatency; }
std::span<const double> CallSizeBucketsBytes() { return kSize; }

void AppendCallMetricsText(const CallMetricsSnapshot& snapshot, std::string* out) {
  const std::string target = Escaped(snapshot.target);
  absl::StrAppend(out,
                  "# HELP grpc_client_attempt_started_total Call attempts started "
                  "(gRFC A66 grpc.client.attempt.started).\n"
                  "# TYPE grpc_client_attempt_started_total counter\n");
  for (const auto& s : snapshot.started) {
    absl::StrAppend(out, "grpc_client_attempt_started_total{grpc_method=\"", Escaped(s.method),
                    "\",grpc_target=\"", target, "\"} ", s.attempts, "\n");
  }
  struct Family {
    const char* name;
    const char* help;
    CallMetricsSnapshot::Histogram CallMetricsSnapshot::Ended::*field;
  };
  const Family families[] = {
      {"grpc_client_attempt_duration_seconds",
       "Attempt latency, start to status (grpc.client.attempt.duration).",
       &CallMetricsSnapshot::Ended::attempt_duration_seconds},
      {"grpc_client_attempt_sent_total_compressed_message_size_bytes",
       "Message bytes an attempt sent, as compressed "
       "(grpc.client.attempt.sent_total_compressed_message_size).",
       &CallMetricsSnapshot::Ended::attempt_sent_compressed_bytes},
      {"grpc_client_attempt_rcvd_total_compressed_message_size_bytes",
       "Message bytes an attempt received, as compressed "
       "(grpc.client.attempt.rcvd_total_compressed_message_size).",
       &CallMetricsSnapshot::Ended::attempt_rcvd_compressed_bytes},
      {"grpc_client_call_duration_seconds",
       "Call latency, every attempt included (grpc.client.call.duration).",
       &CallMetricsSnapshot::Ended::call_duration_seconds},
  };
  for (const Family& f : families) {
    absl::StrAppend(out, "# HELP ", f.name, " ", f.help, "\n# TYPE ", f.name, " histogram\n");
    for (const auto& e : snapshot.ended) {
      const std::string labels =
          absl::StrCat("grpc_method=\"", Escaped(e.method), "\",grpc_target=\"", target,
                       "\",grpc_status=\"", StatusCodeName(e.status), "\"");
      AppendHistogram(out, f.name, labels, e.*(f.field));
    }
  }
}

}  // namespace ringrpc
