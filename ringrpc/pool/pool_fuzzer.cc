// libFuzzer target: fuzzer bytes drive the pool through the same operations
// as the property test (ringrpc/pool/testing/pool_driver.h); every invariant is
// checked after every step. Bytes 0-3 choose the configuration, then each
// pair of bytes is one (operation, argument) step.
//
// Build and run: tools/fuzz.sh [seconds]. The committed seed corpus
// (ringrpc/pool/fuzz_corpus/) is also replayed by //ringrpc/pool:pool_fuzzer_corpus_test on
// every CI run.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "ringrpc/pool/testing/pool_driver.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 4) return 0;
  std::array<uint8_t, 4> cfg = {data[0], data[1], data[2], data[3]};
  ringrpc::pool::testing::PoolDriver driver(cfg);
  for (size_t i = 4; i + 1 < size && i < 4 + 2 * 4096; i += 2) {
    driver.Step(data[i], data[i + 1]);
    absl::Status s = driver.Check();
    if (!s.ok()) {
      std::fprintf(stderr, "invariant broken at step %zu: %s\n", (i - 4) / 2, s.ToString().c_str());
      std::abort();
    }
  }
  absl::Status s = driver.Finish();
  if (!s.ok()) {
    std::fprintf(stderr, "invariant broken at finish: %s\n", s.ToString().c_str());
    std::abort();
  }
  return 0;
}
