// ringrpc/base/mutex.h — std::mutex with Clang thread-safety annotations.
//
// libstdc++'s std::mutex carries no capability annotations, so
// ABSL_GUARDED_BY on it is not checked; absl::Mutex is annotated but
// Debian's Abseil is not built for TSAN (decision 0006), which
// then reports false races. This wrapper is both: checked by Clang's
// -Wthread-safety (the clang build in tools/test.sh), and seen by TSAN
// through pthread. Every lock in ringrpc is one of these.
//
// Threading: any thread.
//
//   Mutex mu_;
//   int hits_ ABSL_GUARDED_BY(mu_) = 0;
//   void Hit() { MutexLock lock(&mu_); ++hits_; }
#ifndef RINGRPC_BASE_MUTEX_H_
#define RINGRPC_BASE_MUTEX_H_

#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace ringrpc {

class ABSL_LOCKABLE Mutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }

 private:
  Mutex* mu_;
};

// A condition variable waited on with a Mutex held (by a MutexLock).
class CondVar {
 public:
  // Waits until `done()` is true; `mu` is held on entry and on return.
  template <typename Pred>
  void Wait(Mutex* mu, Pred done) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock, done);
    lock.release();
  }
  // As Wait, giving up at `deadline`. Returns done().
  template <typename TimePointT, typename Pred>
  bool WaitUntil(Mutex* mu, TimePointT deadline, Pred done) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    bool result = cv_.wait_until(lock, deadline, done);
    lock.release();
    return result;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace ringrpc

#endif  // RINGRPC_BASE_MUTEX_H_
