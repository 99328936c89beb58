// ringrpc/client/internal/call_opener.h — opening calls on a channel's state, for
// ringrpc/client/channel.cc (Channel's entry points) and ClientCall (a stream's
// next attempt). Implemented by room: call_open.cc (Open: pick, lease,
// start), unary_call.cc (a unary call and its retries), stream_retry.cc
// (a stream's next attempt), hedging.cc (hedged unary copies),
// stream_hedging.cc (a hedged stream's copies). Private to
// ringrpc/client/.
//
// Threading: Open and Unary run on one of the channel's CQ threads (they
// answer FAILED_PRECONDITION elsewhere); the tasks hold the channel state.
#ifndef RINGRPC_CLIENT_INTERNAL_CALL_OPENER_H_
#define RINGRPC_CLIENT_INTERNAL_CALL_OPENER_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "ringrpc/base/task.h"
#include "ringrpc/base/time.h"
#include "ringrpc/client/channel.h"
#include "ringrpc/client/channel/retry_policy.h"
#include "ringrpc/client/channel/subchannel.h"
#include "ringrpc/client/client_call.h"
#include "ringrpc/client/client_context.h"
#include "ringrpc/client/status.h"
#include "ringrpc/client/transport/metadata.h"

namespace ringrpc {
namespace channel {
struct ActiveConfig;
class ChannelState;
struct MethodConfig;
class MethodRow;
}  // namespace channel
namespace transport {
class Call;
}  // namespace transport
namespace runtime {
class EventLoop;
}  // namespace runtime

namespace internal {
struct Attempt;        // pick_loop.h
struct AttemptRecord;  // call_open.cc
struct StreamHedge;    // stream_hedge.h
class CallInterceptors;
// A DEADLINE_EXCEEDED naming perAttemptRecvTimeout: an attempt the server
// did not answer within it, when no retry followed.
Status RecvTimeoutStatus(Duration timeout);

// Where a unary call's response goes: a ByteBuffer (as received) or a
// string (moved in when the bytes are one string, else joined).
struct ResponseSink {
  std::string* str = nullptr;
  ByteBuffer* buf = nullptr;
  bool null() const { return str == nullptr && buf == nullptr; }
  void Set(ByteBuffer&& bytes) const {
    if (buf != nullptr) {
      *buf = std::move(bytes);
    } else {
      *str = std::move(bytes).TakeString();
    }
  }
};

// Opens calls on a channel's state: the step between the channel core
// (ringrpc/client/channel/channel_state.h) and a ClientCall.
class CallOpener {
 public:
  // What a retry (gRFC A6) sets for one attempt of a call.
  struct AttemptPlan {
    std::optional<TimePoint> deadline;  // the call's, fixed when it started
    int previous_attempts = 0;          // sent as grpc-previous-rpc-attempts
    // Looked up once per call, not per attempt: the service config in
    // force when the call started (null: look it up), its method entry.
    const channel::ActiveConfig* config = nullptr;
    bool method_config_known = false;
    const channel::MethodConfig* method_config = nullptr;  // null: none
    channel::MethodRow* metrics_row = nullptr;             // null: look it up
    // A hedged copy's own cancel state (null: the context's). The hedged
    // call holds the context's and cancels each copy through its own when
    // it needs it no more (another copy answered, TryCancel): its waits for
    // a connection end at once, as a call's do at TryCancel.
    std::shared_ptr<CancelState> cancel;
  };
  // A stream's retry (gRFC A6, and the transparent one): after an
  // operation on attempt `generation` found the call ended, opens the next
  // attempt, replays what was sent and swaps it in. False: no retry (the
  // call is committed; its status stands).
  static Task<bool> NextStreamAttempt(ClientCall::Impl* impl, uint64_t generation);
  // `method` must outlive the task (callers await it at once). One
  // attempt, recorded in the channel's call metrics; with `whole_call` its
  // end is the call's end too (a stream; Unary records its call itself).
  static Task<std::unique_ptr<ClientCall>> Open(std::shared_ptr<channel::ChannelState> self,
                                                const std::string& method, ClientContext* ctx,
                                                Status* out, bool whole_call = true,
                                                const AttemptPlan* plan = nullptr);
  static Task<std::unique_ptr<ClientCall>> OpenHolding(std::shared_ptr<channel::ChannelState> self,
                                                       std::string method, ClientContext* ctx,
                                                       Status* out) {
    co_return co_await Open(std::move(self), method, ctx, out);
  }
  // A unary call; the task holds the channel. Its attempts: the
  // transparent retry and the retryPolicy's (A6), or UnaryHedged's.
  static Task<Status> Unary(std::shared_ptr<channel::ChannelState> self, std::string method,
                            ClientContext* ctx, std::string request, ResponseSink response);

 private:
  // The call's deadline: the earlier of the context's and now + the
  // method config's timeout.
  static TimePoint CallDeadline(runtime::EventLoop& loop, const ClientContext& ctx,
                                const channel::MethodConfig* mc);
  // Unary's attempts under a hedgingPolicy (A6): copies sent
  // hedgingDelay apart, the first answer wins.
  static Task<Status> UnaryHedged(std::shared_ptr<channel::ChannelState> self,
                                  const std::string& method, ClientContext* ctx,
                                  OutgoingMessage request, ResponseSink response,
                                  const AttemptPlan& plan);
  // Cancel() from any thread reaches the call on its loop from now on (or
  // cancels it at once if it came first).
  static void RegisterCancel(ClientCall::Impl& impl);

  // call_open.cc: what Open does before the pick when the call has an
  // authority, credentials or interceptors (NeedsPreparing), and the
  // ClientCall it makes once the stream started.
  // The attempt's pick state: the call's deadline (the plan's, or the
  // context's bounded by the method's timeout), its wait_for_ready.
  static Attempt NewAttempt(channel::ChannelState& st, size_t index, runtime::EventLoop& loop,
                            ClientContext* ctx, const channel::MethodConfig* mc,
                            const AttemptPlan* plan);
  static bool NeedsPreparing(const channel::ChannelState& st, const ClientContext& ctx);
  static Task<Status> PrepareCall(const std::shared_ptr<channel::ChannelState>& self, Attempt& a,
                                  const std::string& method,
                                  const std::optional<std::string>& authority,
                                  transport::Metadata& md,
                                  std::shared_ptr<CallInterceptors>* interceptors);
  static std::unique_ptr<ClientCall> MakeCall(const std::shared_ptr<channel::ChannelState>& self,
                                              Attempt& a, channel::SubchannelLease leased,
                                              std::unique_ptr<transport::Call> call,
                                              std::shared_ptr<CallInterceptors> interceptors,
                                              const channel::ActiveConfig& active,
                                              const channel::MethodConfig* mc,
                                              const AttemptPlan* plan, bool whole_call,
                                              AttemptRecord& record);

 public:
  // hedging.cc: what the copies of a hedged call share.
  struct Hedge;

 private:
  // unary_call.cc: what a unary call fixes at its start, and its decision
  // after each attempt: the call's status, or nullopt and the retry
  // decision (its delay; a transparent retry goes at once).
  struct UnaryPlan;
  static UnaryPlan PlanUnary(channel::ChannelState& st, const std::optional<size_t>& index,
                             const std::string& method, ClientContext* ctx, size_t request_size);
  static std::optional<Status> AfterUnaryAttempt(channel::ChannelState& st, UnaryPlan& p,
                                                 ClientCall* call, Status& s,
                                                 std::optional<ByteBuffer>& reply,
                                                 bool recv_timed_out, ResponseSink response,
                                                 channel::RetryDecision* retry);
  // perAttemptRecvTimeout for a unary attempt: true once the server
  // answered (or the call ended); false: no answer within `timeout`, and
  // the attempt was cancelled.
  static Task<bool> AnsweredWithin(ClientCall& call, Duration timeout);
  // stream_retry.cc: the next attempt takes the call's place (with
  // `replay`, what was sent is sent on it again; a hedged copy has it
  // already); and the perAttemptRecvTimeout watch on a stream's current
  // attempt.
  static void SwapInAttempt(ClientCall::Impl* impl, std::unique_ptr<ClientCall> next, bool replay);
  static void WatchRecvTimeout(ClientCall::Impl* impl);
  // hedging.cc: one hedged copy.
  static Task<void> HedgedCopy(std::shared_ptr<channel::ChannelState> self,
                               const std::string* method, ClientContext* ctx,
                               const OutgoingMessage* request, AttemptPlan plan,
                               std::shared_ptr<Hedge> h);
  // stream_hedging.cc: a hedged stream's watcher, started beside the
  // caller's first copy, and the opening of one further copy. Both hold
  // `impl` only while the hedge is not released.
  static Task<void> HedgeStream(std::shared_ptr<channel::ChannelState> self, ClientCall::Impl* impl,
                                std::shared_ptr<StreamHedge> h);
  static Task<void> OpenCopy(std::shared_ptr<channel::ChannelState> self, ClientCall::Impl* impl,
                             AttemptPlan plan, std::shared_ptr<StreamHedge> h);
  // After the watcher saw the copies change: the call's next step.
  enum class HedgeStep { kWait, kAgain, kStop };
  static HedgeStep LookAtCopies(ClientCall::Impl* impl, StreamHedge& h, bool& more, TimePoint& next,
                                bool& reported);
};
}  // namespace internal

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_INTERNAL_CALL_OPENER_H_
