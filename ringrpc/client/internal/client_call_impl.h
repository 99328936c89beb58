// ringrpc/client/internal/client_call_impl.h — what one open call holds
// (ClientCall::Impl): its stream and lease, the address it runs on, its
// interceptors, the cancel target TryCancel reaches, its telemetry, and
// for a stream that may be sent again its Replay (gRFC A6). Shared by the
// files that open, retry and hedge calls. Private to ringrpc/client/.
//
// Threading: the call's CQ thread only; `alive` is what other threads
// reach (through a weak pointer, by a post to the loop).
#ifndef RINGRPC_CLIENT_INTERNAL_CLIENT_CALL_IMPL_H_
#define RINGRPC_CLIENT_INTERNAL_CLIENT_CALL_IMPL_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ringrpc/base/mutex.h"
#include "ringrpc/client/channel/call_metrics_table.h"
#include "ringrpc/client/channel/channel_state.h"
#include "ringrpc/client/channel/retry_policy.h"
#include "ringrpc/client/channel/subchannel.h"
#include "ringrpc/client/client_call.h"
#include "ringrpc/client/internal/call_opener.h"
#include "ringrpc/client/internal/interceptors.h"
#include "ringrpc/client/internal/stream_hedge.h"
#include "ringrpc/client/runtime/loop_event.h"
#include "ringrpc/client/transport/call.h"

namespace ringrpc {

struct ClientCall::Impl final : transport::Call::EndObserver {
  std::shared_ptr<channel::ChannelState> channel;
  runtime::EventLoop* loop = nullptr;  // the CQ thread the call lives on
  ClientContext* ctx = nullptr;
  // The context's cancel state, held: the call may be destroyed after its
  // context (the destructor must not read the context).
  std::shared_ptr<internal::CancelState> cancel_state;
  std::shared_ptr<channel::Subchannel> sc;
  channel::SubchannelLease lease;  // destroyed after `call`
  std::unique_ptr<transport::Call> call;
  // The channel's interceptors for this call (null: none).
  std::shared_ptr<internal::CallInterceptors> interceptors;
  // Set when an interceptor failed the call: its status, which Finish
  // reports; and the status once interceptors have seen it.
  std::optional<Status> failed;
  std::optional<Status> final_status;
  // WritesDone ran (its hook once, as grpc++'s; a second one is a no-op).
  bool writes_done = false;
  // What a TryCancel from another thread reaches (through a weak pointer).
  struct CancelTarget {
    transport::Call* call;
    runtime::EventLoop* loop;
    internal::CallInterceptors* interceptors;
  };
  std::shared_ptr<CancelTarget> alive;
  // Telemetry (null table: none): the attempt ends with the stream; with
  // `whole_call` it is the call's end too (a unary call records its own).
  channel::CallMetricsTable* metrics = nullptr;
  channel::MethodRow* metrics_row = nullptr;
  TimePoint attempt_start;
  bool whole_call = false;

  void OnCallEnd(const transport::Call& c) override {
    const StatusCode code = static_cast<StatusCode>(c.status()->code());
    const Duration took = Clock::now() - attempt_start;
    metrics->AttemptEnded(metrics_row, code, took, c.sent_message_bytes(),
                          c.received_message_bytes());
    if (whole_call) metrics->CallEnded(metrics_row, code, took);
  }

  // An interceptor failed the call: the stream is cancelled, and the call
  // ends with `s`.
  void Fail(Status s) {
    if (!failed) failed = std::move(s);
    call->Cancel();
  }

  // The LB policy's tracker for this call on `sc`, started (null: the
  // policy follows no calls); finished when the call is destroyed.
  std::unique_ptr<LbCallTracker> lb_tracker;

  // A stream that may still be sent again (gRFC A6: a retryPolicy, or the
  // transparent retry of a stream the server never saw); null for unary
  // attempts and hedged copies, whose callers retry them. Loop thread only.
  struct Replay {
    // `policy` null: the transparent retry only.
    Replay(const channel::RetryPolicy* policy, channel::RetryThrottle* throttle,
           runtime::EventLoop& loop)
        : retry(policy, throttle), progress(loop), cancel_event(loop) {}
    channel::RetryState retry;  // gRFC A6's decisions for this call
    std::string method;
    internal::CallOpener::AttemptPlan plan;  // the call's deadline, config, row
    // What was written, as sent (after interceptors), until committed.
    std::vector<std::pair<OutgoingMessage, bool>> sent;
    size_t sent_bytes = 0;
    size_t limit = 0;  // grpc.per_rpc_retry_buffer_size
    bool writes_done = false;
    bool committed = false;
    bool cancelled = false;   // ClientCall::Cancel: never again
    bool opening = false;     // the next attempt is being opened
    uint64_t generation = 0;  // bumped by each new attempt
    // Notified when `opening` clears, when another attempt takes the
    // call's place, and when a hedged stream's watcher ends: what the
    // call's operations wait at, however many.
    runtime::LoopCondition progress;
    // Set by ClientCall::Cancel: ends a wait to retry at once.
    runtime::LoopEvent cancel_event;
    // A stream under a hedgingPolicy: its other copies (null: none; then
    // the retryPolicy or the transparent retry sends attempts again).
    std::shared_ptr<internal::StreamHedge> hedge;
    // generation + 1 of an attempt perAttemptRecvTimeout cut off (0: none).
    uint64_t recv_timed_out = 0;
    TimePoint call_start;
    std::optional<Status> failure;  // the next attempt could not open: why
    bool call_end_recorded = false;
    // Operations suspended inside each transport call: an attempt that
    // left the call's place (`leaving`) is destroyed only once none of them
    // is still waking up in it.
    std::vector<std::pair<const transport::Call*, int>> awaiting;
    int& AwaitingIn(const transport::Call* c) {
      for (auto& [call, n] : awaiting) {
        if (call == c) return n;
      }
      return awaiting.emplace_back(c, 0).second;
    }
    std::vector<std::unique_ptr<ClientCall>> leaving;
    // The last operation left `c` (null: look at every one): the attempts
    // no operation is inside any more go.
    void Leave(const transport::Call* c);
  };
  std::unique_ptr<Replay> replay;
  // Counts one operation inside the current transport call (see
  // Replay::awaiting).
  struct Awaiting {
    explicit Awaiting(Impl* impl) : r(impl->replay.get()), call(impl->call.get()) {
      if (r != nullptr) ++r->AwaitingIn(call);
    }
    ~Awaiting() {
      if (r != nullptr && --r->AwaitingIn(call) == 0 && !r->leaving.empty()) r->Leave(call);
    }
    Awaiting(const Awaiting&) = delete;
    Awaiting& operator=(const Awaiting&) = delete;
    Replay* r;
    const transport::Call* call;
  };

  // Keeps a written message for a replay, unless committed; over the
  // buffer's limit the call commits (as grpc++ does). A hedged stream's
  // open copies get it now (a copy still opening, in its replay).
  // (A large message is shared, not copied.)
  void Remember(const OutgoingMessage& m, bool compress) {
    if (replay == nullptr || replay->committed) return;
    replay->sent_bytes += m.size();
    if (replay->sent_bytes > replay->limit) {
      Commit();
      return;
    }
    replay->sent.emplace_back(m, compress);
    if (replay->hedge != nullptr) {
      for (internal::StreamHedge::Copy& c : replay->hedge->copies) {
        if (c.call != nullptr) (void)c.call->impl_->call->Enqueue(m, compress);
      }
    }
  }
  // WritesDone, on a hedged stream's open copies too.
  void CloseWrites() {
    if (replay != nullptr) {
      replay->writes_done = true;
      if (replay->hedge != nullptr && !replay->committed) {
        for (internal::StreamHedge::Copy& c : replay->hedge->copies) {
          if (c.call != nullptr) c.call->impl_->call->WritesDone();
        }
      }
    }
    call->WritesDone();
  }
  // No attempt is sent again; a hedged stream's other copies are cancelled.
  void Commit() {
    if (replay == nullptr || replay->committed) return;
    replay->committed = true;
    replay->sent.clear();
    replay->sent.shrink_to_fit();
    if (replay->hedge != nullptr) replay->hedge->Stop();
  }
  // A retried stream's call end, with the status its caller gets.
  void RecordCallEnd(StatusCode code) {
    if (replay == nullptr || replay->call_end_recorded || metrics == nullptr) return;
    replay->call_end_recorded = true;
    metrics->CallEnded(metrics_row, code, Clock::now() - replay->call_start);
  }

  ~Impl() {
    if (replay != nullptr && replay->hedge != nullptr) {
      replay->hedge->released = true;  // the watcher lets the copies go
      replay->hedge->Stop();
    }
    if (replay != nullptr && call != nullptr) {
      RecordCallEnd(call->finished() ? static_cast<StatusCode>(call->status()->code())
                                     : StatusCode::CANCELLED);
    }
    if (lb_tracker != nullptr) lb_tracker->Finish();
    if (cancel_state != nullptr) {
      MutexLock lock(&cancel_state->mu);
      // Only our own registration: a reused context may already carry the
      // next call's.
      const std::weak_ptr<void>& r = cancel_state->running;
      if (!r.owner_before(alive) && !alive.owner_before(r)) {
        cancel_state->running.reset();
        cancel_state->cancel_running = nullptr;
      }
    }
    if (alive) {
      alive->call = nullptr;
      alive->interceptors = nullptr;
    }
    if (lease && !(*lease)->accepting_streams()) lease.Poison();
    call.reset();
  }
};

inline void ClientCall::Impl::Replay::Leave(const transport::Call* c) {
  std::erase_if(leaving, [this, c](const std::unique_ptr<ClientCall>& old) {
    const transport::Call* t = old->impl_->call.get();
    if ((c != nullptr && t != c) || AwaitingIn(t) > 0) return false;
    std::erase_if(awaiting, [t](const auto& entry) { return entry.first == t; });
    return true;
  });
}

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_INTERNAL_CLIENT_CALL_IMPL_H_
