// ringrpc/client/async_unary_call.h — grpc++'s ClientAsyncResponseReader: a unary
// call in the CompletionQueue form. Generated stubs make it
// (stub->AsyncFoo / PrepareAsyncFoo); its completions are tags on the
// CompletionQueue given there.
//
//   std::unique_ptr<ringrpc::ClientAsyncResponseReader<HelloReply>> rpc =
//       stub->PrepareAsyncSayHello(&ctx, request, &cq);
//   rpc->StartCall();
//   rpc->Finish(&reply, &status, tag);   // `tag` comes out of cq.Next, ok == true
//
// As in grpc++: the context, the response and the status must live until
// Finish's tag is delivered; the reader may be destroyed at any time (the
// call runs on and delivers its tags). Finish's tag always has ok == true
// and the outcome is in *status. ReadInitialMetadata's tag is delivered
// when the call ends, before Finish's (ringrpc's unary calls report their
// metadata with the response): ok is whether the server sent initial
// metadata. Misuse has defined outcomes: a second Finish or
// ReadInitialMetadata delivers its tag with ok == false; Finish on a
// reader whose CompletionQueue was null sets *status INVALID_ARGUMENT.
#ifndef RINGRPC_CLIENT_ASYNC_UNARY_CALL_H_
#define RINGRPC_CLIENT_ASYNC_UNARY_CALL_H_

#include <google/protobuf/message_lite.h>

#include <memory>
#include <string>
#include <type_traits>

#include "ringrpc/base/byte_buffer.h"
#include "ringrpc/client/channel.h"
#include "ringrpc/client/client_context.h"
#include "ringrpc/client/completion_queue.h"
#include "ringrpc/client/message_parse.h"
#include "ringrpc/client/status.h"

namespace ringrpc {

namespace internal {

class AsyncUnaryCore;

// How a response type is read from the bytes received: a protobuf
// message parsed (INTERNAL if it does not parse), or std::string (the
// generic stub's raw bytes) as they are.
template <class R>
struct ResponseReader {
  static Status Read(const Status& s, ByteBuffer& reply, void* out) {
    if constexpr (std::is_same_v<R, std::string>) {
      if (s.ok()) *static_cast<std::string*>(out) = std::move(reply).TakeString();
      return s;
    } else {
      return ParseReply(s, reply, static_cast<R*>(out));
    }
  }
  static std::string Serialize(const R& r) {
    if constexpr (std::is_same_v<R, std::string>) {
      return r;
    } else {
      return r.SerializeAsString();
    }
  }
};
using ReadResponseFn = Status (*)(const Status&, ByteBuffer&, void*);

// The untyped call behind a ClientAsyncResponseReader.
class AsyncUnaryHandle {
 public:
  AsyncUnaryHandle(std::shared_ptr<Channel> channel, std::string method, ClientContext* context,
                   std::string request, CompletionQueue* cq);
  ~AsyncUnaryHandle();
  AsyncUnaryHandle(const AsyncUnaryHandle&) = delete;
  AsyncUnaryHandle& operator=(const AsyncUnaryHandle&) = delete;

  void StartCall();
  void ReadInitialMetadata(void* tag);
  void Finish(void* response, ReadResponseFn read, Status* status, void* tag);

 private:
  AsyncUnaryCore* core_;
};

}  // namespace internal

template <class R>
class ClientAsyncResponseReaderInterface {
 public:
  virtual ~ClientAsyncResponseReaderInterface() = default;
  virtual void StartCall() = 0;
  virtual void ReadInitialMetadata(void* tag) = 0;
  virtual void Finish(R* msg, Status* status, void* tag) = 0;
};

template <class R>
class ClientAsyncResponseReader final : public ClientAsyncResponseReaderInterface<R> {
 public:
  // What generated stubs call: `start` is AsyncFoo (started now) as
  // opposed to PrepareAsyncFoo (started by StartCall).
  // `request`: a protobuf message, or (the generic stub's) serialized bytes.
  template <class Request>
  static ClientAsyncResponseReader* Create(std::shared_ptr<Channel> channel, std::string method,
                                           ClientContext* context, const Request& request,
                                           CompletionQueue* cq, bool start) {
    auto* reader =
        new ClientAsyncResponseReader(std::move(channel), std::move(method), context,
                                      internal::ResponseReader<Request>::Serialize(request), cq);
    if (start) reader->StartCall();
    return reader;
  }

  void StartCall() override { call_.StartCall(); }
  void ReadInitialMetadata(void* tag) override { call_.ReadInitialMetadata(tag); }
  void Finish(R* msg, Status* status, void* tag) override {
    call_.Finish(msg, &internal::ResponseReader<R>::Read, status, tag);
  }

 private:
  ClientAsyncResponseReader(std::shared_ptr<Channel> channel, std::string method,
                            ClientContext* context, std::string request, CompletionQueue* cq)
      : call_(std::move(channel), std::move(method), context, std::move(request), cq) {}
  internal::AsyncUnaryHandle call_;
};

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_ASYNC_UNARY_CALL_H_
