// client/runtime/inbox.h — the lock-free multi-producer, single-consumer
// queue through which other threads hand work to a completion-queue thread.
//
// Push is a CAS onto an intrusive stack; it reports whether the inbox was
// empty, so the producer wakes the loop only on the empty -> non-empty
// transition (one wake-up per batch, not per item). The consumer takes the
// whole stack with one exchange and reverses it, so items run in push
// order.
//
// Threading: Push from any thread; TakeAll from the owning loop only.
//
//   if (inbox.Push(std::move(fn))) WakeLoop();   // was empty
//   for (auto& fn : inbox.TakeAll()) fn();       // on the loop
#ifndef RINGRPC_CLIENT_RUNTIME_INBOX_H_
#define RINGRPC_CLIENT_RUNTIME_INBOX_H_

#include <algorithm>
#include <atomic>
#include <functional>
#include <utility>
#include <vector>

namespace ringrpc::runtime {

class Inbox {
 public:
  using Fn = std::function<void()>;

  Inbox() = default;
  Inbox(const Inbox&) = delete;
  Inbox& operator=(const Inbox&) = delete;
  ~Inbox() {
    Node* n = head_.exchange(nullptr, std::memory_order_acquire);
    while (n != nullptr) delete std::exchange(n, n->next);
  }

  // Returns true if the inbox was empty: the caller must wake the consumer.
  bool Push(Fn fn) {
    Node* node = new Node{std::move(fn), nullptr};
    Node* head = head_.load(std::memory_order_relaxed);
    do {
      node->next = head;
    } while (!head_.compare_exchange_weak(head, node, std::memory_order_release,
                                          std::memory_order_relaxed));
    // `head` is the value replaced. Never read `node` here: once published,
    // the consumer may already have run and freed it.
    return head == nullptr;
  }

  // Everything pushed so far, oldest first. Producers that push after this
  // see an empty inbox and wake the consumer again.
  std::vector<Fn> TakeAll() {
    Node* n = head_.exchange(nullptr, std::memory_order_acquire);
    std::vector<Fn> out;
    while (n != nullptr) {
      out.push_back(std::move(n->fn));
      delete std::exchange(n, n->next);
    }
    std::reverse(out.begin(), out.end());
    return out;
  }

  bool empty() const { return head_.load(std::memory_order_acquire) == nullptr; }

 private:
  struct Node {
    Fn fn;
    Node* next;
  };
  std::atomic<Node*> head_{nullptr};
};

}  // namespace ringrpc::runtime

#endif  // RINGRPC_CLIENT_RUNTIME_INBOX_H_
