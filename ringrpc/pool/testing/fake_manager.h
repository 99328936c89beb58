// ringrpc/pool/testing/fake_manager.h — a scriptable pool manager for tests.
//
// Connections are ids. The manager keeps the set of connections that exist
// (dialled and not yet destroyed, whether held by a shard, parked detached,
// or in flight), so tests can check the pool's counters against an
// independent count. Each operation can be made slow (it sleeps on the
// calling thread's runtime, which is an await point a test can cancel at)
// or made to fail.
//
//   auto m = std::make_shared<FakeManager>();
//   m->connect_latency = std::chrono::milliseconds(5);
//   m->fail_connects = 1;   // the next connect fails
#ifndef RINGRPC_POOL_TESTING_FAKE_MANAGER_H_
#define RINGRPC_POOL_TESTING_FAKE_MANAGER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "ringrpc/base/task.h"
#include "ringrpc/base/time.h"
#include "ringrpc/pool/thread_context.h"

namespace ringrpc::pool::testing {

class FakeManager;

struct FakeConn {
  uint64_t id = 0;
  bool broken = false;  // Recycle fails on a broken connection
};

// A connection detached from its thread. Destroying it closes it.
class FakeDetached {
 public:
  FakeDetached(FakeManager* m, uint64_t id) : m_(m), id_(id) {}
  FakeDetached(FakeDetached&& o) noexcept : m_(std::exchange(o.m_, nullptr)), id_(o.id_) {}
  FakeDetached& operator=(FakeDetached&& o) noexcept;
  FakeDetached(const FakeDetached&) = delete;
  FakeDetached& operator=(const FakeDetached&) = delete;
  ~FakeDetached();
  uint64_t id() const { return id_; }
  // Hands the id over (to Attach); the destructor then closes nothing.
  uint64_t Release() {
    m_ = nullptr;
    return id_;
  }

 private:
  FakeManager* m_;
  uint64_t id_;
};

class FakeManager {
 public:
  using Connection = FakeConn;
  using Detached = FakeDetached;

  // Knobs. Latency 0 completes without suspending.
  Duration connect_latency{};
  Duration recycle_latency{};
  Duration attach_latency{};
  int fail_connects = 0;  // the next N connects fail
  int fail_recycles = 0;  // the next N recycles fail
  int fail_detaches = 0;  // the next N detaches fail ("I/O in flight")
  int fail_attaches = 0;  // the next N attaches fail
  int not_parkable = 0;   // the next N Parkable() questions say "not yet"
  uint32_t capacity = 1u << 30;
  // Stamped on each connection when its dial starts (tests set it to the
  // number of invalidations so far).
  uint64_t epoch = 0;

  Task<absl::StatusOr<FakeConn>> Connect() {
    uint64_t dial_epoch = epoch;
    co_await Delay(connect_latency);
    ++connects_started_;
    if (fail_connects > 0) {
      --fail_connects;
      co_return absl::UnavailableError(
          absl::StrCat("fake connect #", connects_started_, " refused"));
    }
    uint64_t id = ++next_id_;
    open_.insert(id);
    epoch_of_[id] = dial_epoch;
    co_return FakeConn{id};
  }

  Task<absl::Status> Recycle(FakeConn& c) {
    co_await Delay(recycle_latency);
    if (c.broken) co_return absl::UnavailableError("fake: broken");
    if (fail_recycles > 0) {
      --fail_recycles;
      co_return absl::UnavailableError("fake recycle refused");
    }
    co_return absl::OkStatus();
  }

  void Disconnect(FakeConn&& c) { Close(c.id); }

  uint32_t Capacity(const FakeConn&) const { return capacity; }

  absl::StatusOr<FakeDetached> Detach(FakeConn&& c) {
    if (fail_detaches > 0) {
      --fail_detaches;
      Close(c.id);  // an operation was in flight: the connection is lost
      return absl::FailedPreconditionError("fake: operation in flight");
    }
    return FakeDetached(this, c.id);
  }

  bool Parkable(FakeConn&) {
    ++parkable_asked_;
    if (not_parkable > 0) {
      --not_parkable;
      return false;
    }
    return true;
  }
  uint64_t parkable_asked() const { return parkable_asked_; }
  void Quiesce(FakeConn&) { ++quiesce_asked_; }
  uint64_t quiesce_asked() const { return quiesce_asked_; }

  Task<absl::StatusOr<FakeConn>> Attach(FakeDetached&& d) {
    // Own the detached connection in this frame: if the frame is destroyed
    // (cancelled), the connection closes with it.
    FakeDetached mine = std::move(d);
    co_await Delay(attach_latency);
    if (fail_attaches > 0) {
      --fail_attaches;
      co_return absl::UnavailableError("fake attach refused");
    }
    co_return FakeConn{mine.Release()};
  }

  void Close(uint64_t id) {
    if (open_.erase(id) == 0) ++double_closes_;
  }

  // Connections that exist now.
  size_t open() const { return open_.size(); }
  bool IsOpen(uint64_t id) const { return open_.count(id) != 0; }
  uint64_t EpochOf(uint64_t id) const { return epoch_of_.at(id); }
  uint64_t connects_started() const { return connects_started_; }
  // Closing something not open: must stay 0.
  uint64_t double_closes() const { return double_closes_; }

 private:
  static Task<void> DelayTask(Duration d) {
    Runtime* rt = ThreadContext::Current().runtime();
    co_await SleepFor(*rt, d);
  }
  struct NoDelay {
    bool await_ready() noexcept { return true; }
    void await_suspend(std::coroutine_handle<>) noexcept {}
    void await_resume() noexcept {}
  };
  Task<void> Delay(Duration d) {
    if (d == Duration::zero()) {
      co_await NoDelay{};
      co_return;
    }
    co_await DelayTask(d);
  }

  uint64_t next_id_ = 0;
  uint64_t connects_started_ = 0;
  uint64_t double_closes_ = 0;
  uint64_t parkable_asked_ = 0;
  uint64_t quiesce_asked_ = 0;
  std::set<uint64_t> open_;
  std::map<uint64_t, uint64_t> epoch_of_;
};

inline FakeDetached& FakeDetached::operator=(FakeDetached&& o) noexcept {
  if (this != &o) {
    if (m_ != nullptr) m_->Close(id_);
    m_ = std::exchange(o.m_, nullptr);
    id_ = o.id_;
  }
  return *this;
}

inline FakeDetached::~FakeDetached() {
  if (m_ != nullptr) m_->Close(id_);
}

}  // namespace ringrpc::pool::testing

#endif  // RINGRPC_POOL_TESTING_FAKE_MANAGER_H_
