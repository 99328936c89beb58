// ringrpc/client/client_context.h — per-call settings and results, as
// grpc::ClientContext: deadline, metadata to send, wait_for_ready,
// cancellation, and what the server sent back.
//
// Threading: set it up before the call, read the results after; TryCancel
// may be called from any thread at any time. One call per context.
//
//   ringrpc::ClientContext ctx;
//   ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
//   ctx.AddMetadata("x-request-id", "42");
#ifndef RINGRPC_CLIENT_CLIENT_CONTEXT_H_
#define RINGRPC_CLIENT_CLIENT_CONTEXT_H_

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ringrpc/base/mutex.h"
#include "ringrpc/client/grpc_types.h"
#include "ringrpc/client/write_options.h"

namespace grpc {  // grpc++'s server contexts, for FromServerContext
class ServerContextBase;
class CallbackServerContext;
}  // namespace grpc

namespace ringrpc {

namespace internal {
class CallAccess;
// Links a context to the call running for it, so TryCancel can reach the
// call's CQ thread.
struct CancelState {
  Mutex mu;
  bool cancelled ABSL_GUARDED_BY(mu) = false;
  // The running call, and how to cancel it (posts to the call's loop).
  std::weak_ptr<void> running ABSL_GUARDED_BY(mu);
  void (*cancel_running)(const std::shared_ptr<void>& call) ABSL_GUARDED_BY(mu) = nullptr;

  // Marks the call cancelled and cancels it if it runs. Any thread.
  void Cancel() {
    std::shared_ptr<void> call;
    void (*cancel)(const std::shared_ptr<void>&) = nullptr;
    {
      MutexLock lock(&mu);
      cancelled = true;
      call = running.lock();
      cancel = cancel_running;
    }
    if (call && cancel) cancel(call);
  }
};
struct ServerContextLink;  // ringrpc/grpcpp/interop.cc

// The kind of call a context is used for, set as the call opens (what
// interceptors see as ClientRpcInfo::type()).
enum class CallKind : unsigned char {
  kUnknown,
  kUnary,
  kClientStreaming,
  kServerStreaming,
  kBidiStreaming
};
}  // namespace internal

// What a context made from a grpc++ server call's context takes from it
// (grpc++'s PropagationOptions): the deadline and the cancellation by
// default. Census propagation is accepted and has no effect (ringrpc has no
// census).
class PropagationOptions {
 public:
  PropagationOptions& enable_deadline_propagation() { return Set(kDeadline, true); }
  PropagationOptions& disable_deadline_propagation() { return Set(kDeadline, false); }
  PropagationOptions& enable_cancellation_propagation() { return Set(kCancellation, true); }
  PropagationOptions& disable_cancellation_propagation() { return Set(kCancellation, false); }
  PropagationOptions& enable_census_stats_propagation() { return *this; }
  PropagationOptions& disable_census_stats_propagation() { return *this; }
  PropagationOptions& enable_census_tracing_propagation() { return *this; }
  PropagationOptions& disable_census_tracing_propagation() { return *this; }
  bool deadline() const { return (bits_ & kDeadline) != 0; }
  bool cancellation() const { return (bits_ & kCancellation) != 0; }

 private:
  static constexpr unsigned kDeadline = 1, kCancellation = 2;
  PropagationOptions& Set(unsigned bit, bool on) {
    bits_ = on ? (bits_ | bit) : (bits_ & ~bit);
    return *this;
  }
  unsigned bits_ = kDeadline | kCancellation;
};

class CallCredentials;  // ringrpc/client/call_credentials.h

// Message compression, grpc's numbering (GRPC_COMPRESS_NONE, _DEFLATE,
// _GZIP): what a request may be compressed with and what a response was.

class ClientContext {
 public:
  ClientContext() : cancel_(std::make_shared<internal::CancelState>()) {}
  ClientContext(const ClientContext&) = delete;
  ClientContext& operator=(const ClientContext&) = delete;

  // In a context made by FromServerContext, a deadline later than the
  // server call's is that one (as grpc++ takes the earlier of the two).
  void set_deadline(std::chrono::system_clock::time_point deadline) {
    deadline_ = deadline_cap_ && *deadline_cap_ < deadline ? *deadline_cap_ : deadline;
  }
  std::optional<std::chrono::system_clock::time_point> deadline() const { return deadline_; }

  // Keys: lowercase; "-bin" keys carry binary values. Checked when the call
  // starts (INVALID_ARGUMENT naming the key).
  void AddMetadata(const std::string& key, const std::string& value) {
    metadata_.emplace_back(key, value);
  }

  // true: wait (up to the deadline) for a connection instead of failing
  // UNAVAILABLE at once while the channel cannot connect.
  // Request messages are compressed with `algorithm` (grpc++'s
  // set_compression_algorithm; kNone turns the channel's default off for
  // this call). Responses in any encoding ringrpc speaks are accepted
  // whatever is set here.
  void set_compression_algorithm(CompressionAlgorithm algorithm) { compression_ = algorithm; }
  // What set_compression_algorithm set (kNone if nothing), as in grpc++.
  CompressionAlgorithm compression_algorithm() const {
    return compression_.value_or(GRPC_COMPRESS_NONE);
  }
  // The encoding the server's messages came in (its grpc-encoding), once
  // its initial metadata arrived: kNone for identity or none.
  CompressionAlgorithm response_compression_algorithm() const { return response_compression_; }

  // Credentials for this call only, after the channel's (grpc++'s
  // set_credentials). Sent only over TLS (see ringrpc/client/call_credentials.h).
  void set_credentials(const std::shared_ptr<CallCredentials>& creds) { credentials_ = creds; }
  std::shared_ptr<CallCredentials> credentials() const { return credentials_; }
  // This call's :authority instead of the channel's (grpc++'s
  // set_authority). TLS still checks the channel's name.
  void set_authority(const std::string& authority) { authority_ = authority; }

  // Overrides the service config's waitForReady for this call.
  void set_wait_for_ready(bool wait) { wait_for_ready_ = wait; }
  bool wait_for_ready() const { return wait_for_ready_.value_or(false); }
  // grpc++'s older name for the same setting: fail fast = not wait_for_ready.
  void set_fail_fast(bool fail_fast) { set_wait_for_ready(!fail_fast); }

  // Ends the call CANCELLED (if it has not ended). Any thread; idempotent.
  void TryCancel() { cancel_->Cancel(); }

  // A context for a call made while serving a grpc++ server call (a
  // mid-tier service): it takes that call's deadline and is cancelled when
  // that call is (its client cancelled or its deadline passed), as
  // grpc++'s. Defined in ringrpc/grpcpp/interop.h (Bazel
  // @ringrpc//ringrpc/grpcpp:interop, CMake ringrpc::grpcpp), which links
  // grpc++; nothing else in ringrpc does. The server call's context must
  // outlive the one returned (a handler's local, or a reactor's member,
  // is). Cancellation reaches the call within about 10 ms; with grpc++'s
  // CompletionQueue server API, only once AsyncNotifyWhenDone's tag came
  // (before that grpc++ does not know either).
  static std::unique_ptr<ClientContext> FromServerContext(
      const grpc::ServerContextBase& server_context,
      PropagationOptions options = PropagationOptions());
  static std::unique_ptr<ClientContext> FromCallbackServerContext(
      const grpc::CallbackServerContext& server_context,
      PropagationOptions options = PropagationOptions());

  // After the call: what the server sent, and which address served it.
  const std::multimap<std::string, std::string>& GetServerInitialMetadata() const {
    return initial_;
  }
  const std::multimap<std::string, std::string>& GetServerTrailingMetadata() const {
    return trailing_;
  }
  std::string peer() const { return peer_; }

 private:
  friend class internal::CallAccess;
  friend struct internal::ServerContextLink;
  std::optional<std::chrono::system_clock::time_point> deadline_;
  // FromServerContext: the server call's deadline, and the watch on its
  // cancellation (ended with this context).
  std::optional<std::chrono::system_clock::time_point> deadline_cap_;
  std::shared_ptr<void> server_link_;
  internal::CallKind call_kind_ = internal::CallKind::kUnknown;
  std::vector<std::pair<std::string, std::string>> metadata_;
  std::optional<bool> wait_for_ready_;  // unset: the service config's, else false
  std::optional<CompressionAlgorithm> compression_;
  std::shared_ptr<CallCredentials> credentials_;
  std::optional<std::string> authority_;
  CompressionAlgorithm response_compression_ = GRPC_COMPRESS_NONE;
  std::shared_ptr<internal::CancelState> cancel_;
  bool initial_set_ = false;  // initial_, peer_, response_compression_ are published (final)
  std::multimap<std::string, std::string> initial_, trailing_;
  std::string peer_;
};

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_CLIENT_CONTEXT_H_
