// examples/common/embedded_server.h — what every example does first: use
// --target=host:port if given, else start `service` on a free loopback port
// in this process (grpc++'s server; ringrpc is a client).
#ifndef RINGRPC_EXAMPLES_COMMON_EMBEDDED_SERVER_H_
#define RINGRPC_EXAMPLES_COMMON_EMBEDDED_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

namespace examples {

// Sets *target to the server to call. Returns the embedded server (null when
// --target was given); on failure to start one, *target stays empty.
inline std::unique_ptr<grpc::Server> ServerFromArgs(int argc, char** argv, grpc::Service* service,
                                                    std::string* target) {
  target->clear();
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--target=", 9) == 0) *target = argv[i] + 9;
  }
  if (!target->empty()) return nullptr;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::fprintf(stderr, "could not start the embedded server\n");
    return nullptr;
  }
  *target = "127.0.0.1:" + std::to_string(port);
  std::printf("embedded grpc++ server on %s\n", target->c_str());
  return server;
}

}  // namespace examples

#endif  // RINGRPC_EXAMPLES_COMMON_EMBEDDED_SERVER_H_
