#include "ringrpc/client/runtime/cq_threads.h"

#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <set>
#include <string>

#include "ringrpc/base/fork.h"
#include "ringrpc/base/mutex.h"
#include "ringrpc/client/runtime/cpu_count.h"
#include "ringrpc/pool/thread_context.h"

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
  // fork(): held across it, so the child's copy is consistent; the child
  // abandons the parent's orphans (their threads do not exist there).
  void LockForFork() ABSL_NO_THREAD_SAFETY_ANALYSIS { mu_.Lock(); }
  void UnlockAfterFork() ABSL_NO_THREAD_SAFETY_ANALYSIS { mu_.Unlock(); }
  void AbandonInChild() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    for (std::thread& t : threads_) AbandonForever(std::make_unique<std::thread>(std::move(t)));
    threads_.clear();
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

// Every CqThreads alive, for the fork handlers.
class LiveSets {
 public:
  void Add(CqThreads* s) {
    MutexLock lock(&mu_);
    sets_.insert(s);
  }
  void Remove(CqThreads* s) {
    MutexLock lock(&mu_);
    sets_.erase(s);
  }
  // pthread_atfork: the sets and the orphans are held across fork(); in the
  // child every set gets new threads (the parent's do not exist there).
  static void Prepare() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    Get().mu_.Lock();
    TheOrphans().LockForFork();
  }
  static void Parent() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    TheOrphans().UnlockAfterFork();
    Get().mu_.Unlock();
  }
  static void Child() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    TheOrphans().AbandonInChild();
    for (CqThreads* s : Get().sets_) s->RestartInChild();
    TheOrphans().UnlockAfterFork();
    Get().mu_.Unlock();
  }
  static LiveSets& Get() {
    static LiveSets* sets = [] {
      auto* s = new LiveSets;  // never destroyed, as the orphans
      pthread_atfork(&Prepare, &Parent, &Child);
      return s;
    }();
    return *sets;
  }

 private:
  Mutex mu_;
  std::set<CqThreads*> sets_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<CqThreads::Thread>> CqThreads::StartThread(
    std::optional<Backend> backend, size_t i) {
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
    return loop.status();
  }
  t->loop = *loop;
  return t;
}

void CqThreads::RestartInChild() {
  for (size_t i = 0; i < threads_.size(); ++i) {
    std::unique_ptr<Thread>& t = threads_[i];
    // The parent's thread, loop, ring, tasks and connections: never touched
    // again here (the ring and the sockets are still the parent's).
    AbandonForever(std::move(t));
    // The same backend the parent ran (io_uring falls back to epoll as at
    // first); nothing to fall back to means no thread can run calls here.
    absl::StatusOr<std::unique_ptr<Thread>> fresh = StartThread(backend_, i);
    if (!fresh.ok()) fresh = StartThread(std::nullopt, i);
    if (!fresh.ok()) {
      std::fprintf(stderr, "ringrpc: no CQ thread could start after fork(): %s\n",
                   std::string(fresh.status().message()).c_str());
      std::abort();
    }
    t = *std::move(fresh);
  }
}

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
    absl::StatusOr<std::unique_ptr<Thread>> t = StartThread(backend, i);
    if (!t.ok()) {
      cq->Shutdown();
      return t.status();
    }
    cq->backend_ = (*t)->loop->backend();
    cq->threads_.push_back(*std::move(t));
  }
  LiveSets::Get().Add(cq.get());
  return cq;
}

CqThreads::~CqThreads() {
  LiveSets::Get().Remove(this);
  Shutdown();
}

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
