// ringrpc/pool/testing/pool_driver.h — drives a pool through arbitrary operation
// sequences on several simulated threads and checks every invariant after
// every step. Shared by the seeded property test and the libFuzzer target,
// so a fuzzer crash replays as a property-test input. Test-only.
//
//   PoolDriver d(config_bytes);
//   for (each step) {
//     d.Step(op, arg);
//     if (absl::Status s = d.Check(); !s.ok()) FAIL() << s;
//   }
//   d.Finish();  // drains everything and checks once more
#ifndef RINGRPC_POOL_TESTING_POOL_DRIVER_H_
#define RINGRPC_POOL_TESTING_POOL_DRIVER_H_

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ringrpc/pool/mutex_reservoir.h"
#include "ringrpc/pool/pool.h"
#include "ringrpc/pool/reservoir.h"
#include "ringrpc/pool/testing/fake_manager.h"
#include "ringrpc/pool/testing/fake_runtime.h"
#include "ringrpc/pool/testing/harness.h"

namespace ringrpc::pool::testing {

class PoolDriver {
 public:
  static constexpr int kThreads = 3;

  // Reads the pool's configuration from 4 bytes.
  explicit PoolDriver(std::array<uint8_t, 4> cfg) {
    PoolConfig c;
    c.max_size = 1 + cfg[0] % 4;
    c.max_leases_per_connection = 1 + (cfg[0] >> 2) % 3;
    c.min_idle = (cfg[0] >> 4) % 3;
    if (c.min_idle > c.max_size) c.min_idle = c.max_size;
    if (cfg[1] & 1) c.idle_timeout = std::chrono::milliseconds(50 + cfg[1] % 200);
    if (cfg[1] & 2) c.max_lifetime = std::chrono::milliseconds(100 + cfg[1] % 400);
    if (cfg[1] & 4) c.max_uses = 1 + (cfg[1] >> 3) % 6;
    if (cfg[2] & 1) c.acquire_timeout = std::chrono::milliseconds(5 + cfg[2] % 60);
    if (cfg[2] & 2) c.max_concurrent_connects = 1 + (cfg[2] >> 2) % 2;
    c.reap_interval = std::chrono::milliseconds(10 + cfg[3] % 40);
    c.max_park_time = std::chrono::milliseconds(30 + cfg[3] % 100);
    c.lifetime_jitter = (cfg[3] & 0x80) ? 0.1 : 0.0;
    config_ = c;
    switch (cfg[2] >> 6) {
      case 1:
        exchange_ = std::make_shared<Reservoir<FakeDetached>>(1 + cfg[3] % 3);
        break;
      case 2:
        exchange_ = std::make_shared<MutexReservoir<FakeDetached>>(1 + cfg[3] % 3);
        break;
      default:
        break;
    }
    pool_.emplace(*FakePool::Create(c, m_, exchange_));  // valid by construction
  }

  ~PoolDriver() { (void)Finish(); }

  const PoolConfig& config() const { return config_; }

  void Step(uint8_t op, uint8_t arg) {
    ++steps_;
    int t = arg % kThreads;
    Thread& th = threads_[t];
    switch (op % 16) {
      case 0:
      case 1:
      case 2: {  // start an acquire
        Op o;
        o.start_epoch = invalidations_;
        o.started = th.t.Start(AcquireTask(*pool_));
        th.ops.push_back(std::move(o));
        break;
      }
      case 3:
      case 4: {  // release a lease
        if (th.leases.empty()) break;
        size_t i = (arg / kThreads) % th.leases.size();
        th.t.Run([&] { th.leases.erase(th.leases.begin() + i); });
        break;
      }
      case 5: {  // poison and release
        if (th.leases.empty()) break;
        size_t i = (arg / kThreads) % th.leases.size();
        th.t.Run([&] {
          th.leases[i].Poison();
          th.leases.erase(th.leases.begin() + i);
        });
        break;
      }
      case 6: {  // take
        if (th.leases.empty()) break;
        size_t i = (arg / kThreads) % th.leases.size();
        th.t.Run([&] {
          absl::StatusOr<FakeConn> c = th.leases[i].Take();
          if (c.ok()) {
            th.leases.erase(th.leases.begin() + i);
            m_->Disconnect(std::move(*c));  // the taker closes it
            ++taken_closed_;
          }
        });
        break;
      }
      case 7: {  // cancel a running acquire
        if (th.ops.empty()) break;
        size_t i = (arg / kThreads) % th.ops.size();
        th.t.Run([&] { th.ops.erase(th.ops.begin() + i); });
        break;
      }
      case 8:  // invalidate
        pool_->Invalidate();
        m_->epoch = ++invalidations_;
        break;
      case 9:  // close, rarely
        if (arg < 4) pool_->Close();
        break;
      case 10:
      case 11: {  // time passes on every thread alike
        auto d = std::chrono::milliseconds(1 + arg % 40);
        for (Thread& x : threads_) x.t.AdvanceBy(d);
        break;
      }
      case 12:  // run what is due on one thread
        th.t.RunReady();
        break;
      case 13: {  // failures
        switch ((arg / kThreads) % 4) {
          case 0:
            m_->fail_connects += 1;
            break;
          case 1:
            m_->fail_recycles += 1;
            break;
          case 2:
            m_->fail_detaches += 1;
            break;
          case 3:
            m_->fail_attaches += 1;
            break;
        }
        break;
      }
      case 14: {  // latencies
        auto d = std::chrono::milliseconds((arg / kThreads) % 4 == 0 ? 0 : 1 + arg % 20);
        switch ((arg / kThreads) % 3) {
          case 0:
            m_->connect_latency = d;
            break;
          case 1:
            m_->recycle_latency = d;
            break;
          case 2:
            m_->attach_latency = d;
            break;
        }
        break;
      }
      case 15: {  // the thread ends, if it holds nothing
        if (!th.leases.empty() || !th.ops.empty()) break;
        th.t.DestroyShards();
        break;
      }
    }
    Harvest();
  }

  // Every invariant, or the first one broken.
  absl::Status Check() {
    if (!failure_.ok()) return failure_;
    for (Thread& th : threads_) {
      absl::Status s = th.t.Run([&] { return pool_->CheckShardInvariantsForTest(); });
      if (!s.ok()) return s;
    }
    if (absl::Status s = CheckConservation(*pool_, *m_); !s.ok()) return s;
    PoolMetrics x = pool_->Metrics();
    if (x.taken != taken_closed_) {
      return absl::InternalError("taken count drifted: " + x.ToString());
    }
    // Exclusivity and capacity, across all threads.
    std::map<uint64_t, uint32_t> per_conn;
    size_t leases = 0;
    for (Thread& th : threads_) {
      leases += th.t.Run([&] { return pool_->ShardStateForTest().granted; });
    }
    for (Thread& th : threads_) {
      for (FakeLease& l : th.leases) {
        ++leases;
        if (!m_->IsOpen(l->id)) {
          return absl::InternalError(absl::StrCat("lease on closed connection ", l->id));
        }
        if (++per_conn[l->id] > config_.max_leases_per_connection) {
          return absl::InternalError(absl::StrCat("connection ", l->id,
                                                  " has more leases than its capacity ",
                                                  config_.max_leases_per_connection));
        }
      }
    }
    if (x.leases != leases) {
      return absl::InternalError(absl::StrCat("pool counts ", x.leases,
                                              " leases, the test holds (or was granted) ", leases));
    }
    if (exchange_ && exchange_->admitted() != exchange_->parked()) {
      return absl::InternalError(absl::StrCat("exchange admission leaked: admitted ",
                                              exchange_->admitted(), " parked ",
                                              exchange_->parked()));
    }
    return absl::OkStatus();
  }

  // Ends every lease and acquire, ends every thread, and checks that what
  // is left is exactly what was parked, and that the exchange can still be
  // filled to its capacity.
  absl::Status Finish() {
    if (finished_) return failure_;
    finished_ = true;
    for (Thread& th : threads_) {
      th.t.Run([&] {
        th.ops.clear();
        th.leases.clear();
      });
    }
    for (Thread& th : threads_) th.t.DestroyShards();
    if (failure_.ok()) failure_ = Check();
    PoolMetrics x = pool_->Metrics();
    if (failure_.ok() && x.live != 0) {
      failure_ = absl::InternalError("connections live after every thread ended: " + x.ToString());
    }
    if (exchange_) {
      pool_->Invalidate();  // clears it
      size_t admitted = 0;
      while (exchange_->TryAdmit()) ++admitted;
      if (failure_.ok() && admitted != exchange_->capacity()) {
        failure_ = absl::InternalError(
            absl::StrCat("exchange admits ", admitted, " of capacity ", exchange_->capacity()));
      }
      for (size_t i = 0; i < admitted; ++i) exchange_->CancelAdmit();
    }
    if (failure_.ok() && m_->open() != 0) {
      failure_ = absl::InternalError(absl::StrCat(m_->open(), " connections leaked"));
    }
    return failure_;
  }

  uint64_t steps() const { return steps_; }
  PoolMetrics Metrics() const { return pool_->Metrics(); }

 private:
  struct Op {
    uint64_t start_epoch = 0;
    Started<AcquireResult> started;
  };
  struct Thread {
    FakeThread t;
    std::vector<Op> ops;
    std::vector<FakeLease> leases;
  };

  // Moves finished acquires' leases into the threads' hands, checking each.
  void Harvest() {
    for (Thread& th : threads_) {
      for (size_t i = 0; i < th.ops.size();) {
        Op& o = th.ops[i];
        if (!o.started.done()) {
          ++i;
          continue;
        }
        AcquireResult& r = o.started.result();
        if (r.ok()) {
          FakeLease& l = *r;
          // Retirement is final: an acquire that started after an
          // invalidate never gets a connection dialled before it.
          if (m_->EpochOf(l->id) < o.start_epoch && failure_.ok()) {
            failure_ = absl::InternalError(
                absl::StrCat("stale connection ", l->id, " (epoch ", m_->EpochOf(l->id),
                             ") handed to an acquire started at epoch ", o.start_epoch));
          }
          if (config_.max_uses && l.uses() > *config_.max_uses && failure_.ok()) {
            failure_ = absl::InternalError("lease beyond max_uses");
          }
          th.leases.push_back(std::move(l));
        } else if (r.status().message().empty() && failure_.ok()) {
          failure_ = absl::InternalError("an acquire failed with no message");
        }
        th.t.Run([&] { th.ops.erase(th.ops.begin() + i); });
      }
    }
  }

  PoolConfig config_;
  std::shared_ptr<FakeManager> m_ = std::make_shared<FakeManager>();
  std::shared_ptr<Exchange<FakeDetached>> exchange_;
  std::optional<FakePool> pool_;
  // Declared after pool_ so threads (and their shards) die first.
  std::array<Thread, kThreads> threads_;
  uint64_t invalidations_ = 0;
  uint64_t taken_closed_ = 0;
  uint64_t steps_ = 0;
  absl::Status failure_;
  bool finished_ = false;
};

}  // namespace ringrpc::pool::testing

#endif  // RINGRPC_POOL_TESTING_POOL_DRIVER_H_
