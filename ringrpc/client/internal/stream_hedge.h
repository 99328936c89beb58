// ringrpc/client/internal/stream_hedge.h — what a hedged stream's copies share
// (gRFC A6's hedgingPolicy on a streaming method): the copies sent besides
// the one the caller's operations run on, the policy's decisions, and the
// event that wakes the coroutine watching them all (stream_hedging.cc).
// Private to ringrpc/client/.
//
// Threading: the call's CQ thread only.
//
//   impl->replay->hedge = std::make_shared<StreamHedge>(loop, policy, throttle);
//   loop.Spawn(CallOpener::HedgeStream(self, impl, impl->replay->hedge));
#ifndef RINGRPC_CLIENT_INTERNAL_STREAM_HEDGE_H_
#define RINGRPC_CLIENT_INTERNAL_STREAM_HEDGE_H_

#include <memory>
#include <vector>

#include "ringrpc/base/time.h"
#include "ringrpc/client/channel/retry_policy.h"
#include "ringrpc/client/client_call.h"
#include "ringrpc/client/client_context.h"
#include "ringrpc/client/runtime/loop_event.h"
#include "ringrpc/client/status.h"

namespace ringrpc::internal {

struct StreamHedge {
  StreamHedge(runtime::EventLoop& loop, const channel::HedgingPolicy& policy,
              channel::RetryThrottle* throttle)
      : wake(loop), state(policy, throttle) {}
  // A copy got its server's answer or ended, a copy opened, the call was
  // committed or let go: the watcher looks at everything again.
  runtime::LoopEvent wake;
  channel::HedgingState state;
  // A copy besides the caller's current attempt: opening (call null) or
  // open, each cancelled through its own state (the context's reaches the
  // caller's attempt).
  struct Copy {
    std::shared_ptr<CancelState> cancel;
    std::unique_ptr<ClientCall> call;  // null while it opens, or if it could not
    bool opening = true;
    Status open_failure;  // opened no stream: why
  };
  std::vector<Copy> copies;
  int sent = 1;           // copies sent, the caller's first one included
  bool stopped = false;   // committed or let go: no more copies; openers drop theirs
  bool released = false;  // the ClientCall is gone: the watcher touches it no more
  bool done = false;      // the watcher ended and no copy is opening

  // Every copy is cancelled (opening or open); none is sent again.
  void Stop() {
    stopped = true;
    for (Copy& c : copies) c.cancel->Cancel();
    wake.Set();
  }
};

}  // namespace ringrpc::internal

#endif  // RINGRPC_CLIENT_INTERNAL_STREAM_HEDGE_H_
