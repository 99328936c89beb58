// ringrpc/client/async_stream.h — grpc++'s streaming calls in the CompletionQueue
// form: ClientAsyncReader (server streaming), ClientAsyncWriter (client
// streaming), ClientAsyncReaderWriter (bidi), and their *Interface bases
// (for mocks). Generated stubs make them (stub->AsyncFoo(..., cq, tag),
// which starts the call, or PrepareAsyncFoo(..., cq) and StartCall(tag)).
//
//   auto stream = stub->PrepareAsyncRouteChat(&ctx, &cq);
//   stream->StartCall(kStarted);
//   stream->Write(note, kWrote);        // one write outstanding at a time
//   stream->Read(&in, kRead);           // one read outstanding at a time
//   stream->WritesDone(kHalfClosed);
//   stream->Finish(&status, kFinished); // ok == true; the outcome in status
//
// As in grpc++: each operation's tag comes out of the CompletionQueue once;
// a read's tag with ok == false means the stream has ended (then Finish); a
// write's means the call is over. The context, the messages passed to Read
// and the response passed to a client-streaming call must live until their
// tags are delivered, the context until Finish's. Operations on a call that
// has ended deliver their tags with ok == false. More than one read (or
// write) outstanding is queued in order rather than undefined. The stream
// object may be destroyed at any time: the call runs on and its owed tags
// are delivered. Every call runs on one of the channel's CQ threads, with
// everything the other forms have (deadlines, TryCancel, retries,
// interceptors, credentials, compression).
#ifndef RINGRPC_CLIENT_ASYNC_STREAM_H_
#define RINGRPC_CLIENT_ASYNC_STREAM_H_

#include <google/protobuf/message_lite.h>

#include <memory>
#include <string>
#include <type_traits>

#include "ringrpc/client/callback_reactor.h"
#include "ringrpc/client/channel.h"
#include "ringrpc/client/client_context.h"
#include "ringrpc/client/completion_queue.h"
#include "ringrpc/client/status.h"
#include "ringrpc/client/write_options.h"

namespace ringrpc {

namespace internal {

class AsyncStreamCore;

// The untyped call behind the three stream classes.
class AsyncStreamHandle {
 public:
  AsyncStreamHandle(std::shared_ptr<Channel> channel, const char* method, ClientContext* context,
                    CompletionQueue* cq, ReactorKind kind, std::string request,
                    google::protobuf::MessageLite* response);
  ~AsyncStreamHandle();
  AsyncStreamHandle(const AsyncStreamHandle&) = delete;
  AsyncStreamHandle& operator=(const AsyncStreamHandle&) = delete;

  void StartCall(void* tag);
  void ReadInitialMetadata(void* tag);
  void Read(google::protobuf::MessageLite* out, void* tag);
  void Read(std::string* raw, void* tag);  // the bytes, unparsed
  void Write(std::string bytes, WriteOptions options, void* tag);
  void WritesDone(void* tag);
  void Finish(Status* status, void* tag);

 private:
  AsyncStreamCore* core_;
};

class ClientAsyncStreamingInterface {
 public:
  virtual ~ClientAsyncStreamingInterface() = default;
  virtual void StartCall(void* tag) = 0;
  virtual void ReadInitialMetadata(void* tag) = 0;
  virtual void Finish(Status* status, void* tag) = 0;
};

template <class R>
class AsyncReaderInterface {
 public:
  virtual ~AsyncReaderInterface() = default;
  virtual void Read(R* msg, void* tag) = 0;
};

template <class W>
class AsyncWriterInterface {
 public:
  virtual ~AsyncWriterInterface() = default;
  virtual void Write(const W& msg, void* tag) = 0;
  virtual void Write(const W& msg, WriteOptions options, void* tag) = 0;
  // Write and half-close in one (one tag).
  void WriteLast(const W& msg, WriteOptions options, void* tag) {
    Write(msg, options.set_last_message(), tag);
  }
};

}  // namespace internal

template <class R>
class ClientAsyncReaderInterface : public internal::ClientAsyncStreamingInterface,
                                   public internal::AsyncReaderInterface<R> {};

template <class W>
class ClientAsyncWriterInterface : public internal::ClientAsyncStreamingInterface,
                                   public internal::AsyncWriterInterface<W> {
 public:
  virtual void WritesDone(void* tag) = 0;
};

template <class W, class R>
class ClientAsyncReaderWriterInterface : public internal::ClientAsyncStreamingInterface,
                                         public internal::AsyncWriterInterface<W>,
                                         public internal::AsyncReaderInterface<R> {
 public:
  virtual void WritesDone(void* tag) = 0;
};

// Server streaming: the request is sent and the call half-closed at start.
template <class R>
class ClientAsyncReader final : public ClientAsyncReaderInterface<R> {
 public:
  // What generated stubs call: `start` (AsyncFoo) starts it now with `tag`.
  static ClientAsyncReader* Create(std::shared_ptr<Channel> channel, const char* method,
                                   ClientContext* context,
                                   const google::protobuf::MessageLite& request,
                                   CompletionQueue* cq, bool start, void* tag) {
    auto* r =
        new ClientAsyncReader(std::move(channel), method, context, cq, request.SerializeAsString());
    if (start) r->StartCall(tag);
    return r;
  }
  void StartCall(void* tag) override { call_.StartCall(tag); }
  void ReadInitialMetadata(void* tag) override { call_.ReadInitialMetadata(tag); }
  void Read(R* msg, void* tag) override { call_.Read(msg, tag); }
  void Finish(Status* status, void* tag) override { call_.Finish(status, tag); }

 private:
  ClientAsyncReader(std::shared_ptr<Channel> channel, const char* method, ClientContext* context,
                    CompletionQueue* cq, std::string request)
      : call_(std::move(channel), method, context, cq, internal::ReactorKind::kServerStreaming,
              std::move(request), nullptr) {}
  internal::AsyncStreamHandle call_;
};

// Client streaming: the single response goes to the message given at
// creation; Finish's tag says it is there (status OK).
template <class W>
class ClientAsyncWriter final : public ClientAsyncWriterInterface<W> {
 public:
  static ClientAsyncWriter* Create(std::shared_ptr<Channel> channel, const char* method,
                                   ClientContext* context, google::protobuf::MessageLite* response,
                                   CompletionQueue* cq, bool start, void* tag) {
    auto* w = new ClientAsyncWriter(std::move(channel), method, context, cq, response);
    if (start) w->StartCall(tag);
    return w;
  }
  void StartCall(void* tag) override { call_.StartCall(tag); }
  void ReadInitialMetadata(void* tag) override { call_.ReadInitialMetadata(tag); }
  void Write(const W& msg, void* tag) override { Write(msg, WriteOptions(), tag); }
  void Write(const W& msg, WriteOptions options, void* tag) override {
    call_.Write(msg.SerializeAsString(), options, tag);
  }
  void WritesDone(void* tag) override { call_.WritesDone(tag); }
  void Finish(Status* status, void* tag) override { call_.Finish(status, tag); }

 private:
  ClientAsyncWriter(std::shared_ptr<Channel> channel, const char* method, ClientContext* context,
                    CompletionQueue* cq, google::protobuf::MessageLite* response)
      : call_(std::move(channel), method, context, cq, internal::ReactorKind::kClientStreaming, "",
              response) {}
  internal::AsyncStreamHandle call_;
};

template <class W, class R>
class ClientAsyncReaderWriter final : public ClientAsyncReaderWriterInterface<W, R> {
 public:
  static ClientAsyncReaderWriter* Create(std::shared_ptr<Channel> channel, const char* method,
                                         ClientContext* context, CompletionQueue* cq, bool start,
                                         void* tag) {
    auto* rw = new ClientAsyncReaderWriter(std::move(channel), method, context, cq);
    if (start) rw->StartCall(tag);
    return rw;
  }
  void StartCall(void* tag) override { call_.StartCall(tag); }
  void ReadInitialMetadata(void* tag) override { call_.ReadInitialMetadata(tag); }
  void Read(R* msg, void* tag) override { call_.Read(msg, tag); }
  void Write(const W& msg, void* tag) override { Write(msg, WriteOptions(), tag); }
  void Write(const W& msg, WriteOptions options, void* tag) override {
    if constexpr (std::is_same_v<W, std::string>) {
      call_.Write(msg, options, tag);  // the generic stub's bytes
    } else {
      call_.Write(msg.SerializeAsString(), options, tag);
    }
  }
  void WritesDone(void* tag) override { call_.WritesDone(tag); }
  void Finish(Status* status, void* tag) override { call_.Finish(status, tag); }

 private:
  ClientAsyncReaderWriter(std::shared_ptr<Channel> channel, const char* method,
                          ClientContext* context, CompletionQueue* cq)
      : call_(std::move(channel), method, context, cq, internal::ReactorKind::kBidi, "", nullptr) {}
  internal::AsyncStreamHandle call_;
};

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_ASYNC_STREAM_H_
