// ringrpc/client/runtime/testing/run_to_completion.h — runs a task on a loop from a
// test's thread until it finishes. Test-only.
#ifndef RINGRPC_CLIENT_RUNTIME_TESTING_RUN_TO_COMPLETION_H_
#define RINGRPC_CLIENT_RUNTIME_TESTING_RUN_TO_COMPLETION_H_

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "ringrpc/base/task.h"
#include "ringrpc/base/time.h"
#include "ringrpc/client/runtime/event_loop.h"

namespace ringrpc::runtime::testing {

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
