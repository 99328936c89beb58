// ringrpc/client/client_call.h — one open call on a channel (Channel::Open, or a
// generated stub's coroutine and blocking stream methods): write, read,
// finish, cancel. Its attempts (a retry's replay, the transparent retry)
// stay behind this one object.
//
// Threading: lives on the CQ thread that opened it; every method but
// Run(), OnItsThread() and OnChannelThread() is called there. It may be
// destroyed on any thread: it is released on its own (from a thread that
// is not one of the channel's CQ threads the destructor waits for that).
//
// Interceptors that answer later (Proceed from another thread): the
// awaited methods (Write, Read, ReadInitialMetadata, Finish) wait for the
// answer. The ones that do not wait (WriteNow, WritesDone,
// PublishInitialMetadata, FinishNow) cannot: at their hook points an
// interceptor must answer inside Intercept, or the call fails INTERNAL
// saying so. The generated stubs' call forms wait at every hook point.
//
//   Status open;
//   std::unique_ptr<ClientCall> call = co_await channel->Open(method, &ctx, &open);
//   co_await call->Write(request_bytes);
//   call->WritesDone();
//   while (auto reply = co_await call->Read()) { ... }
//   Status s = co_await call->Finish();
#ifndef RINGRPC_CLIENT_CLIENT_CALL_H_
#define RINGRPC_CLIENT_CLIENT_CALL_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ringrpc/base/byte_buffer.h"
#include "ringrpc/base/task.h"
#include "ringrpc/client/status.h"

namespace ringrpc {
namespace internal {
class CallOpener;
class ReactorCore;
}  // namespace internal
class BlockingCallBase;

// One open call: the stream plus the connection lease it runs on. Lives on
// the CQ thread that opened it.
class ClientCall {
 public:
  ~ClientCall();
  ClientCall(const ClientCall&) = delete;
  ClientCall& operator=(const ClientCall&) = delete;

  // Queues one message (copied now: `message` may go at once).
  // `compress`: false sends this message uncompressed (WriteOptions).
  Task<Status> Write(std::string_view message, bool compress = true);
  // The same without a copy of a large message: its bytes go to the socket
  // from where they are (and a retry's replay sends them from there too).
  Task<Status> Write(OutgoingMessage message, bool compress = true);
  void WritesDone();
  Task<std::optional<std::string>> Read();
  // The next message as received: large ones are slices of the receive
  // buffers (no copy); Read() joins them into one string.
  Task<std::optional<ByteBuffer>> ReadBuffer();
  // Waits for the server's initial metadata and puts it in the context:
  // false if the call ended without any. Not while Finish() is awaited.
  Task<bool> ReadInitialMetadata();
  // The same without waiting: false if none has arrived (yet).
  bool PublishInitialMetadata();
  // The status; also fills the context's server metadata and peer.
  Task<Status> Finish();
  // The call has its status: FinishNow() gives it without waiting.
  bool finished() const;
  Status FinishNow();
  // Queues one message without waiting for the send buffer to drain.
  Status WriteNow(std::string_view message);
  Status WriteNow(const OutgoingMessage& message);
  void Cancel();
  // After Finish: the server never processed the call (GOAWAY above its
  // stream, or REFUSED_STREAM), so sending it again is safe.
  bool never_sent() const;
  // Runs `task` on the CQ thread this call lives on (any thread may call
  // it): how the blocking stream API drives a call.
  void Run(Task<void> task);
  // The calling thread is the CQ thread this call lives on / any of its
  // channel's CQ threads (where blocking on the call would deadlock).
  bool OnItsThread() const;
  bool OnChannelThread() const;
  // The largest response message the call accepts (its attempt's limit);
  // on the call's CQ thread.
  uint32_t max_receive_message_size() const;

 private:
  friend class internal::CallOpener;
  friend class internal::ReactorCore;
  friend class BlockingCallBase;
  struct Impl;
  struct Release;
  // WriteNow, WritesDone, PublishInitialMetadata and FinishNow, awaited: at
  // once unless an interceptor answers later (the call forms use these).
  ReadyOr<Status> AwaitWriteNow(const OutgoingMessage& message);
  ReadyOr<Status> AwaitWritesDone();
  ReadyOr<bool> AwaitPublishInitialMetadata();
  ReadyOr<Status> AwaitFinishNow();
  // After the interceptors let a message through: queued, or sent again by
  // the next attempt.
  Task<Status> WriteIntercepted(OutgoingMessage message, bool compress);
  // A synchronous method met an interceptor that answers later.
  Status LateAnswer(const char* method);
  explicit ClientCall(std::unique_ptr<Impl> impl);
  // Read / ReadBuffer through interceptors and a retry's replay.
  template <typename Out>
  static Task<std::optional<Out>> ReadThrough(Impl* impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_CLIENT_CALL_H_
