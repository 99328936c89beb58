// ringrpc/client/runtime/cq_threads.h — the set of completion-queue threads: N
// threads, each running one EventLoop with its own pool ThreadContext.
//
// Threading: Start/Shutdown/Post from any thread (not from a CQ thread for
// Shutdown). Each loop is used only on its own thread.
//
//   auto cq = CqThreads::Start({.threads = 4});
//   (*cq)->Post(0, [] { /* runs on CQ thread 0 */ });
//   (*cq)->Shutdown();   // also done by the destructor
#ifndef RINGRPC_CLIENT_RUNTIME_CQ_THREADS_H_
#define RINGRPC_CLIENT_RUNTIME_CQ_THREADS_H_

#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "ringrpc/client/runtime/event_loop.h"

namespace ringrpc::runtime {

class CqThreads {
 public:
  struct Options {
    // 0: one per CPU the process may use (ringrpc/client/runtime/cpu_count.h: the
    // affinity mask of the thread calling Start, capped by the cgroup v2
    // CPU quota).
    size_t threads = 0;
    // Unset: RINGRPC_POLLER, else io_uring with the epoll fallback.
    std::optional<Backend> backend;
  };

  // Starts the threads; each creates its loop on itself. An error (a bad
  // RINGRPC_POLLER, a loop that cannot be made) stops the ones started.
  static absl::StatusOr<std::unique_ptr<CqThreads>> Start(Options options);
  ~CqThreads();
  CqThreads(const CqThreads&) = delete;
  CqThreads& operator=(const CqThreads&) = delete;

  size_t size() const { return threads_.size(); }
  Backend backend() const { return backend_; }
  EventLoop& loop(size_t i) { return *threads_[i]->loop; }

  // Runs `fn` on CQ thread `i`.
  void Post(size_t i, Inbox::Fn fn) { threads_[i]->loop->Post(std::move(fn)); }

  // fork(): in the child, every set gets new threads with new loops before
  // fork() returns (a pthread_atfork handler), so channels made before the
  // fork keep working there, on connections of their own. What the parent's
  // threads held (their rings, tasks, calls in flight and connections) is
  // abandoned in the child, never touched: the calls the parent had in
  // flight do not end in the child.
  void RestartInChild();

  // Stops every loop: tasks destroyed (operations cancelled), pool shards
  // destroyed (connections closed), loops closed, threads joined (a thread
  // calling this on itself ends on its own and is joined by the next Start
  // or at exit). Idempotent.
  void Shutdown();

 private:
  struct Thread {
    EventLoop* loop = nullptr;
    std::thread thread;
  };
  CqThreads() = default;
  static absl::StatusOr<std::unique_ptr<Thread>> StartThread(std::optional<Backend> backend,
                                                             size_t i);

  Backend backend_ = Backend::kIoUring;
  std::vector<std::unique_ptr<Thread>> threads_;
};

}  // namespace ringrpc::runtime

#endif  // RINGRPC_CLIENT_RUNTIME_CQ_THREADS_H_
