// libFuzzer target: channel target URIs (ringrpc/client/channel/target.h). Any
// string parses to a target or to INVALID_ARGUMENT, never anything else;
// a static target has at least one address, each of which prints and
// parses back to itself.
//
// Build and run: tools/fuzz.sh [seconds] //ringrpc/client/channel:target_fuzzer.
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "ringrpc/client/channel/target.h"
#include "ringrpc/client/transport/address.h"

namespace {
void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "target_fuzzer: %s\n", what);
    std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<ringrpc::channel::Target> t = ringrpc::channel::ParseTarget(text);
  if (!t.ok()) {
    Check(t.status().code() == absl::StatusCode::kInvalidArgument, "not INVALID_ARGUMENT");
    Check(!t.status().message().empty(), "an error without a message");
    return 0;
  }
  if (t->kind == ringrpc::channel::Target::Kind::kStatic) {
    Check(!t->addresses.empty(), "a static target without addresses");
    for (const auto& a : t->addresses) {
      std::string printed = a.ToString();
      absl::StatusOr<ringrpc::transport::Address> back =
          ringrpc::transport::Address::Parse(printed);
      Check(back.ok() && back->ToString() == printed, "an address that does not print back");
    }
  } else {
    Check(!t->host.empty(), "a DNS target without a host");
  }
  return 0;
}
