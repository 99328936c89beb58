#include "bench/alloc_counter.h"

#include <errno.h>

#include <atomic>
#include <cstddef>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RINGRPC_COUNT_ALLOCATIONS 0
#else
#define RINGRPC_COUNT_ALLOCATIONS 1
#endif

namespace ringrpc::bench {
namespace {
std::atomic<uint64_t> allocations{0};
}  // namespace

bool Counting() { return RINGRPC_COUNT_ALLOCATIONS; }
uint64_t AllocationCount() { return allocations.load(std::memory_order_relaxed); }

}  // namespace ringrpc::bench

#if RINGRPC_COUNT_ALLOCATIONS
// The allocator functions of the program, forwarding to glibc's own (its
// exported __libc_* entry points): one heap, so memory from any of them may
// be freed or resized by any other, here or inside glibc.
extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t n, size_t size);
void* __libc_realloc(void* p, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* p);

namespace {
inline void Count() { ringrpc::bench::allocations.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

void* malloc(size_t size) {
  Count();
  return __libc_malloc(size);
}
void* calloc(size_t n, size_t size) {
  Count();
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t size) {
  Count();
  return __libc_realloc(p, size);
}
void* memalign(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  Count();
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
void free(void* p) { __libc_free(p); }
}  // extern "C"
#endif
