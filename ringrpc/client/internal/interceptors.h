// ringrpc/client/internal/interceptors.h — one call's interceptors (made by the
// channel's factories when the call opens) and the hook points ClientCall
// runs them at. Private to ringrpc/client/. Threading: the call's CQ thread.
#ifndef RINGRPC_CLIENT_INTERNAL_INTERCEPTORS_H_
#define RINGRPC_CLIENT_INTERNAL_INTERCEPTORS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ringrpc/client/interceptor.h"
#include "ringrpc/client/transport/metadata.h"

namespace google::protobuf {
class Message;
}  // namespace google::protobuf

namespace ringrpc::internal {

using InterceptorFactories =
    std::vector<std::unique_ptr<experimental::ClientInterceptorFactoryInterface>>;

class CallInterceptors {
 public:
  // nullptr when there are no factories (or none made an interceptor).
  static std::unique_ptr<CallInterceptors> Create(const InterceptorFactories* factories,
                                                  const std::string& method, ClientContext* ctx);

  // Each runs every interceptor at one hook point and returns the status an
  // interceptor failed the call with (OK if all proceeded).
  Status PreSendInitialMetadata(transport::Metadata& md);
  Status PreSendMessage(std::string& message);
  Status PreSendClose();
  // Once per call; later calls do nothing.
  Status PostRecvInitialMetadata(const transport::Metadata& md);
  Status PostRecvMessage(std::string& message);
  // `status` may be changed by the interceptors.
  void PostRecvStatus(Status& status, const transport::Metadata& initial,
                      const transport::Metadata& trailing);
  void PreSendCancel();

 private:
  class Batch;
  Status Run(Batch& batch);
  // The method's request or response type, from the generated descriptor
  // pool; looked up when an interceptor first asks (nullptr: unknown).
  const google::protobuf::Message* Prototype(bool request);

  std::vector<std::unique_ptr<experimental::Interceptor>> list_;
  std::string method_;
  bool initial_reported_ = false;
  bool types_looked_up_ = false;
  const google::protobuf::Message* request_type_ = nullptr;
  const google::protobuf::Message* response_type_ = nullptr;
};

}  // namespace ringrpc::internal

#endif  // RINGRPC_CLIENT_INTERNAL_INTERCEPTORS_H_
