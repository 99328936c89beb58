// libFuzzer target: channel arguments and service config JSON, as
// ParseChannelArguments reads them. The input is lines "key=value" (an
// all-digit value, optionally signed, is SetInt, anything else SetString);
// a line starting with '{' is the service config. Every outcome is a
// config or INVALID_ARGUMENT with a message, and a config that parses
// passes the pool's own validation.
//
// Build and run: tools/fuzz.sh [seconds] //ringrpc/client/channel:channel_args_fuzzer.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "ringrpc/client/channel/channel_config.h"
#include "ringrpc/client/channel_arguments.h"

namespace {
void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "channel_args_fuzzer: %s\n", what);
    std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ringrpc::ChannelArguments args;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    if (!line.empty() && line[0] == '{') {
      args.SetServiceConfigJSON(std::string(line));
      continue;
    }
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits('=', 1));
    int n = 0;
    if (absl::SimpleAtoi(kv.second, &n)) {
      args.SetInt(std::string(kv.first), n);
    } else {
      args.SetString(std::string(kv.first), std::string(kv.second));
    }
  }
  absl::StatusOr<ringrpc::channel::ChannelConfig> c = ringrpc::channel::ParseChannelArguments(args);
  if (!c.ok()) {
    Check(c.status().code() == absl::StatusCode::kInvalidArgument, "not INVALID_ARGUMENT");
    Check(!c.status().message().empty(), "an error without a message");
    return 0;
  }
  Check(ringrpc::pool::ValidatePoolConfig(c->pool).ok(), "a parsed config the pool rejects");
  Check(c->pool.min_idle <= c->pool.max_size, "min_idle over max_size");
  return 0;
}
