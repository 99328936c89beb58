// pool/internal/mutex.h — std::mutex with Clang thread-safety annotations.
//
// libstdc++'s std::mutex carries no capability annotations, so
// ABSL_GUARDED_BY on it is not checked; absl::Mutex is annotated but
// Debian's Abseil is not built for TSAN (see ../shared/BUILDING.md), which
// then reports false races. This wrapper is both: checked by Clang's
// -Wthread-safety, and seen by TSAN through pthread.
#ifndef RINGRPC_POOL_INTERNAL_MUTEX_H_
#define RINGRPC_POOL_INTERNAL_MUTEX_H_

#include <mutex>

#include "absl/base/thread_annotations.h"

namespace ringrpc::pool::internal {

class ABSL_LOCKABLE Mutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }

 private:
  Mutex* mu_;
};

}  // namespace ringrpc::pool::internal

#endif  // RINGRPC_POOL_INTERNAL_MUTEX_H_
