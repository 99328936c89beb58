// ringrpc/base/socket_mutator.h — a program's hook on every
// socket a channel dials, before it connects (grpc++'s grpc.socket_mutator):
// socket options such as SO_MARK, IP_TOS (DSCP), SO_KEEPALIVE or buffer
// sizes, a bind() to a local address or SO_BINDTODEVICE. Set with
// ChannelArguments::SetSocketMutator.
//
// Threading: Mutate runs on the CQ thread that dials, once per new socket,
// possibly on several CQ threads at once (one mutator serves the whole
// channel): keep it short and thread-safe.
//
//   class MarkSockets final : public ringrpc::SocketMutator {
//     bool Mutate(const ringrpc::SocketInfo& s) override {
//       int mark = 42;
//       return setsockopt(s.fd, SOL_SOCKET, SO_MARK, &mark, sizeof mark) == 0;
//     }
//   };
//   args.SetSocketMutator(std::make_shared<MarkSockets>());
#ifndef RINGRPC_BASE_SOCKET_MUTATOR_H_
#define RINGRPC_BASE_SOCKET_MUTATOR_H_

#include <string_view>

namespace ringrpc {

struct SocketInfo {
  // The new socket: non-blocking, TCP_NODELAY (TCP) and TCP_USER_TIMEOUT
  // (when set) already applied, not yet connected. The channel owns it:
  // do not close it.
  int fd = -1;
  int family = 0;  // AF_INET, AF_INET6 or AF_UNIX
  // What it connects to, as text ("127.0.0.1:50051", "[::1]:443",
  // "unix:/run/app.sock"): the HTTP proxy's address when the channel
  // reaches its target through one.
  std::string_view address;
};

class SocketMutator {
 public:
  virtual ~SocketMutator() = default;
  // False: the dial fails UNAVAILABLE ("the channel's socket mutator
  // refused the socket for ..."), as a failed connect does: the address
  // backs off, a call may try another.
  virtual bool Mutate(const SocketInfo& socket) = 0;
};

}  // namespace ringrpc

#endif  // RINGRPC_BASE_SOCKET_MUTATOR_H_
