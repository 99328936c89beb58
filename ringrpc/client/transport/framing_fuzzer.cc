// libFuzzer target: gRPC message framing (the 5-byte prefix and body) as
// the transport decodes it from the server, fed in fuzzer-chosen pieces.
// Checks: no message over the limit ever comes out; a prefix claiming more
// than the limit is RESOURCE_EXHAUSTED before its body is buffered (so the
// decoder never holds more than limit + 5 bytes of one message); once
// broken it stays broken and yields nothing; and framing the decoded
// messages again gives back the bytes that were consumed.
//
// Build and run: tools/fuzz.sh [seconds] //ringrpc/client/transport:framing_fuzzer.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ringrpc/client/transport/grpc_wire.h"

using ringrpc::RecvBlock;
using ringrpc::transport::AppendFramedMessage;
using ringrpc::transport::MessageDecoder;
using ringrpc::transport::ReceivedMessage;

namespace {
void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "framing_fuzzer: %s\n", what);
    std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint32_t limit = 1u + data[0] * 64u;  // 1 .. 16321 bytes
  // Bytes per Feed: 1..32, or (high bit) 4096.. pieces that large bodies
  // are kept as slices of.
  const size_t piece = (data[1] & 0x80) != 0 ? 4096u + (data[1] & 0x7fu) * 64u : 1u + data[1] % 32u;
  std::string_view input(reinterpret_cast<const char*>(data) + 2, size - 2);
  MessageDecoder decoder(limit);
  std::string reframed;
  size_t fed = 0;
  bool broken = false;
  for (size_t off = 0; off < input.size(); off += piece) {
    std::string_view chunk = input.substr(off, piece);
    // Odd sizes feed from a receive block (large bodies become slices).
    RecvBlock::Ref block = RecvBlock::Make(std::vector<uint8_t>(chunk.begin(), chunk.end()));
    if (piece % 2 == 1 || piece >= 4096) {
      decoder.Feed(
          std::string_view(reinterpret_cast<const char*>(block->bytes().data()), chunk.size()),
          &block);
    } else {
      decoder.Feed(chunk);
    }
    fed += chunk.size();
    while (std::optional<ReceivedMessage> m = decoder.Next()) {
      Check(!broken, "a message came out after an error");
      Check(m->bytes.size() <= limit, "a message over the limit came out");
      AppendFramedMessage(reframed, std::move(m->bytes).TakeString(), m->compressed);
    }
    if (!decoder.error().ok()) {
      Check(decoder.error().code() == absl::StatusCode::kResourceExhausted ||
                decoder.error().code() == absl::StatusCode::kInternal,
            "an error other than RESOURCE_EXHAUSTED or INTERNAL");
      broken = true;
    }
  }
  if (!broken) {
    // Everything consumed so far is whole messages plus a partial tail.
    Check(input.substr(0, reframed.size()) == reframed, "reframing changed the bytes");
    Check(decoder.partial() == (reframed.size() < fed), "partial() disagrees with the bytes");
  }
  return 0;
}
