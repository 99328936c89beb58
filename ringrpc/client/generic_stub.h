// ringrpc/client/generic_stub.h — grpc++'s GenericStub: calls by method name over
// serialized messages (std::string where grpc++ has ByteBuffer), without
// generated code. For proxies, gateways and tools.
//
//   ringrpc::GenericStub stub(channel);
//   std::string reply;
//   ringrpc::Status s = stub.UnaryCall(&ctx, "/pkg.Svc/Method", request_bytes, &reply);
//   auto stream = stub.Call(&ctx, "/pkg.Svc/Chat");   // any streaming kind
//   stream->Write(bytes); stream->WritesDone(); while (stream->Read(&bytes)) ...
#ifndef RINGRPC_CLIENT_GENERIC_STUB_H_
#define RINGRPC_CLIENT_GENERIC_STUB_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "ringrpc/base/task.h"
#include "ringrpc/client/async_stream.h"
#include "ringrpc/client/async_unary_call.h"
#include "ringrpc/client/blocking_stream.h"
#include "ringrpc/client/channel.h"

namespace ringrpc {

class GenericStub final {
 public:
  explicit GenericStub(std::shared_ptr<Channel> channel) : channel_(std::move(channel)) {}

  // Blocking (not on one of the channel's CQ threads).
  Status UnaryCall(ClientContext* context, const std::string& method, const std::string& request,
                   std::string* response) {
    return channel_->BlockingUnaryCall(method, context, request, response);
  }
  // Callback, grpc++'s shape: `on_completion` runs once on a CQ thread; the
  // request is copied now; the response must outlive the call.
  void UnaryCall(ClientContext* context, const std::string& method, const std::string* request,
                 std::string* response, std::function<void(Status)> on_completion) {
    channel_->UnaryCallAsync(method, context, *request, response, std::move(on_completion));
  }
  // Coroutine (on one of the channel's CQ threads).
  Task<Status> co_UnaryCall(ClientContext* context, std::string method, std::string request,
                            std::string* response) {
    return channel_->Unary(std::move(method), context, std::move(request), response);
  }
  // A streaming call of any kind, blocking form: write, half-close and read
  // bytes. A failure to open is reported by Finish().
  std::unique_ptr<GenericClientReaderWriter> Call(ClientContext* context,
                                                  const std::string& method) {
    Status status;
    std::unique_ptr<ClientCall> call = channel_->BlockingOpen(method, context, &status);
    return std::make_unique<GenericClientReaderWriter>(std::move(call), std::move(status));
  }
  // The same, coroutine form (on one of the channel's CQ threads): nullptr
  // and *status on failure to open.
  Task<std::unique_ptr<ClientCall>> co_Call(ClientContext* context, std::string method,
                                            Status* status) {
    return channel_->Open(std::move(method), context, status);
  }
  // The CompletionQueue form (grpc++'s PrepareUnaryCall, with the
  // request's bytes as a string): StartCall, then Finish(&reply_bytes,
  // &status, tag).
  std::unique_ptr<ClientAsyncResponseReader<std::string>> PrepareUnaryCall(
      ClientContext* context, const std::string& method, const std::string& request,
      CompletionQueue* cq) {
    return std::unique_ptr<ClientAsyncResponseReader<std::string>>(
        ClientAsyncResponseReader<std::string>::Create(channel_, method, context, request, cq,
                                                       /*start=*/false));
  }
  // A stream of any kind in the CompletionQueue form, over bytes (grpc++'s
  // PrepareCall): StartCall(tag), then Write / Read / WritesDone / Finish.
  std::unique_ptr<ClientAsyncReaderWriter<std::string, std::string>> PrepareCall(
      ClientContext* context, const std::string& method, CompletionQueue* cq) {
    return std::unique_ptr<ClientAsyncReaderWriter<std::string, std::string>>(
        ClientAsyncReaderWriter<std::string, std::string>::Create(channel_, method.c_str(), context,
                                                                  cq,
                                                                  /*start=*/false, nullptr));
  }
  const std::shared_ptr<Channel>& channel() const { return channel_; }

 private:
  std::shared_ptr<Channel> channel_;
};

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_GENERIC_STUB_H_
