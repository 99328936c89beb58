// ringrpc's header first, grpc's after (see grpc_types_test.cc): grpc's
// definitions of the same names are then skipped or identical.
#include <grpc/compression.h>
#include <grpc/grpc.h>
#include <grpcpp/grpcpp.h>

#include <string>

#include "ringrpc/ringrpc.h"

int ReadyAfter() {
  grpc_connectivity_state s = GRPC_CHANNEL_READY;
  ringrpc::ConnectivityState same = s;
  return same;
}
int GzipAfter() { return GRPC_COMPRESS_GZIP; }
std::string KeepaliveKeyAfter() { return GRPC_ARG_KEEPALIVE_TIME_MS; }
std::string TargetNameKeyAfter() { return GRPC_SSL_TARGET_NAME_OVERRIDE_ARG; }
int LocalTcpAfter() {
  grpc_local_connect_type t = LOCAL_TCP;
  return ringrpc::experimental::LocalCredentials(t)->local_connect_type().value_or(UDS);
}
