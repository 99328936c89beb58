// ringrpc/client/version.h — which ringrpc this is. CMakeLists.txt's project()
// VERSION and deps.bzl's RINGRPC_VERSION say the same
// (tools/check-version.sh checks it in tools/test.sh).
#ifndef RINGRPC_CLIENT_VERSION_H_
#define RINGRPC_CLIENT_VERSION_H_

#define RINGRPC_VERSION_MAJOR 0
#define RINGRPC_VERSION_MINOR 1
#define RINGRPC_VERSION_PATCH 0
#define RINGRPC_VERSION "0.1.0"

namespace ringrpc {
// RINGRPC_VERSION as the library was built (a program built against one
// header and linked with another library can tell).
const char* Version();
}  // namespace ringrpc

#endif  // RINGRPC_CLIENT_VERSION_H_
