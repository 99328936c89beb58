// ClientCall and opening a call on a channel: pick -> lease -> start the
// stream -> register cancel (CallOpener), and the unary call on top.
#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/random.h"
#include "client/channel.h"
#include "client/channel/channel_state.h"
#include "client/channel/subchannel.h"
#include "client/internal/call_credentials.h"
#include "client/internal/cancel_wake.h"
#include "client/internal/call_opener.h"
#include "client/internal/interceptors.h"
#include "client/runtime/loop_event.h"

namespace ringrpc {

static_assert(static_cast<int>(transport::Compression::kGzip) ==
                  static_cast<int>(CompressionAlgorithm::kGzip) &&
              static_cast<int>(transport::Compression::kDeflate) ==
                  static_cast<int>(CompressionAlgorithm::kDeflate));

namespace internal {
// The one place allowed into ClientContext's private fields.
class CallAccess {
 public:
  static const std::vector<std::pair<std::string, std::string>>& metadata(
      const ClientContext& c) {
    return c.metadata_;
  }
  static std::shared_ptr<CancelState> cancel(const ClientContext& c) { return c.cancel_; }
  static const std::optional<CompressionAlgorithm>& compression(const ClientContext& c) {
    return c.compression_;
  }
  static const std::shared_ptr<CallCredentials>& credentials(const ClientContext& c) {
    return c.credentials_;
  }
  static const std::optional<std::string>& authority(const ClientContext& c) {
    return c.authority_;
  }
  static const std::optional<bool>& wait_for_ready(const ClientContext& c) {
    return c.wait_for_ready_;
  }
  static void SetResults(ClientContext& c, const transport::Call& call,
                         const transport::Metadata& trailing, std::string peer) {
    c.initial_ = {call.initial_metadata().begin(), call.initial_metadata().end()};
    c.trailing_ = {trailing.begin(), trailing.end()};
    c.peer_ = std::move(peer);
    std::optional<transport::Compression> r = transport::ParseCompression(call.response_encoding());
    c.response_compression_ =
        r ? static_cast<CompressionAlgorithm>(*r) : CompressionAlgorithm::kNone;
  }
};
}  // namespace internal

namespace channel {
namespace {

using internal::CallAccess;
using runtime::EventLoop;
using std::chrono::milliseconds;

// How many times one call may pick another address after the picked one
// failed or was backing off, before it reports the failure: enough to walk
// a typical address list once or twice, few enough that a call facing a
// dead cluster fails in microseconds, not after a scan of every address.
constexpr int kMaxRepicks = 8;
// How often a call whose pick raced a resolver update that dropped its
// address picks again (kClosedPoolRepickDelay apart) before reporting
// "pool is closed": the new list reaches the thread within a loop turn, so
// 100 ms is far more than it needs.
constexpr int kMaxClosedPoolRepicks = 100;
constexpr milliseconds kClosedPoolRepickDelay{1};
// How often a call whose connection stopped taking streams between the
// lease and the stream's start (GOAWAY, close) tries another lease: each
// try poisons that connection, so a few cover a burst of closing ones.
constexpr int kMaxStartRetries = 4;
// How often a call with no address to pick looks again: before the
// resolver's first answer, or (wait_for_ready) after a resolver error. The
// list arrives by a post to the thread, not a wake-up of waiting calls.
constexpr milliseconds kNoAddressPoll{20};
// How often a call waiting for an address's first health check answer
// looks again: the answer is one round trip away.
constexpr milliseconds kHealthPoll{5};
// How soon a hedged attempt still opening notices that another attempt
// answered (its waits for a connection are cut into slices this long).
constexpr milliseconds kAbandonPoll{20};
// How soon a call waiting before it has a stream (an address's backoff, a
// retry's) notices TryCancel: its waits are cut into slices this long.
constexpr milliseconds kCancelPoll{20};
// The shortest wait of a wait_for_ready call whose lease failed before it
// tries again (the address's backoff usually asks for longer).
constexpr milliseconds kMinLeaseRetryDelay{5};

Task<absl::StatusOr<SubchannelLease>> Acquire(SubchannelPool p) {
  co_return co_await p.Acquire();
}

}  // namespace
}  // namespace channel



// ---- ClientCall ---------------------------------------------------------------------

struct ClientCall::Impl final : transport::Call::EndObserver {
  std::shared_ptr<channel::ChannelState> channel;
  runtime::EventLoop* loop = nullptr;  // the CQ thread the call lives on
  ClientContext* ctx = nullptr;
  // The context's cancel state, held: the call may be destroyed after its
  // context (the destructor must not read the context).
  std::shared_ptr<internal::CancelState> cancel_state;
  std::shared_ptr<channel::Subchannel> sc;
  channel::SubchannelLease lease;             // destroyed after `call`
  std::unique_ptr<transport::Call> call;
  // The channel's interceptors for this call (null: none).
  std::unique_ptr<internal::CallInterceptors> interceptors;
  // Set when an interceptor failed the call: its status, which Finish
  // reports; and the status once interceptors have seen it.
  std::optional<Status> failed;
  std::optional<Status> final_status;
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

  // least_request counted this call on `sc` from CQ thread `thread`.
  bool outstanding_counted = false;
  size_t thread = 0;

  // A stream that may still be sent again (gRFC A6: a retryPolicy, or the
  // transparent retry of a stream the server never saw); null for unary
  // attempts and hedged copies, whose callers retry them. Loop thread only.
  struct Replay {
    const channel::RetryPolicy* policy = nullptr;  // null: transparent only
    std::string method;
    internal::CallOpener::AttemptPlan plan;  // the call's deadline, config, row
    // What was written, as sent (after interceptors), until committed.
    std::vector<std::pair<OutgoingMessage, bool>> sent;
    size_t sent_bytes = 0;
    size_t limit = 0;  // grpc.per_rpc_retry_buffer_size
    bool writes_done = false;
    bool committed = false;
    bool cancelled = false;  // ClientCall::Cancel: never again
    bool transparent_used = false;
    bool opening = false;     // the next attempt is being opened
    uint64_t generation = 0;  // bumped by each new attempt
    int attempts = 1;         // the policy's, the current one included
    Duration backoff{};
    TimePoint call_start;
    std::optional<Status> failure;  // the next attempt could not open: why
    bool call_end_recorded = false;
    // Operations suspended inside each transport call: an ended attempt is
    // destroyed only once none of them is still waking up in it.
    std::vector<std::pair<const transport::Call*, int>> awaiting;
    int& AwaitingIn(const transport::Call* c) {
      for (auto& [call, n] : awaiting) {
        if (call == c) return n;
      }
      return awaiting.emplace_back(c, 0).second;
    }
  };
  std::unique_ptr<Replay> replay;
  // Counts one operation inside the current transport call (see
  // Replay::awaiting).
  struct Awaiting {
    explicit Awaiting(Impl* impl) : r(impl->replay.get()), call(impl->call.get()) {
      if (r != nullptr) ++r->AwaitingIn(call);
    }
    ~Awaiting() {
      if (r != nullptr) --r->AwaitingIn(call);
    }
    Awaiting(const Awaiting&) = delete;
    Awaiting& operator=(const Awaiting&) = delete;
    Replay* r;
    const transport::Call* call;
  };

  // Keeps a written message for a replay, unless committed; over the
  // buffer's limit the call commits (as grpc++ does).
  // (A large message is shared, not copied.)
  void Remember(const OutgoingMessage& m, bool compress) {
    if (replay == nullptr || replay->committed) return;
    replay->sent_bytes += m.size();
    if (replay->sent_bytes > replay->limit) {
      Commit();
      return;
    }
    replay->sent.emplace_back(m, compress);
  }
  void Commit() {
    if (replay == nullptr || replay->committed) return;
    replay->committed = true;
    replay->sent.clear();
    replay->sent.shrink_to_fit();
  }
  // A retried stream's call end, with the status its caller gets.
  void RecordCallEnd(StatusCode code) {
    if (replay == nullptr || replay->call_end_recorded || metrics == nullptr) return;
    replay->call_end_recorded = true;
    metrics->CallEnded(metrics_row, code, Clock::now() - replay->call_start);
  }

  ~Impl() {
    if (replay != nullptr && call != nullptr) {
      RecordCallEnd(call->finished() ? static_cast<StatusCode>(call->status()->code())
                                     : StatusCode::CANCELLED);
    }
    if (outstanding_counted) channel->CallEnded(thread, sc.get());
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

ClientCall::ClientCall(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ClientCall::~ClientCall() = default;

namespace {
Task<Status> Wrap(Task<absl::Status> t) { co_return Status::FromAbsl(co_await std::move(t)); }
}  // namespace

Task<Status> ClientCall::Write(std::string_view message, bool compress) {
  if (impl_->interceptors == nullptr && impl_->replay == nullptr) {
    return Wrap(impl_->call->Write(message, compress));
  }
  return Write(OutgoingMessage(std::string(message)), compress);
}

Task<Status> ClientCall::Write(OutgoingMessage message, bool compress) {
  if (impl_->interceptors != nullptr) {
    // Interceptors see (and may change) the message as a string of its own.
    std::string m(message.bytes());
    if (Status s = impl_->interceptors->PreSendMessage(m); !s.ok()) {
      impl_->Fail(s);
      return [](Status s) -> Task<Status> { co_return s; }(s);
    }
    message = OutgoingMessage(std::move(m));
  }
  if (impl_->replay == nullptr) {
    return Wrap(impl_->call->Write(message, compress));  // queued before this returns
  }
  impl_->Remember(message, compress);
  // A write that finds the attempt ended before the call committed goes
  // out again with the next attempt's replay.
  return [](Impl* impl, OutgoingMessage m, bool compress) -> Task<Status> {
    for (;;) {
      const uint64_t generation = impl->replay->generation;
      absl::Status s;
      {
        Impl::Awaiting inside(impl);
        s = co_await impl->call->Write(m, compress);
      }
      if (s.ok()) co_return Status();
      if (!co_await internal::CallOpener::NextStreamAttempt(impl, generation)) {
        co_return Status::FromAbsl(s);
      }
      co_return Status();  // replayed with the new attempt
    }
  }(impl_.get(), std::move(message), compress);
}
bool ClientCall::never_sent() const { return impl_->call->never_sent(); }
void ClientCall::WritesDone() {
  if (impl_->interceptors != nullptr) {
    if (Status s = impl_->interceptors->PreSendClose(); !s.ok()) {
      impl_->Fail(s);
      return;
    }
  }
  if (impl_->replay != nullptr) impl_->replay->writes_done = true;
  impl_->call->WritesDone();
}
Task<std::optional<std::string>> ClientCall::Read() {
  if (impl_->interceptors == nullptr && impl_->replay == nullptr) return impl_->call->Read();
  return ReadThrough<std::string>(impl_.get());
}

Task<std::optional<ByteBuffer>> ClientCall::ReadBuffer() {
  if (impl_->interceptors == nullptr && impl_->replay == nullptr) {
    return impl_->call->ReadBuffer();
  }
  return ReadThrough<ByteBuffer>(impl_.get());
}

// One coroutine over the transport's read (not one over the other: see
// transport::Call::TakeMessage).
template <typename Out>
Task<std::optional<Out>> ClientCall::ReadThrough(Impl* impl) {
  std::optional<ByteBuffer> m;
  for (;;) {
    const uint64_t generation = impl->replay != nullptr ? impl->replay->generation : 0;
    {
      Impl::Awaiting inside(impl);
      m = co_await impl->call->ReadBuffer();
    }
    // (One co_await per statement: GCC 12 mishandles them inside ||.)
    if (m || impl->replay == nullptr) break;
    if (!co_await internal::CallOpener::NextStreamAttempt(impl, generation)) break;
  }
  if (!m) co_return std::nullopt;
  impl->Commit();  // a message came: the server has the call
  if (impl->interceptors == nullptr) {
    if constexpr (std::is_same_v<Out, std::string>) {
      co_return std::move(*m).TakeString();
    } else {
      co_return std::move(*m);
    }
  }
  // Interceptors see (and may change) the message as one string.
  std::string flat = std::move(*m).TakeString();
  Status s = impl->interceptors->PostRecvInitialMetadata(impl->call->initial_metadata());
  if (s.ok()) s = impl->interceptors->PostRecvMessage(flat);
  if (!s.ok()) {
    impl->Fail(s);
    co_return std::nullopt;
  }
  co_return Out(std::move(flat));
}

void ClientCall::Cancel() {
  if (impl_->interceptors != nullptr) impl_->interceptors->PreSendCancel();
  if (impl_->replay != nullptr) {
    impl_->Commit();
    impl_->replay->cancelled = true;  // an attempt being opened is cancelled too
  }
  impl_->call->Cancel();
}

void ClientCall::Run(Task<void> task) { impl_->loop->PostSpawn(std::move(task)); }

bool ClientCall::OnItsThread() const { return runtime::EventLoop::Current() == impl_->loop; }
bool ClientCall::OnChannelThread() const { return impl_->channel->CurrentIndex().has_value(); }

Task<bool> ClientCall::ReadInitialMetadata() {
  for (;;) {
    const uint64_t generation = impl_->replay != nullptr ? impl_->replay->generation : 0;
    {
      Impl::Awaiting inside(impl_.get());
      co_await impl_->call->WaitForInitialMetadata();
    }
    if (impl_->call->initial_metadata_received() || impl_->replay == nullptr) break;
    if (!co_await internal::CallOpener::NextStreamAttempt(impl_.get(), generation)) break;
  }
  co_return PublishInitialMetadata();
}

bool ClientCall::PublishInitialMetadata() {
  if (!impl_->call->headers_received()) return false;
  if (impl_->interceptors != nullptr) {
    if (Status s = impl_->interceptors->PostRecvInitialMetadata(impl_->call->initial_metadata());
        !s.ok()) {
      impl_->Fail(s);
    }
  }
  internal::CallAccess::SetResults(*impl_->ctx, *impl_->call, {}, impl_->sc->record->name());
  return true;
}

Task<Status> ClientCall::Finish() {
  for (;;) {
    const uint64_t generation = impl_->replay != nullptr ? impl_->replay->generation : 0;
    {
      Impl::Awaiting inside(impl_.get());
      (void)co_await impl_->call->Finish();  // FinishNow() reads the status
    }
    if (impl_->replay == nullptr) break;
    if (!co_await internal::CallOpener::NextStreamAttempt(impl_.get(), generation)) break;
  }
  co_return FinishNow();
}

bool ClientCall::finished() const { return impl_->call->finished(); }

Status ClientCall::FinishNow() {
  internal::CallAccess::SetResults(*impl_->ctx, *impl_->call, impl_->call->trailing_metadata(),
                                   impl_->sc->record->name());
  if (impl_->replay != nullptr) {
    Status s = impl_->replay->failure
                   ? *impl_->replay->failure
                   : Status::FromAbsl(*impl_->call->status(),
                                      impl_->call->status_details().value_or(""));
    impl_->RecordCallEnd(s.error_code());
    if (impl_->interceptors == nullptr || impl_->replay->failure) return s;
  }
  if (impl_->interceptors == nullptr) {
    return Status::FromAbsl(*impl_->call->status(), impl_->call->status_details().value_or(""));
  }
  if (!impl_->final_status) {  // interceptors see the status once
    Status s = impl_->failed ? *impl_->failed
                             : Status::FromAbsl(*impl_->call->status(),
                                                impl_->call->status_details().value_or(""));
    if (impl_->call->headers_received()) {
      (void)impl_->interceptors->PostRecvInitialMetadata(impl_->call->initial_metadata());
    }
    impl_->interceptors->PostRecvStatus(s, impl_->call->initial_metadata(),
                                        impl_->call->trailing_metadata());
    impl_->final_status = std::move(s);
  }
  return *impl_->final_status;
}

Status ClientCall::WriteNow(std::string_view message) {
  if (impl_->interceptors == nullptr && impl_->replay == nullptr) {
    return Status::FromAbsl(impl_->call->Enqueue(message));
  }
  return WriteNow(OutgoingMessage(std::string(message)));
}

Status ClientCall::WriteNow(const OutgoingMessage& message) {
  if (impl_->interceptors == nullptr) {
    impl_->Remember(message, true);
    return Status::FromAbsl(impl_->call->Enqueue(message));
  }
  std::string m(message.bytes());
  if (Status s = impl_->interceptors->PreSendMessage(m); !s.ok()) {
    impl_->Fail(s);
    return s;
  }
  OutgoingMessage changed(std::move(m));
  impl_->Remember(changed, true);
  return Status::FromAbsl(impl_->call->Enqueue(changed));
}

namespace internal {

// ---- opening a call: pick -> lease -> start the stream -> register cancel ----

namespace {

using channel::ChannelState;
using channel::Subchannel;
using channel::SubchannelLease;

// What one call's attempts to reach a stream share.
struct Attempt {
  ChannelState& st;
  size_t index;  // the CQ thread's
  runtime::EventLoop& loop;
  ClientContext* ctx;
  TimePoint deadline;  // TimePoint::max(): none
  bool wait_for_ready;  // the context's, else the service config's
  std::shared_ptr<CancelState> cancel;
  const bool* abandoned = nullptr;  // a hedged attempt the call no longer needs
  // What the resolver's CallRouter (xDS routes) routes by, if it has one.
  std::string_view method;
  const transport::Metadata* metadata = nullptr;
  std::string group;  // the route's answer for this round ("": the whole list)
  int number = 0;
  absl::Status last;  // the latest failure, for the message of the final one
  std::shared_ptr<Subchannel> sc;
  std::optional<SubchannelLease> lease;
  Status failure;  // with Step::kFail
  bool resolved = false;  // this round's pick saw a resolver answer
};

enum class Step { kLeased, kAgain, kFail, kNoAddress, kNoLease };

Step Fail(Attempt& a, Status s) {
  a.failure = std::move(s);
  return Step::kFail;
}

// When a wait inside the pick must end: at `t`, the deadline, or soon
// enough to notice that a hedged attempt was abandoned.
TimePoint WakeBy(const Attempt& a, TimePoint t) {
  t = std::min(t, a.deadline);
  if (a.abandoned != nullptr) t = std::min(t, a.loop.Now() + channel::kAbandonPoll);
  return t;
}

// Waits until `t` (WakeBy's bound), looking for TryCancel every
// kCancelPoll: a wait_for_ready call backing off for minutes still ends at
// once when cancelled (the caller's next Ended() says so).
Task<void> Pause(Attempt& a, TimePoint t) {
  const TimePoint until = WakeBy(a, t);
  while (a.loop.Now() < until) {
    {
      MutexLock lock(&a.cancel->mu);
      if (a.cancel->cancelled) co_return;
    }
    co_await SleepUntil(a.loop, std::min(until, a.loop.Now() + channel::kCancelPoll));
  }
}

// The call may still start: not cancelled, deadline not passed.
std::optional<Status> Ended(Attempt& a) {
  {
    MutexLock lock(&a.cancel->mu);
    if (a.cancel->cancelled) return Status(StatusCode::CANCELLED, "cancelled before the call started");
  }
  if (a.abandoned != nullptr && *a.abandoned) {
    return Status(StatusCode::CANCELLED, "another hedged attempt of the call answered first");
  }
  if (a.loop.Now() < a.deadline) return std::nullopt;
  if (!a.st.resolved_once()) {
    // The wait was for the resolver, not for a connection: say which.
    return Status(StatusCode::DEADLINE_EXCEEDED,
                  "deadline exceeded before the target was resolved (the resolver has not "
                  "answered yet)");
  }
  return Status(StatusCode::DEADLINE_EXCEEDED,
                a.last.ok() ? std::string("deadline exceeded before a connection was ready")
                            : absl::StrCat("deadline exceeded waiting for a connection; last "
                                           "error: ",
                                           a.last.message()));
}

// The lease failed: another address, a wait (wait_for_ready) or the end.
Task<Step> OnLeaseFailed(Attempt& a, absl::Status error) {
  a.last = std::move(error);
  a.st.RequestReresolution();
  // The address just failed (its record is now TRANSIENT_FAILURE): like
  // gRPC's pickers, try another address before failing the call.
  if (a.number < channel::kMaxRepicks && a.st.AnotherUsable(a.index, a.sc, a.group)) co_return Step::kAgain;
  if (!a.wait_for_ready || a.last.code() == absl::StatusCode::kFailedPrecondition) {
    co_return Fail(a, Status(StatusCode::UNAVAILABLE, std::string(a.last.message())));
  }
  // Wait for the address's backoff (shared by all threads) to allow a new
  // attempt, or a little while, within the deadline.
  TimePoint retry =
      std::max(a.sc->record->next_attempt(), a.loop.Now() + channel::kMinLeaseRetryDelay);
  co_await Pause(a, retry);
  co_return Step::kAgain;
}

// One round of pick -> lease, its warm path without a coroutine frame:
// kLeased (a.sc and a.lease are set), kFail, or kNoAddress / kNoLease,
// which FinishPick goes on with.
Step PickAndTryLease(Attempt& a) {
  if (std::optional<Status> ended = Ended(a)) return Fail(a, *ended);
  // Read before picking: once set, the list the pick sees is the
  // resolver's answer (resolved_once is set after the list).
  a.resolved = a.st.resolved_once();
  // Routed again each round: a new resolver answer may have moved the
  // groups (a channel without a router gets "" at the cost of a compare).
  absl::StatusOr<CallRoute> route = a.st.Route(a.index, a.method, *a.metadata);
  if (!route.ok()) return Fail(a, Status::FromAbsl(route.status()));
  // The route's limit on the call's length shortens its deadline (A31);
  // a later round's, counted from later, never lengthens it.
  if (route->max_duration) {
    const TimePoint now = a.loop.Now();
    const Duration limit = std::chrono::duration_cast<Duration>(*route->max_duration);
    if (a.deadline - now > limit) a.deadline = now + limit;
  }
  // The loop's time, as the backoff check below uses: the two agree.
  a.group = std::string(a.st.Failover(a.index, route->group, a.loop.Now()));
  a.sc = a.st.Pick(a.index, a.group);
  if (a.sc == nullptr) return Step::kNoAddress;
  // The warm path: a connection this thread has, with a free stream. No
  // await, no timer.
  absl::StatusOr<SubchannelLease> lease = a.sc->pool.TryAcquire();
  if (!lease.ok()) return Step::kNoLease;
  a.lease = std::move(*lease);
  return Step::kLeased;
}

// The rest of a round PickAndTryLease could not finish: kNoAddress (no
// address to pick) or kNoLease (the picked address has no free stream on
// this thread).
Task<Step> FinishPick(Attempt& a, Step step) {
  if (step == Step::kNoAddress) {
    a.last = a.st.NoPickError(a.index, a.group);
    // Before the resolver's first answer, or a health check's, every call
    // waits (the channel is not failing, just starting); after a resolver
    // error, or with every address unhealthy, only wait_for_ready calls do.
    const bool health_pending = a.st.HealthPending(a.index);
    if (!a.wait_for_ready && a.resolved && !health_pending) {
      // A health answer may have come between the pick and the check
      // (UNKNOWN, then SERVING): pick again before failing.
      if (a.number < channel::kMaxRepicks && a.st.Pick(a.index, a.group) != nullptr) {
        co_return Step::kAgain;
      }
      co_return Fail(a, Status::FromAbsl(a.last));
    }
    const Duration poll = health_pending ? channel::kHealthPoll : channel::kNoAddressPoll;
    co_await SleepUntil(a.loop, WakeBy(a, a.loop.Now() + poll));
    co_return Step::kAgain;
  }
  // While the address backs off (for every thread), fail fast (or wait,
  // if wait_for_ready): no dial, no waiting in the pool.
  if (absl::Status backoff = a.sc->record->CheckBackoff(a.loop.Now()); !backoff.ok()) {
    a.last = backoff;
    // Picked while another thread's dial was failing: another address
    // that is READY or connecting takes the call (a fail-fast call fails
    // only when there is none).
    if (a.number < channel::kMaxRepicks && a.st.AnotherUsable(a.index, a.sc, a.group)) {
      co_return Step::kAgain;
    }
    if (!a.wait_for_ready) co_return Fail(a, Status::FromAbsl(backoff));
    co_await Pause(a, a.sc->record->next_attempt());
    co_return Step::kAgain;
  }
  Duration left = a.deadline == TimePoint::max() ? Duration(std::chrono::hours(24 * 365))
                                                 : a.deadline - a.loop.Now();
  if (a.abandoned != nullptr) left = std::min(left, Duration(channel::kAbandonPoll));
  runtime::WithTimeout<absl::StatusOr<SubchannelLease>> wait(
      a.loop, channel::Acquire(a.sc->pool), left);
  std::optional<absl::StatusOr<SubchannelLease>> waited;
  {
    // Behind another call's dial this wait can last the connect timeout:
    // TryCancel ends it at once (the dial goes on for the others).
    CancelWake wake(a.cancel, a.loop, [&wait] { wait.Interrupt(); });
    waited = co_await wait;
  }
  if (!waited) co_return Step::kAgain;  // the deadline or cancel check reports it
  absl::StatusOr<SubchannelLease> lease = std::move(*waited);
  if (!lease.ok() && a.sc->pool.closed() && a.number < channel::kMaxClosedPoolRepicks) {
    // A resolver update dropped this address after the pick (the fault
    // suite's flapping test): pick again once this thread has the new list.
    co_await SleepUntil(a.loop, WakeBy(a, a.loop.Now() + channel::kClosedPoolRepickDelay));
    co_return Step::kAgain;
  }
  if (!lease.ok()) co_return co_await OnLeaseFailed(a, lease.status());
  a.lease = std::move(*lease);
  co_return Step::kLeased;
}

}  // namespace

// Cancel() from any thread reaches the call on its loop from now on (or
// cancels it at once if it came first).
void CallOpener::RegisterCancel(ClientCall::Impl& impl) {
  CancelState& cancel = *impl.cancel_state;
  MutexLock lock(&cancel.mu);
  if (cancel.cancelled) {
    impl.call->Cancel();
    return;
  }
  cancel.running = impl.alive;
  cancel.cancel_running = [](const std::shared_ptr<void>& running) {
    auto target = std::static_pointer_cast<ClientCall::Impl::CancelTarget>(running);
    std::weak_ptr<ClientCall::Impl::CancelTarget> weak = target;
    target->loop->Post([weak] {
      if (auto t = weak.lock(); t && t->call) {
        if (t->interceptors != nullptr) t->interceptors->PreSendCancel();
        t->call->Cancel();
      }
    });
  };
}

// A per-call :authority must be a valid header value, non-empty.
absl::Status CheckAuthority(const std::string& authority) {
  bool ok = !authority.empty();
  for (char c : authority) ok = ok && c > 0x20 && c < 0x7f;
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the call's authority \"", absl::CHexEscape(authority),
      "\" (ClientContext::set_authority) must be non-empty printable ASCII without spaces"));
}

// The channel's then the call's credentials, over TLS only (unless the
// channel opted in), their metadata appended to `md`.
Task<Status> RunCallCredentials(const std::shared_ptr<ChannelState>& self, const Attempt& a,
                                const std::string& method,
                                const std::optional<std::string>& authority,
                                transport::Metadata& md) {
  const ChannelState& st = *self;
  const bool secure = st.config().connection.tls != nullptr;
  if (!secure && !st.config().allow_insecure_call_credentials) {
    co_return Status(StatusCode::UNAUTHENTICATED,
                     "call credentials are sent only over a secure (TLS) channel, and this "
                     "channel is insecure (ringrpc.allow_insecure_call_credentials=1 sends them "
                     "anyway)");
  }
  std::vector<std::shared_ptr<CallCredentials>> creds;
  if (st.config().call_credentials) creds.push_back(st.config().call_credentials);
  if (CallAccess::credentials(*a.ctx)) creds.push_back(CallAccess::credentials(*a.ctx));
  // grpc's service URL: scheme://authority/package.Service; the method alone.
  const size_t slash = method.rfind('/');
  CallCredentials::CallInfo info{
      .service_url = absl::StrCat(secure ? "https://" : "http://",
                                  authority.value_or(st.config().connection.authority),
                                  method.substr(0, slash)),
      .method_name = method.substr(slash + 1),
      .secure = secure};
  co_return co_await ApplyCallCredentials(self, a.loop, a.deadline, a.cancel, std::move(creds),
                                          std::move(info), &md);
}

namespace {

bool Cancelled(const ClientContext& ctx) {
  const std::shared_ptr<CancelState>& cs = CallAccess::cancel(ctx);
  MutexLock lock(&cs->mu);
  return cs->cancelled;
}

// Until the resolver has answered once, the service config in force is not
// known (the resolver may deliver one, gRFC A21): a call waits for that
// answer before reading it, as gRPC queues calls until the resolver has
// answered, within the call's own deadline (a cancelled call or one past
// its deadline goes on to fail as such). The warm path: one acquire load
// (Unresolved, checked before the wait is made: no coroutine frame for it).
// A misconfigured channel never starts its resolver: its calls fail at once.
bool Unresolved(const ChannelState& st) { return !st.resolved_once() && st.config_error().ok(); }

Task<void> AwaitFirstResolution(ChannelState& st, runtime::EventLoop& loop,
                                const ClientContext& ctx) {
  const TimePoint deadline =
      ctx.deadline() ? channel::ToLoopTime(*ctx.deadline(), loop.Now()) : TimePoint::max();
  while (!st.resolved_once() && loop.Now() < deadline && !Cancelled(ctx)) {
    co_await SleepUntil(loop, std::min(deadline, loop.Now() + channel::kHealthPoll));
  }
}

}  // namespace

TimePoint CallOpener::CallDeadline(runtime::EventLoop& loop, const ClientContext& ctx,
                                   const channel::MethodConfig* mc) {
  TimePoint deadline =
      ctx.deadline() ? channel::ToLoopTime(*ctx.deadline(), loop.Now()) : TimePoint::max();
  if (mc != nullptr && mc->timeout) {
    const TimePoint now = loop.Now();
    if (*mc->timeout < TimePoint::max() - now) deadline = std::min(deadline, now + *mc->timeout);
  }
  return deadline;
}

namespace {

// One attempt in the channel's call metrics, from its start; one that
// ends before it has a stream (no bytes either way) is recorded when this
// goes (with *out, its status), one that has a stream when that ends. A
// task destroyed while opening (its loop shutting down) has no status yet
// and records no end.
struct AttemptRecord {
  AttemptRecord(channel::CallMetricsTable* m, channel::MethodRow* r, bool whole, const Status* o)
      : metrics(m), row(r), whole_call(whole), out(o) {
    if (metrics != nullptr) metrics->AttemptStarted(row);
  }
  AttemptRecord(const AttemptRecord&) = delete;
  AttemptRecord& operator=(const AttemptRecord&) = delete;
  ~AttemptRecord() {
    if (metrics == nullptr || out->ok()) return;
    const Duration took = Clock::now() - start;
    metrics->AttemptEnded(row, out->error_code(), took, 0, 0);
    if (whole_call) metrics->CallEnded(row, out->error_code(), took);
  }
  channel::CallMetricsTable* metrics;  // null: not recorded (or handed to the call)
  channel::MethodRow* row;
  bool whole_call;
  const Status* out;
  const TimePoint start = Clock::now();
};

}  // namespace

Task<std::unique_ptr<ClientCall>> CallOpener::Open(
    std::shared_ptr<channel::ChannelState> self, const std::string& method, ClientContext* ctx,
    Status* out, bool whole_call, const AttemptPlan* plan) {
  ChannelState& st = *self;
  // Recorded on a CQ thread with a context (the telemetry's rows are per
  // thread); a row the plan looked up already is reused.
  const std::optional<size_t> index = st.CurrentIndex();
  channel::CallMetricsTable* metrics =
      index && ctx != nullptr ? st.call_metrics() : nullptr;
  channel::MethodRow* row = metrics == nullptr ? nullptr
                            : plan != nullptr && plan->metrics_row != nullptr
                                ? plan->metrics_row
                                : metrics->Method(*index, method);
  AttemptRecord record(metrics, row, whole_call, out);
  if (ctx == nullptr) {
    *out = Status(StatusCode::INVALID_ARGUMENT, "the call's ClientContext is null");
    co_return nullptr;
  }
  if (!st.config_error().ok()) {
    *out = Status::FromAbsl(st.config_error());
    co_return nullptr;
  }
  if (!index) {
    *out = Status(StatusCode::FAILED_PRECONDITION,
                  "Channel::Open/Unary must run on one of the channel's CQ threads "
                  "(use Spawn, the blocking or the callback API)");
    co_return nullptr;
  }
  runtime::EventLoop& loop = st.cq()->loop(*index);
  st.LeaveIdle();
  if ((plan == nullptr || plan->config == nullptr) && Unresolved(st)) {
    co_await AwaitFirstResolution(st, loop, *ctx);
  }
  // The service config in force when the call started (the resolver's or
  // the default; gRFC A21) and its entry for the method (read-only,
  // shared): its timeout bounds the call's own deadline, its waitForReady
  // applies unless the call set one, its limits apply when smaller than
  // the channel's.
  const channel::ActiveConfig& active =
      plan != nullptr && plan->config != nullptr ? *plan->config : st.active();
  if (!active.error.ok()) {
    *out = Status::FromAbsl(active.error);
    co_return nullptr;
  }
  const channel::MethodConfig* mc =
      plan != nullptr && plan->method_config_known ? plan->method_config
      : active.service_config                      ? active.service_config->Find(method)
                                                   : nullptr;
  const TimePoint deadline =
      plan != nullptr && plan->deadline ? *plan->deadline : CallDeadline(loop, *ctx, mc);
  const std::optional<bool>& asked_wait = CallAccess::wait_for_ready(*ctx);
  Attempt a{.st = st,
            .index = *index,
            .loop = loop,
            .ctx = ctx,
            .deadline = deadline,
            .wait_for_ready = asked_wait ? *asked_wait : mc != nullptr && mc->wait_for_ready.value_or(false),
            .cancel = CallAccess::cancel(*ctx),
            .abandoned = plan != nullptr ? plan->abandoned : nullptr};
  transport::Metadata md(CallAccess::metadata(*ctx).begin(), CallAccess::metadata(*ctx).end());
  const std::optional<CompressionAlgorithm>& asked = CallAccess::compression(*ctx);
  const transport::Compression compression =
      asked ? static_cast<transport::Compression>(*asked) : st.config().compression;
  const std::optional<std::string>& authority = CallAccess::authority(*ctx);
  if (authority) {
    if (absl::Status s = CheckAuthority(*authority); !s.ok()) {
      *out = Status::FromAbsl(s);
      co_return nullptr;
    }
  }
  if (st.config().call_credentials != nullptr || CallAccess::credentials(*ctx) != nullptr) {
    Status s = co_await RunCallCredentials(self, a, method, authority, md);
    if (!s.ok()) {
      *out = std::move(s);
      co_return nullptr;
    }
  }
  std::unique_ptr<CallInterceptors> interceptors =
      CallInterceptors::Create(st.config().interceptors.get(), method, ctx);
  if (interceptors != nullptr) {
    if (Status s = interceptors->PreSendInitialMetadata(md); !s.ok()) {
      *out = std::move(s);
      co_return nullptr;
    }
  }
  a.method = method;
  a.metadata = &md;
  for (;; ++a.number) {
    Step step = PickAndTryLease(a);
    if (step == Step::kNoAddress || step == Step::kNoLease) step = co_await FinishPick(a, step);
    if (step == Step::kAgain) continue;
    if (step == Step::kFail) {
      *out = std::move(a.failure);
      co_return nullptr;
    }
    SubchannelLease leased = std::move(*a.lease);
    a.lease.reset();
    absl::StatusOr<std::unique_ptr<transport::Call>> call = (*leased)->StartCall(
        {.path = method,
         .deadline = a.deadline == TimePoint::max() ? std::nullopt
                                                    : std::optional<TimePoint>(a.deadline),
         .metadata = md,
         .compression = compression,
         .compression_level = st.config().compression_level,
         .authority = authority ? std::string_view(*authority) : std::string_view(),
         .max_send_message_size = mc ? mc->max_request_message_bytes : std::nullopt,
         .max_receive_message_size = mc ? mc->max_response_message_bytes : std::nullopt,
         .previous_attempts = plan != nullptr ? plan->previous_attempts : 0});
    if (!call.ok()) {
      a.last = call.status();
      if (call.status().code() == absl::StatusCode::kUnavailable &&
          a.number < channel::kMaxStartRetries) {
        leased.Poison();  // closed or draining: never lease it again
        continue;
      }
      // The server lowered MAX_CONCURRENT_STREAMS since the connection
      // came: returning the lease tells the pool the connection's new
      // capacity (it is not leased past it again), and the call picks again
      // (another connection, a new one, or a wait for a free stream).
      if (call.status().code() == absl::StatusCode::kResourceExhausted &&
          (*leased)->active_calls() >= (*leased)->max_concurrent_streams() &&
          a.number < channel::kMaxStartRetries) {
        leased = SubchannelLease();
        continue;
      }
      *out = Status::FromAbsl(call.status());
      co_return nullptr;
    }
    auto impl = std::make_unique<ClientCall::Impl>();
    impl->channel = self;
    impl->loop = &loop;
    impl->ctx = ctx;
    impl->cancel_state = a.cancel;
    impl->sc = a.sc;
    impl->lease = std::move(leased);
    impl->call = std::move(*call);
    impl->interceptors = std::move(interceptors);
    impl->alive = std::make_shared<ClientCall::Impl::CancelTarget>(ClientCall::Impl::CancelTarget{
        impl->call.get(), &loop, impl->interceptors.get()});
    if (active.lb_policy == channel::LbPolicy::kLeastRequest) {
      st.CallStarted(a.index, a.sc.get());
      impl->outstanding_counted = true;
      impl->thread = a.index;
    }
    // A stream opened by its caller (no plan: not a unary attempt or a
    // hedged copy) may be sent again until committed: by the method's
    // retryPolicy, and once transparently if the server never saw it.
    if (plan == nullptr && st.config().enable_retries) {
      auto r = std::make_unique<ClientCall::Impl::Replay>();
      r->policy = mc != nullptr && mc->retry_policy ? &*mc->retry_policy : nullptr;
      r->method = method;
      r->plan = AttemptPlan{.deadline = a.deadline == TimePoint::max()
                                            ? std::nullopt
                                            : std::optional<TimePoint>(a.deadline),
                            .config = &active,
                            .method_config_known = true,
                            .method_config = mc};
      r->limit = st.config().per_rpc_retry_buffer_size;
      r->backoff = r->policy != nullptr ? r->policy->initial_backoff : Duration::zero();
      r->call_start = Clock::now();
      impl->replay = std::move(r);
    }
    RegisterCancel(*impl);
    *out = Status();
    if (record.metrics != nullptr) {
      // The call records the attempt's end (and bytes) from now on.
      impl->metrics = std::exchange(record.metrics, nullptr);
      impl->metrics_row = record.row;
      impl->attempt_start = record.start;
      // A stream that may be retried records its call end itself, once.
      impl->whole_call = whole_call && impl->replay == nullptr;
      if (impl->replay != nullptr) {
        impl->replay->plan.metrics_row = record.row;
        impl->replay->call_start = record.start;
      }
      impl->call->set_end_observer(impl.get());
      if (impl->call->finished()) impl->OnCallEnd(*impl->call);  // ended while it opened
    }
    co_return std::unique_ptr<ClientCall>(new ClientCall(std::move(impl)));
  }
}

}  // namespace internal

namespace internal {

namespace {

// gRFC A6's pushback: the server's grpc-retry-pushback-ms. nullopt: none
// sent; a negative or malformed value means "do not retry" (-1 here).
std::optional<int64_t> Pushback(const transport::Metadata& trailing) {
  for (const auto& [k, v] : trailing) {
    if (k != "grpc-retry-pushback-ms") continue;
    int64_t ms = 0;
    if (v.empty() || v.size() > 10) return -1;
    for (char c : v) {
      if (c < '0' || c > '9') return -1;
      ms = ms * 10 + (c - '0');
    }
    return ms;
  }
  return std::nullopt;
}


// A uniformly random duration in [0, cap] (A6's jittered backoff).
Duration Jittered(Duration cap) {
  thread_local Random rng;
  const double ns = static_cast<double>(cap.count()) * rng.Uniform01();
  return ns >= static_cast<double>(cap.count()) ? cap
                                                 : Duration(static_cast<Duration::rep>(ns));
}

// A6's backoff after one more failed attempt: multiplied, capped at
// maxBackoff; grown in double seconds so that a multiplier on a huge
// maxBackoff cannot overflow the nanosecond count.
Duration GrowBackoff(const channel::RetryPolicy& policy, Duration backoff) {
  const double next = std::chrono::duration<double>(backoff).count() * policy.backoff_multiplier;
  return next >= std::chrono::duration<double>(policy.max_backoff).count()
             ? policy.max_backoff
             : std::chrono::duration_cast<Duration>(std::chrono::duration<double>(next));
}

}  // namespace

Task<Status> CallOpener::Unary(std::shared_ptr<channel::ChannelState> self, std::string method,
                               ClientContext* ctx, std::string serialized, ResponseSink response) {
  if (response.null()) {
    co_return Status(StatusCode::INVALID_ARGUMENT, "the unary call's response pointer is null");
  }
  ChannelState& st = *self;
  const std::optional<size_t> index = st.CurrentIndex();
  // The call's telemetry: its attempts record themselves (Open), the call
  // is recorded here, with the status its caller gets (`ended`).
  channel::CallMetricsTable* metrics = st.call_metrics();
  channel::MethodRow* metrics_row =
      metrics != nullptr && index && ctx != nullptr ? metrics->Method(*index, method) : nullptr;
  const TimePoint start = Clock::now();
  auto ended = [&](Status s) {
    if (metrics_row != nullptr) {
      metrics->CallEnded(metrics_row, s.error_code(), Clock::now() - start);
    }
    return s;
  };
  // Serialized once; a large request is sent from this string by every
  // attempt (and hedged copy) without being copied.
  OutgoingMessage request(std::move(serialized));
  if (index && ctx != nullptr && Unresolved(st)) {
    co_await AwaitFirstResolution(st, st.cq()->loop(*index), *ctx);
  }
  const channel::ActiveConfig& active = st.active();  // for the whole call
  const channel::MethodConfig* mc =
      active.service_config ? active.service_config->Find(method) : nullptr;
  channel::RetryThrottle* throttle = active.throttle.get();
  // gRFC A6's retryPolicy (with grpc.enable_retries, the default).
  // A request over the per-call retry buffer commits the call at once.
  const channel::RetryPolicy* policy =
      st.config().enable_retries && mc != nullptr && mc->retry_policy &&
              request.size() <= st.config().per_rpc_retry_buffer_size
          ? &*mc->retry_policy
          : nullptr;
  // Every attempt keeps the call's deadline, fixed now (a method's timeout
  // counts from the call's start, not each attempt's).
  AttemptPlan plan{.config = &active,
                   .method_config_known = true,
                   .method_config = mc,
                   .metrics_row = metrics_row};
  runtime::EventLoop* loop = index ? &st.cq()->loop(*index) : nullptr;
  if (loop != nullptr && ctx != nullptr) plan.deadline = CallDeadline(*loop, *ctx, mc);
  // gRFC A6's hedgingPolicy (with grpc.enable_retries); a request over the
  // retry buffer is committed at once: one copy.
  if (loop != nullptr && ctx != nullptr && st.config().enable_retries && mc != nullptr &&
      mc->hedging_policy && request.size() <= st.config().per_rpc_retry_buffer_size) {
    Status hedged = co_await UnaryHedged(self, method, ctx, std::move(request), response, plan);
    co_return ended(std::move(hedged));
  }
  Duration backoff = policy ? policy->initial_backoff : Duration::zero();
  bool transparent_used = false;
  for (int attempt = 0;;) {
    plan.previous_attempts = attempt;
    Status s;
    std::unique_ptr<ClientCall> call = co_await Open(self, method, ctx, &s, false, &plan);
    std::optional<ByteBuffer> reply;
    if (call != nullptr) {
      Status w = call->WriteNow(request);  // one message: no need to wait for room
      (void)w;  // a failed write ends the call: Finish reports why
      call->WritesDone();
      reply = co_await call->ReadBuffer();
      // (No co_await inside ?: — GCC 12 mishandles the temporaries there.)
      if (call->finished()) {
        s = call->FinishNow();
      } else {
        s = co_await call->Finish();
      }
      // A call the server never processed (GOAWAY above its stream,
      // REFUSED_STREAM) is sent again once, transparently, on another
      // connection: not an attempt of the policy's (A6).
      if (!s.ok() && call->never_sent() && !transparent_used && st.config().enable_retries) {
        transparent_used = true;
        st.CountTransparentRetry();
        continue;
      }
    }
    if (s.ok()) {
      if (throttle != nullptr) throttle->RecordSuccess();
      if (!reply) {
        co_return ended(Status(StatusCode::INTERNAL,
                               "the server ended a unary call OK without a response message"));
      }
      response.Set(std::move(*reply));
      co_return ended(s);
    }
    // Retried only when the policy names the code, the server did not
    // commit the call (initial metadata of its own), tokens remain, and
    // attempts remain.
    if (policy == nullptr || loop == nullptr || !policy->Retryable(static_cast<int>(s.error_code())) ||
        (call != nullptr && call->impl_->call->initial_metadata_received())) {
      co_return ended(s);
    }
    if (throttle != nullptr && !throttle->RecordFailure()) {
      st.CountThrottledRetry();
      co_return ended(s);
    }
    if (attempt + 1 >= policy->max_attempts) co_return ended(s);
    Duration delay;
    const std::optional<int64_t> pushback =
        call != nullptr ? Pushback(call->impl_->call->trailing_metadata()) : std::nullopt;
    if (pushback) {
      if (*pushback < 0) co_return ended(s);  // the server says: do not retry
      delay = std::chrono::milliseconds(*pushback);
      backoff = policy->initial_backoff;
    } else {
      delay = Jittered(backoff);
      backoff = GrowBackoff(*policy, backoff);
    }
    call.reset();
    // The wait, bounded by the deadline and watching for TryCancel.
    const TimePoint until =
        delay < TimePoint::max() - loop->Now() ? loop->Now() + delay : TimePoint::max();
    while (loop->Now() < until) {
      // (No braced list around a co_await: GCC 12 miscompiles it.)
      const TimePoint wake =
          std::min(std::min(until, plan.deadline.value_or(TimePoint::max())),
                   loop->Now() + channel::kCancelPoll);
      co_await SleepUntil(*loop, wake);
      if (Cancelled(*ctx)) {
        co_return ended(Status(StatusCode::CANCELLED, "cancelled while waiting to retry"));
      }
      if (plan.deadline && loop->Now() >= *plan.deadline) {
        co_return ended(Status(StatusCode::DEADLINE_EXCEEDED,
                               absl::StrCat("deadline exceeded while waiting to retry; last "
                                            "attempt: ",
                                            s.error_message())));
      }
    }
    ++attempt;
    st.CountRetry();
  }
}

Task<bool> CallOpener::NextStreamAttempt(ClientCall::Impl* impl, uint64_t generation) {
  ClientCall::Impl::Replay& r = *impl->replay;
  runtime::EventLoop& loop = *impl->loop;
  // Another operation of the call is opening the next attempt: wait for it.
  while (r.opening) co_await SleepUntil(loop, loop.Now() + std::chrono::milliseconds(1));
  if (r.generation != generation) co_return true;  // already on the next attempt
  const transport::Call& ended = *impl->call;
  // Committed: the server answered (its headers), the call ended OK, the
  // caller (Cancel, TryCancel) or an interceptor ended it, or its buffer
  // overflowed.
  if (r.committed || r.cancelled || impl->failed || !ended.finished() || ended.status()->ok() ||
      ended.initial_metadata_received() || Cancelled(*impl->ctx)) {
    impl->Commit();
    co_return false;
  }
  ChannelState& st = *impl->channel;
  // Never processed by the server (GOAWAY above it, REFUSED_STREAM): sent
  // again once at once, whatever the policy (A6's transparent retry).
  const bool transparent = ended.never_sent() && !r.transparent_used;
  Duration delay = Duration::zero();
  if (!transparent) {
    if (r.policy == nullptr || !r.policy->Retryable(static_cast<int>(ended.status()->code()))) {
      impl->Commit();
      co_return false;
    }
    channel::RetryThrottle* throttle = r.plan.config->throttle.get();
    if (throttle != nullptr && !throttle->RecordFailure()) {
      st.CountThrottledRetry();
      impl->Commit();
      co_return false;
    }
    const std::optional<int64_t> pushback = Pushback(ended.trailing_metadata());
    if (r.attempts >= r.policy->max_attempts || (pushback && *pushback < 0)) {
      impl->Commit();
      co_return false;
    }
    if (pushback) {
      delay = std::chrono::milliseconds(*pushback);
      r.backoff = r.policy->initial_backoff;
    } else {
      delay = Jittered(r.backoff);
      r.backoff = GrowBackoff(*r.policy, r.backoff);
    }
  }
  r.opening = true;
  // The wait, bounded by the deadline and watching for cancellation.
  const TimePoint deadline = r.plan.deadline.value_or(TimePoint::max());
  const TimePoint until =
      delay < TimePoint::max() - loop.Now() ? loop.Now() + delay : TimePoint::max();
  while (loop.Now() < until) {
    co_await SleepUntil(loop, std::min(std::min(until, deadline), loop.Now() + channel::kCancelPoll));
    if (r.cancelled || Cancelled(*impl->ctx)) {
      r.failure = Status(StatusCode::CANCELLED, "cancelled while waiting to retry");
    } else if (loop.Now() >= deadline) {
      r.failure = Status(StatusCode::DEADLINE_EXCEEDED,
                         absl::StrCat("deadline exceeded while waiting to retry; last attempt: ",
                                      ended.status()->message()));
    }
    if (r.failure) {
      r.opening = false;
      impl->Commit();
      co_return false;
    }
  }
  if (!transparent) r.plan.previous_attempts = r.attempts;
  Status out;
  std::unique_ptr<ClientCall> next =
      co_await Open(impl->channel, r.method, impl->ctx, &out, false, &r.plan);
  r.opening = false;
  if (next == nullptr) {
    r.failure = std::move(out);
    impl->Commit();
    co_return false;
  }
  // The new attempt takes the call's place (its stream, lease, address,
  // interceptors and cancel registration); the old one leaves with `next`.
  ClientCall::Impl& fresh = *next->impl_;
  std::swap(impl->sc, fresh.sc);
  std::swap(impl->lease, fresh.lease);
  std::swap(impl->call, fresh.call);
  std::swap(impl->interceptors, fresh.interceptors);
  std::swap(impl->alive, fresh.alive);
  std::swap(impl->outstanding_counted, fresh.outstanding_counted);
  std::swap(impl->thread, fresh.thread);
  std::swap(impl->attempt_start, fresh.attempt_start);
  if (fresh.metrics != nullptr) impl->call->set_end_observer(impl);
  for (const auto& [m, compress] : r.sent) (void)impl->call->Enqueue(m, compress);
  if (r.writes_done) impl->call->WritesDone();
  if (r.cancelled) impl->call->Cancel();  // ClientCall::Cancel came while it opened
  if (transparent) {
    r.transparent_used = true;
    st.CountTransparentRetry();
  } else {
    ++r.attempts;
    st.CountRetry();
  }
  ++r.generation;
  // Operations woken by the old attempt's end resume inside it on a later
  // loop pass: it goes once they have left it (they then find `opening`
  // and wait for it to clear, then go on with the new attempt).
  const transport::Call* old = fresh.call.get();
  r.opening = true;
  while (r.AwaitingIn(old) > 0) {
    co_await SleepUntil(loop, loop.Now() + std::chrono::milliseconds(1));
  }
  std::erase_if(r.awaiting, [old](const auto& entry) { return entry.first == old; });
  r.opening = false;
  next.reset();
  co_return true;
}

namespace {

// What the copies of one hedged unary call share (gRFC A6 hedging). They
// run on the call's loop, and the call waits for every one of them to end
// before it returns (they read its context and its request).
struct Hedge {
  explicit Hedge(runtime::EventLoop& loop) : wake(loop) {}
  runtime::LoopEvent wake;  // a copy ended, or its server answered first
  int running = 0;          // copies not ended
  bool abandoned = false;   // decided: copies still opening give up
  std::vector<ClientCall*> open;          // copies with a stream
  const ClientCall* committed = nullptr;  // its server answered first: the call's
  std::optional<Status> final;            // the call's status, once decided
  std::optional<ByteBuffer> reply;
  Status last = Status(StatusCode::UNAVAILABLE, "no hedged attempt was sent");
  bool next_now = false;  // a non-fatal failure: the next copy goes at once
  std::optional<int64_t> pushback;  // the server's, on the latest such failure
};

// Every copy but `keep` is cancelled; copies still opening give up.
void CancelOthers(Hedge& h, const ClientCall* keep) {
  h.abandoned = true;
  for (ClientCall* c : h.open) {
    if (c != keep) c->Cancel();
  }
}

Task<bool> Woken(runtime::LoopEvent* e) {
  co_await e->Wait();
  co_return true;
}

}  // namespace

Task<Status> CallOpener::UnaryHedged(std::shared_ptr<channel::ChannelState> self,
                                     const std::string& method, ClientContext* ctx,
                                     OutgoingMessage request, ResponseSink response,
                                     const AttemptPlan& call_plan) {
  ChannelState& st = *self;
  runtime::EventLoop& loop = st.cq()->loop(*st.CurrentIndex());
  const channel::HedgingPolicy& policy = *call_plan.method_config->hedging_policy;
  auto h = std::make_shared<Hedge>(loop);
  AttemptPlan plan = call_plan;
  plan.abandoned = &h->abandoned;
  // One copy: opens, sends, and reports how it ended (A6: an answer or a
  // fatal status decides the call; a non-fatal one sends the next copy).
  auto copy = [](std::shared_ptr<ChannelState> self, const std::string* method,
                 ClientContext* ctx, const OutgoingMessage* request, AttemptPlan plan,
                 std::shared_ptr<Hedge> h, const channel::HedgingPolicy* policy) -> Task<void> {
    Status s;
    std::unique_ptr<ClientCall> call = co_await Open(self, *method, ctx, &s, false, &plan);
    std::optional<ByteBuffer> reply;
    bool never_sent = false;
    std::optional<int64_t> pushback;
    if (call != nullptr) {
      h->open.push_back(call.get());
      if (h->abandoned) call->Cancel();  // decided while this one opened
      (void)call->WriteNow(*request);    // a failed write ends the call
      call->WritesDone();
      co_await call->impl_->call->WaitForInitialMetadata();
      if (call->impl_->call->initial_metadata_received() && !h->final &&
          h->committed == nullptr) {
        h->committed = call.get();  // its server answered first
        CancelOthers(*h, call.get());
        h->wake.Set();
      }
      reply = co_await call->ReadBuffer();
      (void)co_await call->impl_->call->Finish();  // the context is not touched yet
      std::erase(h->open, call.get());
      never_sent = call->never_sent();
      pushback = Pushback(call->impl_->call->trailing_metadata());
    }
    const bool lost = h->final.has_value() || (h->committed != nullptr && h->committed != call.get());
    if (!lost) {
      // Only a copy that may be the call's writes its results into the
      // context (and runs the interceptors' status hooks).
      if (call != nullptr) s = call->FinishNow();
      const bool decides = s.ok() || (call != nullptr && h->committed == call.get()) ||
                           (!never_sent && !policy->NonFatal(static_cast<int>(s.error_code())));
      if (decides) {
        channel::RetryThrottle* throttle = plan.config->throttle.get();
        if (s.ok() && throttle != nullptr) throttle->RecordSuccess();
        h->final = s;
        h->reply = std::move(reply);
        CancelOthers(*h, call.get());
      } else {
        channel::RetryThrottle* throttle = plan.config->throttle.get();
        if (throttle != nullptr) (void)throttle->RecordFailure();
        h->last = s;
        h->pushback = pushback;
        h->next_now = true;
      }
    }
    call.reset();
    --h->running;
    h->wake.Set();
  };
  int sent = 0;
  bool more = true;  // further copies may go
  TimePoint next = loop.Now();
  for (;;) {
    if (h->final || h->committed != nullptr || sent >= policy.max_attempts) more = false;
    if (more && h->pushback) {
      // The server's pushback: the next copy after it; negative: none.
      if (*h->pushback < 0) {
        more = false;
      } else {
        next = loop.Now() + std::chrono::milliseconds(*h->pushback);
        h->next_now = false;
      }
      h->pushback.reset();
    }
    if (more && (h->next_now || loop.Now() >= next)) {
      channel::RetryThrottle* throttle = plan.config->throttle.get();
      if (sent > 0 && throttle != nullptr && !throttle->Allows()) {
        st.CountThrottledRetry();
        more = false;
        continue;
      }
      plan.previous_attempts = sent;
      ++sent;
      ++h->running;
      h->next_now = false;
      if (sent > 1) st.CountHedge();
      next = policy.hedging_delay < TimePoint::max() - loop.Now() ? loop.Now() + policy.hedging_delay
                                                                  : TimePoint::max();
      loop.Spawn(copy(self, &method, ctx, &request, plan, h, &policy));
      continue;
    }
    if (h->running == 0 && (h->final || !more)) break;
    // Wait for a copy's news, the next copy's time, or a TryCancel (the
    // context reaches one copy at a time: the call cancels the rest).
    Duration wait = channel::kCancelPoll;
    if (more) wait = std::min(wait, next - loop.Now());
    (void)co_await runtime::WithTimeout<bool>(loop, Woken(&h->wake), wait);
    if (Cancelled(*ctx) && !h->final) {
      h->final = Status(StatusCode::CANCELLED, "cancelled");
      CancelOthers(*h, nullptr);
    }
  }
  Status s = h->final ? *h->final : h->last;
  if (!s.ok()) co_return s;
  if (!h->reply) {
    co_return Status(StatusCode::INTERNAL,
                     "the server ended a unary call OK without a response message");
  }
  response.Set(std::move(*h->reply));
  co_return s;
}

}  // namespace internal

}  // namespace ringrpc
