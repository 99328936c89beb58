// ringrpc/client/runtime/internal/backends.h — the two EventLoop backends.
#ifndef RINGRPC_CLIENT_RUNTIME_INTERNAL_BACKENDS_H_
#define RINGRPC_CLIENT_RUNTIME_INTERNAL_BACKENDS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "ringrpc/client/runtime/event_loop.h"

namespace ringrpc::runtime::internal {

// UNAVAILABLE when io_uring cannot be set up here (the message says why).
absl::StatusOr<std::unique_ptr<EventLoop>> NewUringLoop();
absl::StatusOr<std::unique_ptr<EventLoop>> NewEpollLoop();

}  // namespace ringrpc::runtime::internal

#endif  // RINGRPC_CLIENT_RUNTIME_INTERNAL_BACKENDS_H_
