// ringrpc/client/cq_thread_set.h — a set of completion-queue threads that several
// channels share, made once and handed to each (as a grpc EventEngine or a
// CompletionQueue is shared). Without one, a channel uses the process-wide
// set (one thread per usable CPU) or, with ringrpc.cq_threads /
// ringrpc.poller, threads of its own.
//
// Channels on one set share its threads, and channels on one set whose
// targets and arguments are equal share their connections too. The threads
// live while the set or any channel made with it does.
//
// Threading: Create and every method from any thread.
//
//   ringrpc::Status error;
//   auto threads = ringrpc::CqThreadSet::Create({.threads = 4}, &error);
//   ringrpc::ChannelArguments args;
//   args.SetCqThreadSet(threads);
//   auto a = ringrpc::CreateCustomChannel("svc-a:443", creds, args);
//   auto b = ringrpc::CreateCustomChannel("svc-b:443", creds, args);  // same 4 threads
#ifndef RINGRPC_CLIENT_CQ_THREAD_SET_H_
#define RINGRPC_CLIENT_CQ_THREAD_SET_H_

#include <cstddef>
#include <memory>
#include <string>

#include "ringrpc/client/status.h"

namespace ringrpc {

namespace runtime {
class CqThreads;
}

class CqThreadSet {
 public:
  struct Options {
    // 0: one per CPU the process may use (affinity mask, cgroup quota).
    size_t threads = 0;
    // "io_uring", "epoll", or "" (RINGRPC_POLLER, else io_uring with the
    // epoll fallback), as ringrpc.poller.
    std::string poller;
  };

  // The threads, started; null with *status (if given) saying why not
  // (INVALID_ARGUMENT for a bad option, UNAVAILABLE if no loop could start).
  static std::shared_ptr<CqThreadSet> Create(const Options& options, Status* status = nullptr);

  size_t size() const;
  // The threads themselves (ringrpc's channel code).
  const std::shared_ptr<runtime::CqThreads>& threads() const { return threads_; }

 private:
  explicit CqThreadSet(std::shared_ptr<runtime::CqThreads> t) : threads_(std::move(t)) {}
  std::shared_ptr<runtime::CqThreads> threads_;
};

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_CQ_THREAD_SET_H_
