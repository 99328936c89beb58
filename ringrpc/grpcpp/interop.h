// ringrpc/grpcpp/interop.h — ringrpc inside a grpc++ server: a mid-tier
// service whose handlers call backends through ringrpc. Optional: this
// header and its library (Bazel @ringrpc//ringrpc/grpcpp:interop, CMake
// ringrpc::grpcpp) link grpc++; the rest of ringrpc does not.
//
//   grpc::Status Frontend::Get(grpc::ServerContext* server_ctx,
//                              const GetRequest* req, GetReply* reply) {
//     std::unique_ptr<ringrpc::ClientContext> ctx =
//         ringrpc::ClientContext::FromServerContext(*server_ctx);
//     ringrpc::Status s = backend_->Get(ctx.get(), *req, reply);
//     return ringrpc::ToGrpcStatus(s);
//   }
//
// The backend call gets the server call's deadline and is cancelled when
// the server call is (ringrpc/client/client_context.h, FromServerContext).
//
// Threading: any thread.
#ifndef RINGRPC_GRPCPP_INTEROP_H_
#define RINGRPC_GRPCPP_INTEROP_H_

#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include "ringrpc/client/client_context.h"
#include "ringrpc/client/status.h"

namespace ringrpc {

// The same code, message and error details (grpc-status-details-bin) in
// grpc++'s type, and back. The codes are gRPC's in both.
grpc::Status ToGrpcStatus(const Status& status);
Status FromGrpcStatus(const grpc::Status& status);

}  // namespace ringrpc

#endif  // RINGRPC_GRPCPP_INTEROP_H_
