// ringrpc/client/runtime/testing/run_to_completion.h — a loop for a test's
// thread, and a task run on it until it finishes. Test-only.
#ifndef RINGRPC_CLIENT_RUNTIME_TESTING_RUN_TO_COMPLETION_H_
#define RINGRPC_CLIENT_RUNTIME_TESTING_RUN_TO_COMPLETION_H_

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "ringrpc/base/task.h"
#include "ringrpc/base/time.h"
#include "ringrpc/client/runtime/event_loop.h"

namespace ringrpc::runtime::testing {

// An event loop the calling thread turns (RunOnce). One that cannot be
// made is the test's failure: the process aborts saying why.
inline std::unique_ptr<EventLoop> MakeLoop() {
  absl::StatusOr<std::unique_ptr<EventLoop>> loop = EventLoop::Create();
  if (!loop.ok()) {
    std::fprintf(stderr, "MakeLoop: %s\n", loop.status().ToString().c_str());
    std::abort();
  }
  return std::move(*loop);
}

// Starts `task` and turns `loop` until it is done. A task still running
// after `limit` is a hang: the test process aborts with a message.
template <typename T>
T RunToCompletion(EventLoop& loop, Task<T> task, Duration limit = std::chrono::seconds(20)) {
  task.handle().resume();
  auto end = Clock::now() + limit;
  while (!task.done()) {
    if (Clock::now() > end) {
      std::fprintf(stderr, "RunToCompletion: the task hung (no result within the limit)\n");
      std::abort();
    }
    loop.RunOnce(std::chrono::milliseconds(10));
  }
  return std::move(task.result());
}

}  // namespace ringrpc::runtime::testing

#endif  // RINGRPC_CLIENT_RUNTIME_TESTING_RUN_TO_COMPLETION_H_
