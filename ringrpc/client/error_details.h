// ringrpc/client/error_details.h — a status's rich error details as a typed
// message, as grpc++'s <grpcpp/support/error_details.h>: the server's
// grpc-status-details-bin trailer (a serialized google.rpc.Status) is
// Status::error_details(); these two templates parse it into, or build it
// from, any message of google.rpc.Status's shape (code, message, details).
// No proto is linked for it: bring your own google/rpc/status.proto.
//
//   ringrpc::Status s = stub->SayHello(&ctx, req, &resp);
//   google::rpc::Status rich;
//   if (!s.ok() && ringrpc::ExtractErrorDetails(s, &rich).ok()) {
//     for (const google::protobuf::Any& d : rich.details()) ...
//   }
//
// Threading: pure functions.
#ifndef RINGRPC_CLIENT_ERROR_DETAILS_H_
#define RINGRPC_CLIENT_ERROR_DETAILS_H_

#include <string>

#include "ringrpc/client/status.h"

namespace ringrpc {

// Parses from.error_details() into *to. FAILED_PRECONDITION when `to` is
// null, INVALID_ARGUMENT when the bytes do not parse as T; OK otherwise (a
// status without details gives an empty message, as in grpc++).
template <typename T>
Status ExtractErrorDetails(const Status& from, T* to) {
  if (to == nullptr) {
    return Status(StatusCode::FAILED_PRECONDITION, "ExtractErrorDetails: the output is null");
  }
  if (!to->ParseFromString(from.error_details())) {
    return Status(StatusCode::INVALID_ARGUMENT,
                  "ExtractErrorDetails: the status's details do not parse as " +
                      std::string(to->GetTypeName()));
  }
  return Status::OK;
}

// Sets *to to a status with from's code and message, and from serialized as
// its details. A code outside gRPC's 17 becomes UNKNOWN, as in grpc++.
// FAILED_PRECONDITION when `to` is null.
template <typename T>
Status SetErrorDetails(const T& from, Status* to) {
  if (to == nullptr) {
    return Status(StatusCode::FAILED_PRECONDITION, "SetErrorDetails: the output is null");
  }
  StatusCode code = StatusCode::UNKNOWN;
  if (from.code() >= static_cast<int>(StatusCode::OK) &&
      from.code() <= static_cast<int>(StatusCode::UNAUTHENTICATED)) {
    code = static_cast<StatusCode>(from.code());
  }
  *to = Status(code, from.message(), from.SerializeAsString());
  return Status::OK;
}

}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_ERROR_DETAILS_H_
