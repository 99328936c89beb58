// tests/testing/hook_log.h — for interceptor tests: the hook points in
// grpc++'s order with a short name each, and a log the interceptors of a
// test write to from any thread.
#ifndef RINGRPC_TESTS_TESTING_HOOK_LOG_H_
#define RINGRPC_TESTS_TESTING_HOOK_LOG_H_

#include <iterator>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ringrpc/client/interceptor.h"

namespace ringrpc::testing {

using Hook = experimental::InterceptionHookPoints;

inline constexpr Hook kHooks[] = {Hook::PRE_SEND_INITIAL_METADATA,
                                  Hook::PRE_SEND_MESSAGE,
                                  Hook::PRE_SEND_CLOSE,
                                  Hook::POST_RECV_INITIAL_METADATA,
                                  Hook::POST_RECV_MESSAGE,
                                  Hook::POST_RECV_STATUS,
                                  Hook::PRE_SEND_CANCEL};
inline constexpr const char* kHookNames[] = {"send_md",  "send_msg", "close", "recv_md",
                                             "recv_msg", "status",   "cancel"};

// The short name of the hook point `m` is at.
inline const char* HookName(experimental::InterceptorBatchMethods* m) {
  for (size_t i = 0; i < std::size(kHooks); ++i) {
    if (m->QueryInterceptionHookPoint(kHooks[i])) return kHookNames[i];
  }
  return "?";
}

// Shared by the interceptors of a test.
struct HookLog {
  std::mutex mu;
  std::vector<std::string> lines;
  void Add(std::string s) {
    std::lock_guard<std::mutex> lock(mu);
    lines.push_back(std::move(s));
  }
  std::vector<std::string> Take() {
    std::lock_guard<std::mutex> lock(mu);
    return std::exchange(lines, {});
  }
};

}  // namespace ringrpc::testing

#endif  // RINGRPC_TESTS_TESTING_HOOK_LOG_H_
