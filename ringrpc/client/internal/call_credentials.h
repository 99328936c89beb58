// ringrpc/client/internal/call_credentials.h — running a call's credentials when it
// opens (ringrpc/client/call_open.cc). Private to ringrpc/client/.
#ifndef RINGRPC_CLIENT_INTERNAL_CALL_CREDENTIALS_H_
#define RINGRPC_CLIENT_INTERNAL_CALL_CREDENTIALS_H_

#include <memory>
#include <vector>

#include "ringrpc/base/task.h"
#include "ringrpc/base/time.h"
#include "ringrpc/client/call_credentials.h"
#include "ringrpc/client/client_context.h"
#include "ringrpc/client/runtime/event_loop.h"
#include "ringrpc/client/transport/metadata.h"

namespace ringrpc::internal {

// Gets the metadata of `creds` (in order) for one call and appends it to
// `md`. Runs on the call's CQ thread (`loop`); credentials that may block
// run on a credentials thread while the call waits, at most until
// `deadline` and no longer than a TryCancel (seen within 50 ms). `keep`
// holds what `loop` belongs to while a credentials thread may still post
// back to it. Errors name the credentials' failure.
Task<Status> ApplyCallCredentials(std::shared_ptr<void> keep, runtime::EventLoop& loop,
                                  TimePoint deadline, std::shared_ptr<CancelState> cancel,
                                  std::vector<std::shared_ptr<CallCredentials>> creds,
                                  CallCredentials::CallInfo info, transport::Metadata* md);

}  // namespace ringrpc::internal

#endif  // RINGRPC_CLIENT_INTERNAL_CALL_CREDENTIALS_H_
