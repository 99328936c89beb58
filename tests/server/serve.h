// tests/server/serve.h — the life of a grpc++ server process that a test or
// benchmark starts as a child (tests/testing/server_process.h): listen,
// print "LISTENING <port>", serve until SIGTERM, then shut down gracefully.
#ifndef RINGRPC_TESTS_SERVER_SERVE_H_
#define RINGRPC_TESTS_SERVER_SERVE_H_

#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace ringrpc::testing {

// Blocks SIGTERM first: `credentials()` (called after) starts grpc's
// threads, and they must inherit the mask, or a SIGTERM delivered to one of
// them kills the process instead of shutting it down. `setup` registers the
// services; `started` sees the server before it is announced. Returns the
// process's exit status.
inline int ServeUntilSigterm(
    const char* name, const std::string& listen,
    const std::function<std::shared_ptr<grpc::ServerCredentials>()>& credentials,
    const std::function<void(grpc::ServerBuilder&)>& setup,
    const std::function<void(grpc::Server&)>& started = nullptr) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, credentials(), &port);
  setup(builder);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::fprintf(stderr, "%s: cannot listen on %s\n", name, listen.c_str());
    return 1;
  }
  if (started) started(*server);
  std::printf("LISTENING %d\n", port);
  std::fflush(stdout);
  std::thread terminator([&] {
    int sig = 0;
    sigwait(&set, &sig);
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  });
  server->Wait();
  terminator.join();
  return 0;
}

}  // namespace ringrpc::testing

#endif  // RINGRPC_TESTS_SERVER_SERVE_H_
