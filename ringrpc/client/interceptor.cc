#include "ringrpc/client/interceptor.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <utility>

#include "ringrpc/client/internal/call_access.h"
#include "ringrpc/client/internal/interceptors.h"

namespace ringrpc {
namespace internal {

using experimental::InterceptionHookPoints;

class CallInterceptors::Batch final : public experimental::InterceptorBatchMethods {
 public:
  Batch(InterceptionHookPoints point, CallInterceptors* owner) : point_(point), owner_(owner) {}
  bool QueryInterceptionHookPoint(InterceptionHookPoints type) override { return type == point_; }
  void Proceed() override { proceeded_ = true; }
  void Fail(Status status) override {
    failed_ = status.ok() ? Status(StatusCode::UNKNOWN, "an interceptor failed the call with OK")
                          : std::move(status);
  }
  std::multimap<std::string, std::string>* GetSendInitialMetadata() override { return send_md; }
  std::string* GetSerializedSendMessage() override { return send_message; }
  const void* GetSendMessage() override {
    if (send_view_ == nullptr && send_message != nullptr) {
      send_view_ = View(owner_->Prototype(/*request=*/true), *send_message);
    }
    return send_view_.get();
  }
  void ModifySendMessage(const void* message) override {
    if (send_message == nullptr || message == nullptr) return;
    static_cast<const google::protobuf::MessageLite*>(message)->SerializeToString(send_message);
    send_view_.reset();  // parsed again if asked
  }
  const std::multimap<std::string, std::string>* GetRecvInitialMetadata() override {
    return recv_initial;
  }
  const std::multimap<std::string, std::string>* GetRecvTrailingMetadata() override {
    return recv_trailing;
  }
  std::string* GetSerializedRecvMessage() override { return recv_message; }
  void* GetRecvMessage() override {
    if (recv_view_ == nullptr && recv_message != nullptr) {
      recv_view_ = View(owner_->Prototype(/*request=*/false), *recv_message);
    }
    return recv_view_.get();
  }
  // After the interceptors: a received message that was looked at as its
  // type goes on as that (it may have been changed).
  void StoreRecvView() {
    if (recv_view_ != nullptr) recv_view_->SerializeToString(recv_message);
  }
  Status* GetRecvStatus() override { return recv_status; }

  InterceptionHookPoints point() const { return point_; }
  // Ready for the next interceptor.
  void Reset() { proceeded_ = false; }
  bool proceeded() const { return proceeded_; }
  const std::optional<Status>& failed() const { return failed_; }

  std::multimap<std::string, std::string>* send_md = nullptr;
  std::string* send_message = nullptr;
  const std::multimap<std::string, std::string>* recv_initial = nullptr;
  const std::multimap<std::string, std::string>* recv_trailing = nullptr;
  std::string* recv_message = nullptr;
  Status* recv_status = nullptr;

 private:
  static std::unique_ptr<google::protobuf::Message> View(const google::protobuf::Message* type,
                                                         const std::string& bytes) {
    if (type == nullptr) return nullptr;
    std::unique_ptr<google::protobuf::Message> m(type->New());
    if (!m->ParseFromString(bytes)) return nullptr;  // not this type after all
    return m;
  }

  InterceptionHookPoints point_;
  CallInterceptors* owner_;
  std::unique_ptr<google::protobuf::Message> send_view_, recv_view_;
  bool proceeded_ = false;
  std::optional<Status> failed_;
};

namespace {

const char* HookName(InterceptionHookPoints p) {
  switch (p) {
    case InterceptionHookPoints::PRE_SEND_INITIAL_METADATA:
      return "PRE_SEND_INITIAL_METADATA";
    case InterceptionHookPoints::PRE_SEND_MESSAGE:
      return "PRE_SEND_MESSAGE";
    case InterceptionHookPoints::PRE_SEND_CLOSE:
      return "PRE_SEND_CLOSE";
    case InterceptionHookPoints::POST_RECV_INITIAL_METADATA:
      return "POST_RECV_INITIAL_METADATA";
    case InterceptionHookPoints::POST_RECV_MESSAGE:
      return "POST_RECV_MESSAGE";
    case InterceptionHookPoints::POST_RECV_STATUS:
      return "POST_RECV_STATUS";
    case InterceptionHookPoints::PRE_SEND_CANCEL:
      return "PRE_SEND_CANCEL";
    case InterceptionHookPoints::NUM_INTERCEPTION_HOOKS:
      break;
  }
  return "?";
}

experimental::ClientRpcInfo::Type RpcType(const ClientContext& ctx) {
  using Info = experimental::ClientRpcInfo;
  switch (CallAccess::call_kind(ctx)) {
    case CallKind::kUnary:
      return Info::UNARY;
    case CallKind::kClientStreaming:
      return Info::CLIENT_STREAMING;
    case CallKind::kServerStreaming:
      return Info::SERVER_STREAMING;
    case CallKind::kBidiStreaming:
      return Info::BIDI_STREAMING;
    case CallKind::kUnknown:
      break;
  }
  return Info::UNKNOWN;
}

std::multimap<std::string, std::string> ToMap(const transport::Metadata& md) {
  return {md.begin(), md.end()};
}

}  // namespace

std::unique_ptr<CallInterceptors> CallInterceptors::Create(const InterceptorFactories* factories,
                                                           const std::string& method,
                                                           ClientContext* ctx) {
  if (factories == nullptr || factories->empty()) return nullptr;
  auto out = std::make_unique<CallInterceptors>();
  out->method_ = method;
  experimental::ClientRpcInfo info(method, ctx, RpcType(*ctx));
  for (const auto& f : *factories) {
    if (experimental::Interceptor* i = f->CreateClientInterceptor(&info))
      out->list_.emplace_back(i);
  }
  if (out->list_.empty()) return nullptr;
  return out;
}

const google::protobuf::Message* CallInterceptors::Prototype(bool request) {
  if (!types_looked_up_) {
    types_looked_up_ = true;
    // "/package.Service/Method" is the method "package.Service.Method".
    const size_t slash = method_.rfind('/');
    if (slash != std::string::npos && slash > 1 && method_[0] == '/') {
      const std::string full = method_.substr(1, slash - 1) + "." + method_.substr(slash + 1);
      if (const google::protobuf::MethodDescriptor* md =
              google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(full)) {
        google::protobuf::MessageFactory* f = google::protobuf::MessageFactory::generated_factory();
        request_type_ = f->GetPrototype(md->input_type());
        response_type_ = f->GetPrototype(md->output_type());
      }
    }
  }
  return request ? request_type_ : response_type_;
}

Status CallInterceptors::Run(Batch& batch) {
  for (size_t i = 0; i < list_.size(); ++i) {
    batch.Reset();
    list_[i]->Intercept(&batch);
    if (batch.failed()) return *batch.failed();
    if (!batch.proceeded()) {
      return Status(StatusCode::INTERNAL,
                    "interceptor " + std::to_string(i) + " returned from Intercept at " +
                        HookName(batch.point()) + " without calling Proceed() or Fail()");
    }
  }
  return Status();
}

Status CallInterceptors::PreSendInitialMetadata(transport::Metadata& md) {
  Batch b(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA, this);
  std::multimap<std::string, std::string> map = ToMap(md);
  b.send_md = &map;
  Status s = Run(b);
  md.assign(map.begin(), map.end());
  return s;
}

Status CallInterceptors::PreSendMessage(std::string& message) {
  Batch b(InterceptionHookPoints::PRE_SEND_MESSAGE, this);
  b.send_message = &message;
  return Run(b);
}

Status CallInterceptors::PreSendClose() {
  Batch b(InterceptionHookPoints::PRE_SEND_CLOSE, this);
  return Run(b);
}

Status CallInterceptors::PostRecvInitialMetadata(const transport::Metadata& md) {
  if (initial_reported_) return Status();
  initial_reported_ = true;
  Batch b(InterceptionHookPoints::POST_RECV_INITIAL_METADATA, this);
  std::multimap<std::string, std::string> map = ToMap(md);
  b.recv_initial = &map;
  return Run(b);
}

Status CallInterceptors::PostRecvMessage(std::string& message) {
  Batch b(InterceptionHookPoints::POST_RECV_MESSAGE, this);
  b.recv_message = &message;
  Status s = Run(b);
  b.StoreRecvView();
  return s;
}

void CallInterceptors::PostRecvStatus(Status& status, const transport::Metadata& initial,
                                      const transport::Metadata& trailing) {
  Batch b(InterceptionHookPoints::POST_RECV_STATUS, this);
  std::multimap<std::string, std::string> im = ToMap(initial), tm = ToMap(trailing);
  b.recv_initial = &im;
  b.recv_trailing = &tm;
  b.recv_status = &status;
  Status s = Run(b);
  if (!s.ok()) status = s;
}

void CallInterceptors::PreSendCancel() {
  Batch b(InterceptionHookPoints::PRE_SEND_CANCEL, this);
  (void)Run(b);  // the call is cancelled whatever they say
}

}  // namespace internal
}  // namespace ringrpc
