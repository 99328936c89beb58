// tests/testing/copy_counter.h — how many bytes this process has copied
// with memcpy/memmove in copies of at least kCountedCopyMin bytes, whoever
// copied them (ringrpc, nghttp2, protobuf, libstdc++). Linking
// tests/testing:copy_counter interposes the program's own memcpy and
// memmove in front of glibc's (the executable's definitions win for every
// shared library), counts, and forwards.
//
// Sanitized builds keep the sanitizer's interceptors: Counting() is false
// there and the counts stay 0.
#ifndef RINGRPC_TESTS_TESTING_COPY_COUNTER_H_
#define RINGRPC_TESTS_TESTING_COPY_COUNTER_H_

#include <cstddef>
#include <cstdint>

namespace ringrpc::testing {

// Smaller copies (headers, prefixes, small fields) are not counted: the
// counter is for message bodies.
constexpr size_t kCountedCopyMin = 4096;

bool CountingCopies();
uint64_t CopiedBytes();  // bytes in counted copies so far, all threads

}  // namespace ringrpc::testing

#endif  // RINGRPC_TESTS_TESTING_COPY_COUNTER_H_
