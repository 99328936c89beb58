// bench/alloc_counter.h — how many heap allocations this process has made
// (every malloc, calloc, realloc and aligned allocation, whoever asked:
// ringrpc, nghttp2, protobuf, grpc++). Linking bench:alloc_counter wraps
// glibc's allocator (the same heap, counted on the way in); loadgen prints
// allocations per call beside CPU per call with it.
//
// Sanitized builds keep the sanitizer's own allocator: Counting() is false
// there and AllocationCount() stays 0.
#ifndef RINGRPC_BENCH_ALLOC_COUNTER_H_
#define RINGRPC_BENCH_ALLOC_COUNTER_H_

#include <cstdint>

namespace ringrpc::bench {

bool Counting();
uint64_t AllocationCount();

}  // namespace ringrpc::bench

#endif  // RINGRPC_BENCH_ALLOC_COUNTER_H_
