// ringrpc/base/fork.h — which side of a fork() this process is on, and a place for
// what a child must abandon of its parent.
//
// After fork() the child has one thread, a copy of the caller. The parent's
// other threads do not exist there, yet their objects do (copied), and its
// rings and sockets are shared with the parent. So an object that owns a
// thread, a ring or a connection records ForkGeneration() when it is made;
// in a process whose generation differs it belongs to the parent: the child
// never joins its thread (there is none to join), never touches its ring,
// never sends on its socket. What it cannot free safely it abandons: kept
// reachable and never destroyed (a std::thread object destroyed while
// joinable would terminate the process).
//
// Threading: any thread.
//
//   const uint64_t made_in = ForkGeneration();
//   ...
//   if (ForkGeneration() != made_in) AbandonForever(std::move(thread));
#ifndef RINGRPC_BASE_FORK_H_
#define RINGRPC_BASE_FORK_H_

#include <cstdint>
#include <memory>

namespace ringrpc {

// 0 in a process that was not forked from one that used ringrpc; one more
// in each child (a pthread_atfork child handler).
uint64_t ForkGeneration();

// Keeps `p` alive and reachable for the rest of the process, never
// destroyed. Lock-free (safe in an atfork child handler).
void AbandonForeverRaw(void* p);
template <typename T>
void AbandonForever(std::unique_ptr<T> p) {
  AbandonForeverRaw(p.release());
}

}  // namespace ringrpc

#endif  // RINGRPC_BASE_FORK_H_
