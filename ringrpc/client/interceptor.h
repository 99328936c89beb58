// ringrpc/client/interceptor.h — client interceptors in grpc++'s model
// (grpc::experimental::Interceptor, InterceptorBatchMethods,
// ClientInterceptorFactoryInterface), installed per channel:
//
//   class AuthInterceptor : public ringrpc::experimental::Interceptor {
//    public:
//     void Intercept(ringrpc::experimental::InterceptorBatchMethods* m) override {
//       if (m->QueryInterceptionHookPoint(
//               ringrpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
//         m->GetSendInitialMetadata()->emplace("authorization", "Bearer ...");
//       }
//       m->Proceed();
//     }
//   };
//   class AuthFactory : public ringrpc::experimental::ClientInterceptorFactoryInterface {
//     ringrpc::experimental::Interceptor* CreateClientInterceptor(
//         ringrpc::experimental::ClientRpcInfo*) override { return new AuthInterceptor; }
//   };
//   auto channel = ringrpc::experimental::CreateCustomChannelWithInterceptors(
//       target, creds, args, std::move(factories));
//
// Each call gets one interceptor per factory (in the factories' order);
// every hook point of an operation runs them in that order, on the call's
// CQ thread, for every call form. Messages are seen as bytes
// (GetSerializedSendMessage / GetSerializedRecvMessage) and as their types
// (GetSendMessage / GetRecvMessage, parsed when asked).
//
// An interceptor answers with Proceed() or Fail(status): inside Intercept,
// or later from any thread, as in grpc++ (a token fetched off the call's
// thread). Until it answers, the batch and what it holds are its own, to
// read and change from that thread; the call waits, and the next
// interceptor runs on the call's CQ thread. The wait ends at the call's
// deadline or TryCancel (the call ends DEADLINE_EXCEEDED / CANCELLED,
// naming the interceptor and the hook point); the batch and the call's
// interceptors live until the answer comes, so a late answer is always
// safe. PRE_SEND_CANCEL is not waited for. Different from grpc++: no
// Hijack; Fail at PRE_SEND_INITIAL_METADATA ends the call with that status
// before anything is sent, at a later hook point it cancels the call and
// the call ends with that status. A channel without interceptors pays one
// pointer test per operation.
#ifndef RINGRPC_CLIENT_INTERCEPTOR_H_
#define RINGRPC_CLIENT_INTERCEPTOR_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ringrpc/client/channel.h"
#include "ringrpc/client/client_context.h"
#include "ringrpc/client/status.h"

namespace ringrpc::experimental {

enum class InterceptionHookPoints {
  PRE_SEND_INITIAL_METADATA,
  PRE_SEND_MESSAGE,
  PRE_SEND_CLOSE,
  POST_RECV_INITIAL_METADATA,
  POST_RECV_MESSAGE,
  POST_RECV_STATUS,
  PRE_SEND_CANCEL,
  NUM_INTERCEPTION_HOOKS
};

class InterceptorBatchMethods {
 public:
  virtual ~InterceptorBatchMethods() = default;
  virtual bool QueryInterceptionHookPoint(InterceptionHookPoints type) = 0;
  // On to the next interceptor (then the operation). Any thread, inside
  // Intercept or after it returned; once per Intercept.
  virtual void Proceed() = 0;
  // Ends the call with `status` (ringrpc's; grpc++ would hijack).
  virtual void Fail(Status status) = 0;
  // PRE_SEND_INITIAL_METADATA: the request metadata, modifiable.
  virtual std::multimap<std::string, std::string>* GetSendInitialMetadata() = 0;
  // PRE_SEND_MESSAGE: the message's bytes, modifiable.
  virtual std::string* GetSerializedSendMessage() = 0;
  // PRE_SEND_MESSAGE: the message as its type (static_cast the pointer to
  // the method's request type, or to const google::protobuf::Message*), as
  // grpc++'s: parsed from the bytes when first asked, valid until Intercept
  // returns. nullptr when the type is not known: a method whose proto is
  // not in the program's generated descriptor pool (a generic stub's own
  // path, a lite-runtime proto).
  virtual const void* GetSendMessage() = 0;
  // PRE_SEND_MESSAGE: sends `message` (of the request type) instead.
  virtual void ModifySendMessage(const void* message) = 0;
  // POST_RECV_INITIAL_METADATA / POST_RECV_STATUS: the server's metadata.
  virtual const std::multimap<std::string, std::string>* GetRecvInitialMetadata() = 0;
  virtual const std::multimap<std::string, std::string>* GetRecvTrailingMetadata() = 0;
  // POST_RECV_MESSAGE: the message's bytes, modifiable.
  virtual std::string* GetSerializedRecvMessage() = 0;
  // POST_RECV_MESSAGE: the message as its type (the method's response
  // type), modifiable: what the caller gets is what it holds after the
  // interceptors ran. Parsed when first asked; nullptr when the type is
  // not known (as GetSendMessage).
  virtual void* GetRecvMessage() = 0;
  // POST_RECV_STATUS: the call's status, modifiable.
  virtual Status* GetRecvStatus() = 0;
};

class Interceptor {
 public:
  virtual ~Interceptor() = default;
  virtual void Intercept(InterceptorBatchMethods* methods) = 0;
};

class ClientRpcInfo {
 public:
  // grpc++'s names and order.
  enum Type { UNARY, CLIENT_STREAMING, SERVER_STREAMING, BIDI_STREAMING, UNKNOWN };

  ClientRpcInfo(const std::string& method, ClientContext* context, Type type)
      : method_(method), context_(context), type_(type) {}
  // "/package.Service/Method".
  const char* method() const { return method_.c_str(); }
  ClientContext* client_context() const { return context_; }
  // The method's kind, as its stub declares it; a GenericStub's streams
  // (PrepareCall, Call) are BIDI_STREAMING, as in grpc++.
  Type type() const { return type_; }

 private:
  const std::string& method_;
  ClientContext* context_;
  Type type_;
};

class ClientInterceptorFactoryInterface {
 public:
  virtual ~ClientInterceptorFactoryInterface() = default;
  // A new interceptor for one call (owned by the call); nullptr: none.
  virtual Interceptor* CreateClientInterceptor(ClientRpcInfo* info) = 0;
};

std::shared_ptr<Channel> CreateCustomChannelWithInterceptors(
    const std::string& target, const std::shared_ptr<ChannelCredentials>& creds,
    const ChannelArguments& args,
    std::vector<std::unique_ptr<ClientInterceptorFactoryInterface>> interceptor_creators);

}  // namespace ringrpc::experimental

#endif  // RINGRPC_CLIENT_INTERCEPTOR_H_
