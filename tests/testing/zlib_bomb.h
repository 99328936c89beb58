// tests/testing/zlib_bomb.h — a compressed message that inflates to far
// more than it weighs, built in milliseconds: one block of zeros compressed
// with a full flush (which resets the compressor, so each further block's
// bytes are the same) and repeated. No valid end: a decompressor must stop
// at its limit long before it would reach one.
#ifndef RINGRPC_TESTS_TESTING_ZLIB_BOMB_H_
#define RINGRPC_TESTS_TESTING_ZLIB_BOMB_H_

#include <zlib.h>

#include <cstdint>
#include <string>

namespace ringrpc::testing {

// `gzip`: RFC 1952 framing, else the zlib format (gRPC's "deflate").
// Inflates to about `inflated_bytes` of zeros (in 1 MiB blocks).
inline std::string ZlibBomb(bool gzip, uint64_t inflated_bytes) {
  const std::string zeros(1 << 20, '\0');
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, gzip ? 31 : 15, 9, Z_DEFAULT_STRATEGY);
  auto block = [&] {
    std::string out(deflateBound(&z, zeros.size()) + 64, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zeros.data()));
    z.avail_in = static_cast<uInt>(zeros.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    deflate(&z, Z_FULL_FLUSH);
    out.erase(out.size() - z.avail_out);  // (resize: a false -Wstringop-overflow)
    return out;
  };
  std::string bomb = block();  // the header, then the first block
  const std::string repeat = block();
  deflateEnd(&z);
  for (uint64_t n = 2; n * zeros.size() <= inflated_bytes; ++n) bomb += repeat;
  return bomb;
}

}  // namespace ringrpc::testing

#endif  // RINGRPC_TESTS_TESTING_ZLIB_BOMB_H_
