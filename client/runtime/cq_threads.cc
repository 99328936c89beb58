#include "client/runtime/cq_threads.h"

#include "client/runtime/cpu_count.h"

#include <cstdlib>
#include <future>
#include <mutex>

#include "base/mutex.h"
#include "pool/thread_context.h"

namespace ringrpc::runtime {
namespace {

// CQ threads that had to let go of their own set (see Shutdown) finish on
// their own; they are joined here, by the next Start() or at exit, so their
// end happens-before anything that follows (and no thread is left behind).
class Orphans {
 public:
  void Add(std::thread t) {
    MutexLock lock(&mu_);
    if (exiting_) {
      // The process is past its exit-time join: nothing will join this
      // thread, which ends by itself once its task returns. Detached, it is
      // no leak (TSAN reported one: a set whose last reference dropped on
      // its own thread while the test binary exited).
      t.detach();
      return;
    }
    threads_.push_back(std::move(t));
  }
  // At exit: joins what is here; later orphans detach themselves.
  void JoinAtExit() {
    {
      MutexLock lock(&mu_);
      exiting_ = true;
    }
    JoinAll();
  }
  void JoinAll() {
    std::vector<std::thread> threads;
    {
      MutexLock lock(&mu_);
      threads.swap(threads_);
    }
    for (std::thread& t : threads) {
      if (t.get_id() == std::this_thread::get_id()) {
        Add(std::move(t));  // cannot join itself: the next caller will
      } else {
        t.join();
      }
    }
  }

 private:
  Mutex mu_;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  bool exiting_ ABSL_GUARDED_BY(mu_) = false;
};

// Never destroyed: a CQ thread may still add itself while the process
// exits (the last reference to a set dropped on one of its own threads
// after main returned); a static destructor would race it. What is here is
// joined by the next Start() and, at exit, by an atexit handler.
Orphans& TheOrphans() {
  static Orphans* orphans = [] {
    auto* o = new Orphans;
    std::atexit([] { TheOrphans().JoinAtExit(); });
    return o;
  }();
  return *orphans;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CqThreads>> CqThreads::Start(Options options) {
  TheOrphans().JoinAll();
  std::optional<Backend> backend = options.backend;
  if (!backend) {
    absl::StatusOr<std::optional<Backend>> env = BackendFromEnv();
    if (!env.ok()) return env.status();
    backend = *env;
  }
  size_t n = options.threads;
  if (n == 0) n = UsableCpus();  // affinity mask and cgroup CPU quota

  std::unique_ptr<CqThreads> cq(new CqThreads());
  for (size_t i = 0; i < n; ++i) {
    auto t = std::make_unique<Thread>();
    std::promise<absl::StatusOr<EventLoop*>> ready;
    std::future<absl::StatusOr<EventLoop*>> made = ready.get_future();
    t->thread = std::thread([backend, i, &ready] {
      // The loop is made on its own thread (io_uring single-issuer mode).
      absl::StatusOr<std::unique_ptr<EventLoop>> loop = EventLoop::Create(backend);
      if (!loop.ok()) {
        ready.set_value(loop.status());
        return;
      }
      (*loop)->set_cq_index(i);
      auto context = std::make_unique<pool::ThreadContext>(loop->get());
      {
        pool::ThreadContext::Scope scope(context.get());
        ready.set_value(loop->get());
        (*loop)->Run();
        // Order matters: tasks may hold leases on the shards; shards' reapers
        // and connections use the loop.
        (*loop)->DestroyTasks();
        context.reset();
      }
      loop->reset();
    });
    absl::StatusOr<EventLoop*> loop = made.get();
    if (!loop.ok()) {
      t->thread.join();
      cq->Shutdown();
      return loop.status();
    }
    t->loop = *loop;
    cq->backend_ = (*loop)->backend();
    cq->threads_.push_back(std::move(t));
  }
  return cq;
}

CqThreads::~CqThreads() { Shutdown(); }

void CqThreads::Shutdown() {
  for (auto& t : threads_) {
    if (t->thread.joinable()) t->loop->Stop();
  }
  for (auto& t : threads_) {
    if (!t->thread.joinable()) continue;
    if (t->thread.get_id() == std::this_thread::get_id()) {
      // The last owner let go on one of these very threads (a call's end
      // released it): it cannot join itself. Its loop is stopped and owned
      // by the thread, which finishes the current task and ends; the next
      // Start() (or process exit) joins it.
      TheOrphans().Add(std::move(t->thread));
    } else {
      t->thread.join();
    }
  }
}

}  // namespace ringrpc::runtime
