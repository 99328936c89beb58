// ringrpc/base/random.h — the one small random generator every layer uses: backoff
// and retry jitter, least_request's draws, xDS route and locality picks,
// A2's service-config percentage, connection lifetime jitter. splitmix64:
// fast, deterministic per seed (tests replay it), never for secrets.
//
//   uint64_t state = RandomSeed();
//   uint64_t r = NextRandom(state);          // advances state
//   uint64_t other = Mix64(r);               // a second draw from one number
//   Random rng;  rng();  rng.Uniform01();    // a generator object (<random>)
#ifndef RINGRPC_BASE_RANDOM_H_
#define RINGRPC_BASE_RANDOM_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>

namespace ringrpc {

// splitmix64's finaliser: every bit of `z` moves every bit of the result.
inline uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The next number of the sequence `state` walks (any state, 0 included).
inline uint64_t NextRandom(uint64_t& state) { return Mix64(state += 0x9e3779b97f4a7c15ull); }

// A seed no two calls share in a process: the clock and a counter, mixed.
inline uint64_t RandomSeed() {
  static std::atomic<uint64_t> counter{0};
  const uint64_t now =
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return Mix64(now ^ Mix64(counter.fetch_add(1, std::memory_order_relaxed) + 1));
}

// NextRandom as an object: a UniformRandomBitGenerator for <random>.
class Random {
 public:
  using result_type = uint64_t;
  explicit Random(uint64_t seed = RandomSeed()) : state_(seed) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return std::numeric_limits<result_type>::max(); }
  result_type operator()() { return NextRandom(state_); }
  // In [0, 1).
  double Uniform01() { return static_cast<double>((*this)() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

}  // namespace ringrpc

#endif  // RINGRPC_BASE_RANDOM_H_
