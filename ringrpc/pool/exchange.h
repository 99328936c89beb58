// ringrpc/pool/exchange.h — how idle connections move between the threads of one
// pool: the Exchange interface and the connection record that travels.
//
// A shard over min_idle with no local waiter offers an idle connection:
// TryAdmit() claims room first, *then* the manager detaches the connection
// from its thread, *then* Push() stores it and cannot fail (the claim made
// room). A shard that needs a connection and has budget calls Pop() before
// dialling and attaches what it gets to its own thread. See decision 0003.
//
// Threading: every method may be called from any thread, concurrently.
//
//   if (exchange.TryAdmit()) {
//     auto d = manager.Detach(std::move(conn));
//     if (d.ok()) exchange.Push({std::move(*d), meta, now});
//     else exchange.CancelAdmit();
//   }
#ifndef RINGRPC_POOL_EXCHANGE_H_
#define RINGRPC_POOL_EXCHANGE_H_

#include <cstddef>
#include <optional>

#include "ringrpc/base/time.h"
#include "ringrpc/pool/retire.h"

namespace ringrpc::pool {

// A detached connection and what the pool knows about it.
template <typename D>
struct Parked {
  D detached;
  SlotMeta meta;
  TimePoint parked_at{};
};

template <typename D>
class Exchange {
 public:
  virtual ~Exchange() = default;

  // Claims room for one connection; false when full. Call before detaching.
  [[nodiscard]] virtual bool TryAdmit() = 0;
  // Gives back a claim whose detach failed.
  virtual void CancelAdmit() = 0;
  // Stores an admitted connection. Never fails (the claim made room).
  virtual void Push(Parked<D> parked) = 0;
  // The oldest parked connection (FIFO), releasing its claim; nullopt if none.
  virtual std::optional<Parked<D>> Pop() = 0;
  // Drops every parked connection (its destructor closes it); returns how
  // many.
  virtual size_t Clear() = 0;

  virtual size_t capacity() const = 0;
  // Claims outstanding: parked connections plus admitted, not yet pushed.
  virtual size_t admitted() const = 0;
  // Connections parked now.
  virtual size_t parked() const = 0;
};

}  // namespace ringrpc::pool

#endif  // RINGRPC_POOL_EXCHANGE_H_
