// tests/faults/load.h — what the fault suite and the soak run drive a
// channel with: a closed loop of callback-API unary calls, each with a
// deadline, recording how every call ended; and the process's open
// socket count. Test-only.
#ifndef RINGRPC_TESTS_FAULTS_LOAD_H_
#define RINGRPC_TESTS_FAULTS_LOAD_H_

#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "ringrpc/client/channel.h"
#include "tests/proto/echo_test.pb.h"
#include "tests/testing/process_stats.h"

namespace ringrpc::testing {

using std::chrono::milliseconds;

inline constexpr char kLoadUnary[] = "/ringrpc.test.TestService/Unary";

// A closed loop of `concurrency` unary calls, each with `deadline`.
class Load {
 public:
  Load(Channel* channel, int concurrency, milliseconds deadline, int sleep_ms = 0)
      : channel_(channel), concurrency_(concurrency), deadline_(deadline) {
    test::EchoRequest req;
    req.set_payload("load");
    req.set_sleep_ms(sleep_ms);
    request_ = req.SerializeAsString();
  }
  ~Load() { Stop(); }

  void Start() {
    outstanding_ = concurrency_;
    for (int i = 0; i < concurrency_; ++i) Issue();
  }

  // No new calls; waits (at most 15 s) for the outstanding ones.
  void Stop() {
    stop_ = true;
    for (int i = 0; i < 1500 && outstanding_.load() > 0; ++i) {
      std::this_thread::sleep_for(milliseconds(10));
    }
  }

  static constexpr size_t kDistinctErrors = 64;
  struct Report {
    size_t issued = 0, ended_once = 0, ended_more = 0, not_ended = 0;
    std::map<StatusCode, int> codes;
    double worst_overrun_ms = 0;
    int outstanding = 0;
    std::string first_error;
    // The distinct error statuses seen (the first kDistinctErrors).
    std::set<std::string> errors;
    int count(StatusCode c) const { return codes.count(c) ? codes.at(c) : 0; }
  };
  // Long runs (the soak): records of calls that ended more than `after`
  // ago are counted and dropped, so memory stays flat. A second ending
  // after that could not be seen; the fault suite keeps every record.
  void ForgetEndedAfter(milliseconds after) { forget_after_ = after; }

  Report Summary() {
    std::lock_guard<std::mutex> lock(mu_);
    Report r = report_;
    r.issued = calls_.size() + forgotten_;
    r.ended_once += forgotten_once_;
    r.ended_more += forgotten_more_;
    for (Call& c : calls_) {
      int e = c.ends.load();
      if (e == 1) ++r.ended_once;
      if (e > 1) ++r.ended_more;
      if (e == 0) ++r.not_ended;
    }
    r.outstanding = outstanding_.load();
    return r;
  }
  size_t ok_count() {
    std::lock_guard<std::mutex> lock(mu_);
    return report_.codes.count(StatusCode::OK) ? report_.codes[StatusCode::OK] : 0;
  }

 private:
  struct Call {
    std::atomic<int> ends{0};
    ClientContext ctx;
    std::string reply;
    std::chrono::system_clock::time_point deadline;
    std::atomic<int64_t> ended_at_ms{0};  // steady clock, for ForgetEndedAfter
  };

  static int64_t SteadyMs() {
    return std::chrono::duration_cast<milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // Caller holds mu_.
  void ForgetOld() {
    if (forget_after_.count() == 0) return;
    int64_t cutoff = SteadyMs() - forget_after_.count();
    while (!calls_.empty()) {
      Call& c = calls_.front();
      int e = c.ends.load();
      int64_t at = c.ended_at_ms.load();
      if (e == 0 || at == 0 || at > cutoff) break;
      ++forgotten_;
      (e == 1 ? forgotten_once_ : forgotten_more_) += 1;
      calls_.pop_front();
    }
  }

  void Issue() {
    if (stop_) {
      --outstanding_;
      return;
    }
    Call* call;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ForgetOld();
      call = &calls_.emplace_back();
    }
    call->deadline = std::chrono::system_clock::now() + deadline_;
    call->ctx.set_deadline(call->deadline);
    channel_->UnaryCallAsync(
        kLoadUnary, &call->ctx, request_, &call->reply, [this, call](Status s) {
          call->ends.fetch_add(1);
          call->ended_at_ms.store(SteadyMs());
          double over = std::chrono::duration<double, std::milli>(std::chrono::system_clock::now() -
                                                                  call->deadline)
                            .count();
          {
            std::lock_guard<std::mutex> lock(mu_);
            ++report_.codes[s.error_code()];
            if (over > report_.worst_overrun_ms) report_.worst_overrun_ms = over;
            if (!s.ok() && report_.first_error.empty()) report_.first_error = s.ToString();
            if (!s.ok() && report_.errors.size() < kDistinctErrors) {
              report_.errors.insert(s.ToString());
            }
          }
          Issue();
        });
  }

  Channel* channel_;
  const int concurrency_;
  const milliseconds deadline_;
  std::string request_;
  std::atomic<bool> stop_{false};
  std::atomic<int> outstanding_{0};
  std::mutex mu_;
  std::deque<Call> calls_;  // stable addresses
  milliseconds forget_after_{0};
  size_t forgotten_ = 0, forgotten_once_ = 0, forgotten_more_ = 0;
  Report report_;
};

}  // namespace ringrpc::testing

#endif  // RINGRPC_TESTS_FAULTS_LOAD_H_
