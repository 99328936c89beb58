// tests/testing/loopback.h — a listening TCP socket on 127.0.0.1 with a
// port the kernel picks: what every test server and benchmark peer starts
// from. Test-only.
#ifndef RINGRPC_TESTS_TESTING_LOOPBACK_H_
#define RINGRPC_TESTS_TESTING_LOOPBACK_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace ringrpc::testing {

// The listening fd (blocking, close-on-exec); its address in *addr.
inline int ListenLoopback(int backlog, sockaddr_in* addr) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::listen(fd, backlog);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *addr = a;
  return fd;
}

// A socket of `type` (SOCK_STREAM, SOCK_DGRAM) bound to 127.0.0.1 on a
// port the kernel picks (close-on-exec): the fd, and the port in *port.
inline int BindLoopback(int type, int* port) {
  int fd = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

// A port with nothing listening on it (bound, then released) for `type`:
// a dial to a TCP one is refused.
inline int UnusedLoopbackPort(int type = SOCK_STREAM) {
  int port = 0;
  ::close(BindLoopback(type, &port));
  return port;
}

}  // namespace ringrpc::testing

#endif  // RINGRPC_TESTS_TESTING_LOOPBACK_H_
