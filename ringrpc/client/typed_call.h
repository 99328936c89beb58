// ringrpc/client/typed_call.h — what generated stubs use: protobuf messages over
// ringrpc's byte-level calls.
//
//   std::unique_ptr<TypedCall<Req, Resp>> call =
//       co_await stub->co_Chat(&ctx, &status);
//   co_await call->Write(req);
//   Resp r;
//   while (co_await call->Read(&r)) { ... }
//   ringrpc::Status s = co_await call->Finish();
#ifndef RINGRPC_CLIENT_TYPED_CALL_H_
#define RINGRPC_CLIENT_TYPED_CALL_H_

#include <google/protobuf/message_lite.h>

#include <memory>
#include <string>

#include "ringrpc/base/task.h"
#include "ringrpc/client/channel.h"
#include "ringrpc/client/message_parse.h"
#include "ringrpc/client/status.h"

namespace ringrpc {

// A streaming call with typed messages. Lives on the CQ thread that
// opened it.
template <typename Request, typename Response>
class TypedCall {
 public:
  explicit TypedCall(std::unique_ptr<ClientCall> call) : call_(std::move(call)) {}

  Task<Status> Write(const Request& request, WriteOptions options = WriteOptions()) {
    return call_->Write(OutgoingMessage(request.SerializeAsString()),
                        !options.get_no_compression());
  }
  void WritesDone() { call_->WritesDone(); }
  // False at the end of the stream (or on a message that does not parse:
  // the call is cancelled and Finish says INTERNAL).
  Task<bool> Read(Response* response) {
    std::optional<ByteBuffer> m = co_await call_->ReadBuffer();
    if (!m) co_return false;
    if (!ParseMessage(*m, response)) {
      bad_message_ = true;
      call_->Cancel();
      co_return false;
    }
    co_return true;
  }
  Task<Status> Finish() {
    Status s = co_await call_->Finish();
    if (bad_message_) {
      co_return Status(StatusCode::INTERNAL,
                       "a response message does not parse as " + Response().GetTypeName());
    }
    co_return s;
  }
  void Cancel() { call_->Cancel(); }

 private:
  std::unique_ptr<ClientCall> call_;
  bool bad_message_ = false;
};

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_TYPED_CALL_H_
