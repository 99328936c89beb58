// ringrpc/base/check.h — debug-build assertions for "cannot happen" states.
// Active unless NDEBUG (the asan and tsan configs turn them on).
//
//   RINGRPC_DCHECK(leased_ + idle_ == total_);
#ifndef RINGRPC_BASE_CHECK_H_
#define RINGRPC_BASE_CHECK_H_

#include <cstdio>
#include <cstdlib>

#ifdef NDEBUG
#define RINGRPC_DCHECK(cond) \
  do {                       \
  } while (false && (cond))
#else
#define RINGRPC_DCHECK(cond)                                                                 \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "%s:%d: RINGRPC_DCHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (false)
#endif

#endif  // RINGRPC_BASE_CHECK_H_
