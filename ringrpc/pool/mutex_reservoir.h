// ringrpc/pool/mutex_reservoir.h — the simple Exchange: a mutex around a deque.
//
// Same contract as Reservoir (ringrpc/pool/reservoir.h). It is the reference the
// lock-free one is checked against in differential tests, and a fallback a
// user may choose; the benchmark measures whether the lock-free one earns
// its place (docs/performance.md).
//
// Threading: any thread, concurrently.
#ifndef RINGRPC_POOL_MUTEX_RESERVOIR_H_
#define RINGRPC_POOL_MUTEX_RESERVOIR_H_

#include <deque>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "ringrpc/base/mutex.h"
#include "ringrpc/pool/exchange.h"

namespace ringrpc::pool {

template <typename D>
class MutexReservoir final : public Exchange<D> {
 public:
  explicit MutexReservoir(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  bool TryAdmit() override {
    MutexLock lock(&mu_);
    if (admitted_ >= capacity_) return false;
    ++admitted_;
    return true;
  }
  void CancelAdmit() override {
    MutexLock lock(&mu_);
    --admitted_;
  }
  void Push(Parked<D> parked) override {
    MutexLock lock(&mu_);
    queue_.push_back(std::move(parked));
  }
  std::optional<Parked<D>> Pop() override {
    std::optional<Parked<D>> out;
    {
      MutexLock lock(&mu_);
      if (queue_.empty()) return std::nullopt;
      out.emplace(std::move(queue_.front()));
      queue_.pop_front();
      --admitted_;
    }
    return out;
  }
  size_t Clear() override {
    std::deque<Parked<D>> dropped;
    {
      MutexLock lock(&mu_);
      dropped.swap(queue_);
      admitted_ -= dropped.size();
    }
    return dropped.size();  // destroyed outside the lock
  }
  size_t capacity() const override { return capacity_; }
  size_t admitted() const override {
    MutexLock lock(&mu_);
    return admitted_;
  }
  size_t parked() const override {
    MutexLock lock(&mu_);
    return queue_.size();
  }

 private:
  const size_t capacity_;
  mutable Mutex mu_;
  size_t admitted_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<Parked<D>> queue_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ringrpc::pool

#endif  // RINGRPC_POOL_MUTEX_RESERVOIR_H_
