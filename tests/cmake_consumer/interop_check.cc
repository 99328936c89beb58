// The installed ringrpc::grpcpp library (ringrpc/grpcpp/interop.h) as a
// mid-tier service's build finds it: the grpc::Status conversions keep code,
// message and details, and a context made from a grpc++ server context
// (default-constructed here: no deadline, not cancelled) has no deadline.
// The behaviour under real servers is tests/midtier's; this checks the
// package. Exits 1 on a mismatch.
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <memory>

#include "ringrpc/grpcpp/interop.h"

int main() {
  const ringrpc::Status r(ringrpc::StatusCode::NOT_FOUND, "gone", "details");
  const grpc::Status g = ringrpc::ToGrpcStatus(r);
  const ringrpc::Status back = ringrpc::FromGrpcStatus(g);
  grpc::ServerContext server_ctx;
  std::unique_ptr<ringrpc::ClientContext> ctx =
      ringrpc::ClientContext::FromServerContext(server_ctx);
  const bool ok = g.error_code() == grpc::StatusCode::NOT_FOUND && g.error_message() == "gone" &&
                  g.error_details() == "details" && back.error_code() == r.error_code() &&
                  back.error_details() == "details" && !ctx->deadline().has_value();
  std::printf("interop_check: %s\n", ok ? "ok" : "MISMATCH");
  return ok ? 0 : 1;
}
