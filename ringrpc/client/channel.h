// ringrpc/client/channel.h — the channel users create, as grpc::Channel: a target,
// credentials and arguments; calls on it go to per-CQ-thread pooled HTTP/2
// connections chosen by the load-balancing policy.
//
// Threading: a Channel is shared by any number of threads. Blocking calls
// may be made from any thread that is not one of the channel's CQ threads
// (they hop onto one and wait). Coroutine calls (Open, Unary) run on a CQ
// thread: inside Spawn()ed work, or generated stubs' coroutine methods.
//
//   auto channel = ringrpc::CreateChannel("dns:///localhost:50051",
//                                         ringrpc::InsecureChannelCredentials());
//   ringrpc::ClientContext ctx;
//   std::string reply;
//   ringrpc::Status s = channel->BlockingUnaryCall(
//       "/helloworld.Greeter/SayHello", &ctx, request_bytes, &reply);
#ifndef RINGRPC_CLIENT_CHANNEL_H_
#define RINGRPC_CLIENT_CHANNEL_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringrpc/base/byte_buffer.h"
#include "ringrpc/base/task.h"
#include "ringrpc/client/call_metrics.h"
#include "ringrpc/client/channel_arguments.h"
#include "ringrpc/client/client_call.h"
#include "ringrpc/client/client_context.h"
#include "ringrpc/client/completion_queue.h"
#include "ringrpc/client/grpc_types.h"
#include "ringrpc/client/status.h"
#include "ringrpc/client/stub_options.h"
#include "ringrpc/client/version.h"
#include "ringrpc/pool/metrics.h"

namespace ringrpc {

class Resolver;  // ringrpc/client/resolver.h
namespace channel {
class ChannelState;
}  // namespace channel
namespace internal {
class CallOpener;
struct ResponseSink;
}  // namespace internal

// As in grpc++: PEM strings. Empty roots: the system's trust store; a key
// and chain together: a client certificate (mutual TLS).
struct SslCredentialsOptions {
  std::string pem_root_certs;
  std::string pem_private_key;
  std::string pem_cert_chain;
};

class CallCredentials;  // ringrpc/client/call_credentials.h
class Channel;
// grpc++ code holds channels as std::shared_ptr<grpc::ChannelInterface>.
using ChannelInterface = Channel;
class ChannelArguments;
class ChannelCredentials;
namespace experimental {
class ClientInterceptorFactoryInterface;  // ringrpc/client/interceptor.h
std::shared_ptr<Channel> CreateCustomChannelWithInterceptors(
    const std::string& target, const std::shared_ptr<ChannelCredentials>& creds,
    const ChannelArguments& args,
    std::vector<std::unique_ptr<ClientInterceptorFactoryInterface>> interceptor_creators);
}  // namespace experimental

class ChannelCredentials {
 public:
  virtual ~ChannelCredentials() = default;
  virtual bool secure() const = 0;
  // Set for SslCredentials.
  virtual const SslCredentialsOptions* ssl_options() const { return nullptr; }
  // Added to every call (CompositeChannelCredentials).
  virtual std::shared_ptr<CallCredentials> call_credentials() const { return nullptr; }
  // Set for experimental::LocalCredentials: the kind of local connection.
  virtual std::optional<grpc_local_connect_type> local_connect_type() const { return std::nullopt; }
};
std::shared_ptr<ChannelCredentials> InsecureChannelCredentials();
namespace experimental {
// grpc++'s LocalCredentials: plaintext HTTP/2 that only reaches this
// machine. UDS: over unix sockets only (a target of another scheme fails
// every call INVALID_ARGUMENT naming it); LOCAL_TCP: over TCP whose local
// end is a loopback address. A connection that is neither (a resolver's
// address elsewhere) fails its dial, and the calls on it, naming the
// address: as grpc++ checks the socket after the connect. Call
// credentials are sent on it (CompositeChannelCredentials), as grpc++ does.
std::shared_ptr<ChannelCredentials> LocalCredentials(grpc_local_connect_type type);
}  // namespace experimental
// TLS over OpenSSL: ALPN h2, SNI and certificate check against the
// authority's host (or grpc.ssl_target_name_override). Bad PEM makes every
// call fail INVALID_ARGUMENT naming the field.
std::shared_ptr<ChannelCredentials> SslCredentials(const SslCredentialsOptions& options);

class Channel {
 public:
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // ---- calls ------------------------------------------------------------------
  // Any thread but the channel's CQ threads. The calling thread sleeps on a
  // futex the CQ thread that ran the call wakes. A request passed as an
  // rvalue (the generated stubs' serialized message) is not copied.
  Status BlockingUnaryCall(std::string method, ClientContext* ctx, const std::string& request,
                           std::string* response);
  Status BlockingUnaryCall(std::string method, ClientContext* ctx, std::string&& request,
                           std::string* response);
  // Any thread; `done` runs on the CQ thread that ran the call.
  void UnaryCallAsync(std::string method, ClientContext* ctx, std::string request,
                      std::string* response, std::function<void(Status)> done);
  // On a CQ thread of this channel (from Spawn()ed work).
  Task<Status> Unary(std::string method, ClientContext* ctx, std::string request,
                     std::string* response);
  // The same three with the response as received (a large one as slices
  // of the receive buffers, not copied): what the generated stubs parse.
  Status BlockingUnaryCall(std::string method, ClientContext* ctx, std::string&& request,
                           ByteBuffer* response);
  void UnaryCallAsync(std::string method, ClientContext* ctx, std::string request,
                      ByteBuffer* response, std::function<void(Status)> done);
  Task<Status> Unary(std::string method, ClientContext* ctx, std::string request,
                     ByteBuffer* response);
  // A stream; `kind` is what interceptors see (ClientRpcInfo::type()):
  // the generated stubs say which, a generic one is bidirectional.
  Task<std::unique_ptr<ClientCall>> Open(
      std::string method, ClientContext* ctx, Status* status,
      internal::CallKind kind = internal::CallKind::kBidiStreaming);
  // Open from a thread that is not one of the channel's CQ threads (the
  // blocking stream API): hops to a CQ thread, opens there, waits.
  std::unique_ptr<ClientCall> BlockingOpen(
      const std::string& method, ClientContext* ctx, Status* status,
      internal::CallKind kind = internal::CallKind::kBidiStreaming);
  // Runs `task` on one of the channel's CQ threads: the calling one if it
  // is one of them, else the next in the calling thread's round of them
  // (one application thread's async work spreads over every CQ thread).
  void Spawn(Task<void> task);
  // Runs `task` on CQ thread `cq_thread` (< cq_thread_count()), for callers
  // that manage their own affinity. INVALID_ARGUMENT (and `task` dropped
  // unstarted) for a thread that does not exist.
  Status SpawnOn(size_t cq_thread, Task<void> task);
  // The channel's CQ threads (a channel whose configuration is bad still
  // has the process-wide ones, where its calls end with the error; 0 only
  // when no CQ thread could start).
  size_t cq_thread_count() const;
  // The event loop those threads run: "io_uring", or "epoll" (asked for,
  // or the fallback where io_uring cannot be set up: an old kernel, a
  // seccomp filter, io_uring_disabled); "" when no CQ thread could start.
  std::string poller() const;

  // ---- state ------------------------------------------------------------------
  ConnectivityState GetState(bool try_to_connect);
  // Waits until the state differs from `last` or the deadline passes; false
  // on timeout. On one of the channel's CQ threads it does not wait: it
  // says whether the state differs now.
  bool WaitForStateChange(ConnectivityState last, std::chrono::system_clock::time_point deadline);
  // The CompletionQueue form (grpc++'s NotifyOnStateChange): `tag` comes
  // out of `cq` with ok == true once the state differs from `last`, or with
  // ok == false at `deadline` (any std::chrono time point). Never blocks;
  // any thread. The state is looked at every 10 ms on one of the channel's
  // CQ threads (and at once). Nothing is delivered for a null `cq`; a
  // queue already shut down refuses it as it refuses any work.
  template <typename T>
  void NotifyOnStateChange(ConnectivityState last, const T& deadline, CompletionQueue* cq,
                           void* tag) {
    NotifyOnStateChangeAt(last, internal::ToCqTime(deadline), cq, tag);
  }
  // Waits until a call from this thread can go out at once: the CQ thread
  // this thread's blocking calls use has a connection to an address the
  // policy picks (other CQ threads connect when they first need to: each
  // has its own connections). False at the deadline. GetState() is READY
  // as soon as any CQ thread is connected. On one of the channel's CQ
  // threads it does not wait: true if READY now (a connection attempt is
  // started otherwise). False at once for a misconfigured channel.
  // Decision 0031.
  bool WaitForConnected(std::chrono::system_clock::time_point deadline);

  // Retires every connection made so far, on every thread, lazily (calls in
  // flight finish on their connection).
  void Invalidate();
  // Pool counters summed over the channel's addresses.
  pool::PoolMetrics Metrics() const;
  // The same per address, in Prometheus text exposition format (counters
  // ringrpc_connections_*_total, gauges ringrpc_connections_live and
  // ringrpc_streams_active, retirements by reason), label `address`.
  // Then the per-call telemetry (ringrpc/client/call_metrics.h) as Prometheus text.
  std::string MetricsText() const;
  // Per-call telemetry in gRFC A66's instruments, per method and status,
  // merged over the CQ threads now (empty with ringrpc.call_metrics=0).
  CallMetricsSnapshot CallMetrics() const;
  // The channel's configuration error, if its target or arguments were bad
  // (then every call fails with it).
  Status configuration_status() const;
  // The last service config the resolver delivered that could not be used
  // (UNAVAILABLE naming the JSON path of the problem), or OK: the channel
  // keeps the last valid one meanwhile (gRFC A21).
  Status resolver_service_config_status() const;

 private:
  friend std::shared_ptr<Channel> CreateChannelWithResolver(
      const std::string&, std::shared_ptr<Resolver>, const std::shared_ptr<ChannelCredentials>&,
      const ChannelArguments&);
  friend std::shared_ptr<Channel> experimental::CreateCustomChannelWithInterceptors(
      const std::string&, const std::shared_ptr<ChannelCredentials>&, const ChannelArguments&,
      std::vector<std::unique_ptr<experimental::ClientInterceptorFactoryInterface>>);
  explicit Channel(std::shared_ptr<channel::ChannelState> state);
  void NotifyOnStateChangeAt(ConnectivityState last, internal::CqClock::time_point deadline,
                             CompletionQueue* cq, void* tag);
  Status BlockingUnaryCall(std::string method, ClientContext* ctx, std::string&& request,
                           internal::ResponseSink response);
  void UnaryCallAsync(std::string method, ClientContext* ctx, std::string request,
                      internal::ResponseSink response, std::function<void(Status)> done);
  std::shared_ptr<channel::ChannelState> state_;
};

std::shared_ptr<Channel> CreateChannel(const std::string& target,
                                       const std::shared_ptr<ChannelCredentials>& creds);
std::shared_ptr<Channel> CreateCustomChannel(const std::string& target,
                                             const std::shared_ptr<ChannelCredentials>& creds,
                                             const ChannelArguments& args);
// A channel fed by a resolver of your own (or a ManualResolver in tests);
// `authority` is the :authority its calls carry (and, with SslCredentials,
// the name the server's certificate is checked against, unless
// grpc.ssl_target_name_override says another). Without credentials:
// plaintext (InsecureChannelCredentials).
std::shared_ptr<Channel> CreateChannelWithResolver(const std::string& authority,
                                                   std::shared_ptr<Resolver> resolver,
                                                   const std::shared_ptr<ChannelCredentials>& creds,
                                                   const ChannelArguments& args);
std::shared_ptr<Channel> CreateChannelWithResolver(const std::string& authority,
                                                   std::shared_ptr<Resolver> resolver,
                                                   const ChannelArguments& args);

// The configuration error a channel with these arguments would have, or OK.
Status ValidateChannelArguments(const ChannelArguments& args);

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_CHANNEL_H_
