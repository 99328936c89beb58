// A channel's event counts as Prometheus text (channel_counters.h).
#include "ringrpc/client/channel/channel_counters.h"

#include "absl/strings/str_cat.h"

namespace ringrpc::channel {
namespace {

struct Family {
  const char* name;
  const char* help;
};

// In ChannelCounter's order.
constexpr Family kFamilies[] = {
    {"ringrpc_transparent_retries_total",
     "Unary calls the server never processed, sent again (gRFC A6)."},
    {"ringrpc_retries_total",
     "Attempts after the first that the service config's retryPolicy made (gRFC A6)."},
    {"ringrpc_retries_throttled_total", "Retries and hedged copies retryThrottling did not allow."},
    {"ringrpc_hedged_attempts_total",
     "Copies after the first that the service config's hedgingPolicy sent (gRFC A6)."},
    {"ringrpc_channel_idle_entries_total",
     "Times the channel went idle (grpc.client_idle_timeout_ms without a call: connections "
     "closed)."},
};
static_assert(std::size(kFamilies) == static_cast<size_t>(ChannelCounter::kCount));

}  // namespace

void ChannelCounters::AppendPrometheus(std::string* out) const {
  for (size_t i = 0; i < std::size(kFamilies); ++i) {
    const Family& f = kFamilies[i];
    absl::StrAppend(out, "# HELP ", f.name, " ", f.help, "\n# TYPE ", f.name, " counter\n", f.name,
                    " ", counts_[i].load(std::memory_order_relaxed), "\n");
  }
}

}  // namespace ringrpc::channel
