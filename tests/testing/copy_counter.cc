#include "tests/testing/copy_counter.h"

#include <dlfcn.h>

#include <atomic>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RINGRPC_COUNT_COPIES 0
#else
#define RINGRPC_COUNT_COPIES 1
#endif

namespace ringrpc::testing {
namespace {
std::atomic<uint64_t> copied{0};
}  // namespace

bool CountingCopies() { return RINGRPC_COUNT_COPIES; }
uint64_t CopiedBytes() { return copied.load(std::memory_order_relaxed); }

}  // namespace ringrpc::testing

#if RINGRPC_COUNT_COPIES
namespace {

using CopyFn = void* (*)(void*, const void*, size_t);

// Used only while dlsym itself runs (it may copy): byte by byte, kept
// from being turned back into a memmove call.
__attribute__((optimize("no-tree-loop-distribute-patterns"))) void* SlowMove(void* d, const void* s,
                                                                             size_t n) {
  auto* dst = static_cast<volatile unsigned char*>(d);
  auto* src = static_cast<const volatile unsigned char*>(s);
  if (dst < src) {
    for (size_t i = 0; i < n; ++i) dst[i] = src[i];
  } else {
    for (size_t i = n; i > 0; --i) dst[i - 1] = src[i - 1];
  }
  return d;
}

std::atomic<CopyFn> real_memcpy{nullptr};
std::atomic<CopyFn> real_memmove{nullptr};
thread_local bool resolving = false;

CopyFn Resolve(std::atomic<CopyFn>& slot, const char* name) {
  CopyFn f = slot.load(std::memory_order_acquire);
  if (f != nullptr) return f;
  if (resolving) return SlowMove;
  resolving = true;
  f = reinterpret_cast<CopyFn>(dlsym(RTLD_NEXT, name));
  resolving = false;
  if (f == nullptr) return SlowMove;
  slot.store(f, std::memory_order_release);
  return f;
}

inline void Count(size_t n) {
  if (n >= ringrpc::testing::kCountedCopyMin) {
    ringrpc::testing::copied.fetch_add(n, std::memory_order_relaxed);
  }
}

}  // namespace

extern "C" {
void* memcpy(void* d, const void* s, size_t n) {
  Count(n);
  return Resolve(real_memcpy, "memcpy")(d, s, n);
}
void* memmove(void* d, const void* s, size_t n) {
  Count(n);
  return Resolve(real_memmove, "memmove")(d, s, n);
}
}  // extern "C"
#endif
