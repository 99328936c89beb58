// ringrpc/pool/reservoir.h — the lock-free Exchange: a bounded FIFO shared by the
// threads of one pool, with admission claimed by CAS before detach.
//
// The queue is Dmitry Vyukov's bounded MPMC array queue (a sequence number
// per cell). Its array is the capacity rounded up to a power of two, and
// admission never lets more than `capacity` connections in, so a Push after
// a successful TryAdmit always finds a free cell. MutexReservoir
// (ringrpc/pool/mutex_reservoir.h) has the same contract and is the reference it is
// tested against.
//
// Threading: any thread, concurrently. Not on the checkout hot path: only
// parking and unparking touch it.
//
//   auto reservoir = std::make_shared<Reservoir<Fd>>(64);
//   auto pool = Pool<Manager>::Create(config, manager, reservoir);
#ifndef RINGRPC_POOL_RESERVOIR_H_
#define RINGRPC_POOL_RESERVOIR_H_

#include <atomic>
#include <bit>
#include <cstddef>
#include <memory>
#include <new>
#include <optional>

#include "ringrpc/pool/exchange.h"

namespace ringrpc::pool {

template <typename D>
class Reservoir final : public Exchange<D> {
 public:
  // `capacity` >= 1.
  explicit Reservoir(size_t capacity)
      : capacity_(capacity == 0 ? 1 : capacity),
        mask_(std::bit_ceil(capacity_) - 1),
        cells_(new Cell[mask_ + 1]) {
    for (size_t i = 0; i <= mask_; ++i) {
      cells_[i].seq.store(i, std::memory_order_relaxed);
    }
  }
  ~Reservoir() override { Clear(); }
  Reservoir(const Reservoir&) = delete;
  Reservoir& operator=(const Reservoir&) = delete;

  bool TryAdmit() override {
    size_t n = admitted_.load(std::memory_order_relaxed);
    do {
      if (n >= capacity_) return false;
    } while (!admitted_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel,
                                              std::memory_order_relaxed));
    return true;
  }

  void CancelAdmit() override { admitted_.fetch_sub(1, std::memory_order_acq_rel); }

  void Push(Parked<D> parked) override {
    size_t pos = enqueue_pos_.load(std::memory_order_relaxed);
    Cell* cell;
    for (;;) {
      cell = &cells_[pos & mask_];
      size_t seq = cell->seq.load(std::memory_order_acquire);
      auto dif = static_cast<std::ptrdiff_t>(seq - pos);
      if (dif == 0) {
        if (enqueue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          break;
        }
      } else {
        // dif < 0 (full) cannot happen: admission bounds the element count
        // by capacity_ <= mask_ + 1. A stale position just reloads.
        pos = enqueue_pos_.load(std::memory_order_relaxed);
      }
    }
    new (&cell->storage) Parked<D>(std::move(parked));
    parked_.fetch_add(1, std::memory_order_relaxed);
    cell->seq.store(pos + 1, std::memory_order_release);
  }

  std::optional<Parked<D>> Pop() override {
    size_t pos = dequeue_pos_.load(std::memory_order_relaxed);
    Cell* cell;
    for (;;) {
      cell = &cells_[pos & mask_];
      size_t seq = cell->seq.load(std::memory_order_acquire);
      auto dif = static_cast<std::ptrdiff_t>(seq - (pos + 1));
      if (dif == 0) {
        if (dequeue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          break;
        }
      } else if (dif < 0) {
        return std::nullopt;  // empty (or the next push not yet published)
      } else {
        pos = dequeue_pos_.load(std::memory_order_relaxed);
      }
    }
    auto* p = std::launder(reinterpret_cast<Parked<D>*>(&cell->storage));
    std::optional<Parked<D>> out(std::move(*p));
    p->~Parked<D>();
    cell->seq.store(pos + mask_ + 1, std::memory_order_release);
    parked_.fetch_sub(1, std::memory_order_relaxed);
    admitted_.fetch_sub(1, std::memory_order_acq_rel);
    return out;
  }

  size_t Clear() override {
    size_t n = 0;
    while (Pop().has_value()) ++n;
    return n;
  }

  size_t capacity() const override { return capacity_; }
  size_t admitted() const override { return admitted_.load(std::memory_order_relaxed); }
  size_t parked() const override { return parked_.load(std::memory_order_relaxed); }

 private:
  struct Cell {
    std::atomic<size_t> seq;
    alignas(Parked<D>) unsigned char storage[sizeof(Parked<D>)];
  };

  const size_t capacity_;
  const size_t mask_;
  std::unique_ptr<Cell[]> cells_;
  alignas(64) std::atomic<size_t> enqueue_pos_{0};
  alignas(64) std::atomic<size_t> dequeue_pos_{0};
  alignas(64) std::atomic<size_t> admitted_{0};
  std::atomic<size_t> parked_{0};
};

}  // namespace ringrpc::pool

#endif  // RINGRPC_POOL_RESERVOIR_H_
