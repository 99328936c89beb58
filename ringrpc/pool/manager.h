// ringrpc/pool/manager.h — what a pool needs from the thing that makes its
// connections: the PoolManager concept and the optional abilities the pool
// uses when a manager has them.
//
// A manager is the pool's only link to the outside world (sockets, HTTP/2):
// it dials, closes, and optionally checks, sizes and moves connections. The
// pool asks for each optional method with a concept (HasSyncRecycle, ...)
// and compiles the code for it only when the manager has it.
//
// Threading: one manager serves every thread of a pool, so its methods may
// run concurrently on different threads (each call on the thread that will
// own the connection).
#ifndef RINGRPC_POOL_MANAGER_H_
#define RINGRPC_POOL_MANAGER_H_

#include <concepts>
#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ringrpc/base/task.h"

namespace ringrpc::pool {

// What a pool needs from the thing that makes its connections. One manager
// serves every thread of the pool, so its methods may run concurrently on
// different threads (each call on the thread that will own the connection).
//
//   struct Manager {
//     using Connection = ...;                             // movable
//     Task<absl::StatusOr<Connection>> Connect();
//     void Disconnect(Connection&&);
//     // optional: checked when an idle connection is checked out; either
//     absl::Status Recycle(Connection&);                  // or
//     Task<absl::Status> Recycle(Connection&);
//     // optional: leases the connection can carry (HTTP/2: the peer's
//     // MAX_CONCURRENT_STREAMS), capped by max_leases_per_connection
//     uint32_t Capacity(const Connection&);
//     // optional, needed by an Exchange: move a connection between threads
//     using Detached = ...;        // its destructor closes it
//     absl::StatusOr<Detached> Detach(Connection&&);   // fails if I/O in flight
//     Task<absl::StatusOr<Connection>> Attach(Detached&&);
//     // optional: whether an idle connection can be detached now
//     bool Parkable(Connection&);
//     // optional: the reaper's nudge to an idle connection that is not
//     // parkable yet, to become so by its next tick
//     void Quiesce(Connection&);
//   };
template <typename M>
concept PoolManager = requires(M& m, typename M::Connection&& c) {
  { m.Connect() } -> std::same_as<Task<absl::StatusOr<typename M::Connection>>>;
  m.Disconnect(std::move(c));
};

template <typename M>
concept HasSyncRecycle = requires(M& m, typename M::Connection& c) {
  { m.Recycle(c) } -> std::same_as<absl::Status>;
};
template <typename M>
concept HasAsyncRecycle = requires(M& m, typename M::Connection& c) {
  { m.Recycle(c) } -> std::same_as<Task<absl::Status>>;
};
template <typename M>
concept HasCapacity = requires(M& m, const typename M::Connection& c) {
  { m.Capacity(c) } -> std::convertible_to<uint32_t>;
};
template <typename M>
concept CanDetach = requires(M& m, typename M::Connection&& c, typename M::Detached&& d) {
  { m.Detach(std::move(c)) } -> std::same_as<absl::StatusOr<typename M::Detached>>;
  { m.Attach(std::move(d)) } -> std::same_as<Task<absl::StatusOr<typename M::Connection>>>;
};

template <typename M>
concept HasParkable = requires(M& m, typename M::Connection& c) {
  { m.Parkable(c) } -> std::convertible_to<bool>;
};
template <typename M>
concept HasQuiesce = requires(M& m, typename M::Connection& c) {
  m.Quiesce(c);
};

// Stand-in Detached type for managers that cannot detach; such a pool has no
// exchange.
struct NoDetach {};
template <typename M>
struct DetachedOf {
  using type = NoDetach;
};
template <typename M>
requires CanDetach<M>
struct DetachedOf<M> {
  using type = typename M::Detached;
};

}  // namespace ringrpc::pool

#endif  // RINGRPC_POOL_MANAGER_H_
