// ringrpc/client/callback_reactor.h — grpc++'s callback API for streaming calls:
// ClientReadReactor (server streaming), ClientWriteReactor (client
// streaming), ClientBidiReactor and ClientUnaryReactor, in the shape grpc++
// users know.
//
//   class Chat : public ringrpc::ClientBidiReactor<Note, Note> {
//    public:
//     explicit Chat(RouteGuide::Stub* stub) {
//       stub->async()->RouteChat(&ctx_, this);
//       StartRead(&in_);
//       StartWrite(&out_);
//       StartCall();
//     }
//     void OnReadDone(bool ok) override { if (ok) StartRead(&in_); }
//     void OnWriteDone(bool ok) override { if (ok) StartWritesDone(); }
//     void OnDone(const ringrpc::Status& s) override { /* the end */ }
//    private:
//     ringrpc::ClientContext ctx_;
//     Note in_, out_;
//   };
//
// Rules, as in grpc++: at most one read and one write outstanding (more are
// queued here, in order, rather than being undefined); the messages passed
// to StartRead/StartWrite must live until their reaction; every reaction
// and OnDone run on the call's CQ thread; OnDone runs exactly once, after
// every other reaction, when the call has its status and no hold remains;
// after OnDone the library never touches the reactor again, so OnDone may
// delete it. Start* and the hold methods may be called from any thread.
#ifndef RINGRPC_CLIENT_CALLBACK_REACTOR_H_
#define RINGRPC_CLIENT_CALLBACK_REACTOR_H_

#include <google/protobuf/message_lite.h>

#include <memory>
#include <string>

#include "ringrpc/client/channel.h"
#include "ringrpc/client/client_context.h"
#include "ringrpc/client/status.h"

namespace ringrpc {

class ClientReactorBase;

namespace internal {
class ReactorCore;
enum class ReactorKind { kUnary, kServerStreaming, kClientStreaming, kBidi };
// What generated stubs call: ties `reactor` to a call of `method` on
// `channel`. `request`: the unary or server-streaming request; `response`:
// where a unary or client-streaming call's single response goes.
void BindReactor(ClientReactorBase* reactor, std::shared_ptr<Channel> channel, std::string method,
                 ClientContext* context, ReactorKind kind, std::string request = "",
                 google::protobuf::MessageLite* response = nullptr);
}  // namespace internal

class ClientReactorBase {
 public:
  virtual ~ClientReactorBase();
  ClientReactorBase(const ClientReactorBase&) = delete;
  ClientReactorBase& operator=(const ClientReactorBase&) = delete;

  // Starts the call; operations started earlier run from here, in order.
  // A reactor never bound by a stub ends at once with FAILED_PRECONDITION.
  void StartCall();
  // Delays OnDone until as many RemoveHold calls.
  void AddHold() { AddMultipleHolds(1); }
  void AddMultipleHolds(int holds);
  void RemoveHold();

  // Reactions, on the call's CQ thread.
  virtual void OnDone(const Status& /*status*/) {}
  virtual void OnReadInitialMetadataDone(bool /*ok*/) {}
  virtual void OnReadDone(bool /*ok*/) {}
  virtual void OnWriteDone(bool /*ok*/) {}
  virtual void OnWritesDoneDone(bool /*ok*/) {}

 protected:
  ClientReactorBase();
  void StartReadBytes(google::protobuf::MessageLite* out);
  // The next message's bytes as received, unparsed (the generic stub's).
  void StartReadRaw(std::string* out);
  void StartWriteBytes(std::string message, bool last, bool compress = true);
  void StartWritesDoneOp();

 private:
  friend void internal::BindReactor(ClientReactorBase*, std::shared_ptr<Channel>, std::string,
                                    ClientContext*, internal::ReactorKind, std::string,
                                    google::protobuf::MessageLite*);
  std::shared_ptr<internal::ReactorCore> core_;
};

// grpc++'s ClientUnaryReactor: the callback form of a unary call that also
// reports the server's initial metadata (OnReadInitialMetadataDone) before
// OnDone. Bound by stub->async()->Method(ctx, &request, &response, reactor).
class ClientUnaryReactor : public ClientReactorBase {};

template <typename Response>
class ClientReadReactor : public ClientReactorBase {
 public:
  void StartRead(Response* response) { StartReadBytes(response); }
};

// The write side, shared by the client-streaming and bidi reactors.
template <typename Request>
class ClientWriteOps : public ClientReactorBase {
 public:
  void StartWrite(const Request* request) { StartWrite(request, WriteOptions()); }
  void StartWrite(const Request* request, WriteOptions options) {
    StartWriteBytes(request->SerializeAsString(), options.is_last_message(),
                    !options.get_no_compression());
  }
  void StartWriteLast(const Request* request, WriteOptions options) {
    StartWrite(request, options.set_last_message());
  }
  void StartWritesDone() { StartWritesDoneOp(); }
};

template <typename Request>
class ClientWriteReactor : public ClientWriteOps<Request> {};

template <typename Request, typename Response>
class ClientBidiReactor : public ClientWriteOps<Request> {
 public:
  void StartRead(Response* response) { this->StartReadBytes(response); }
};

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_CALLBACK_REACTOR_H_
