// ringrpc/client/runtime/inbox.h — the lock-free multi-producer, single-consumer
// queue through which other threads hand work to a completion-queue thread.
//
// Push is a CAS onto an intrusive stack; it reports whether the inbox was
// empty, so the producer wakes the loop only on the empty -> non-empty
// transition (one wake-up per batch, not per item). The consumer takes the
// whole stack with one exchange and reverses it, so items run in push
// order.
//
// Threading: Push from any thread; TakeAll from the owning loop only.
// One allocation per item (its node): a function of up to two pointers
// (a loop and a Task, say) is held in place, movable-only ones too.
//
//   if (inbox.Push(std::move(fn))) WakeLoop();   // was empty
//   for (auto& fn : inbox.TakeAll()) fn();       // on the loop
#ifndef RINGRPC_CLIENT_RUNTIME_INBOX_H_
#define RINGRPC_CLIENT_RUNTIME_INBOX_H_

#include <atomic>
#include <utility>

#include "absl/functional/any_invocable.h"

namespace ringrpc::runtime {

class Inbox {
 public:
  using Fn = absl::AnyInvocable<void()>;

 private:
  struct Node {
    Fn fn;
    Node* next;
  };

 public:
  // What TakeAll took, oldest first: iterate it (the functions may be run
  // or dropped in place); its nodes are freed with it.
  class Batch {
   public:
    class iterator {
     public:
      explicit iterator(Node* n) : n_(n) {}
      Fn& operator*() const { return n_->fn; }
      iterator& operator++() {
        n_ = n_->next;
        return *this;
      }
      bool operator!=(const iterator& o) const { return n_ != o.n_; }

     private:
      Node* n_;
    };
    explicit Batch(Node* oldest) : oldest_(oldest) {}
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;
    ~Batch() {
      while (oldest_ != nullptr) delete std::exchange(oldest_, oldest_->next);
    }
    iterator begin() const { return iterator(oldest_); }
    iterator end() const { return iterator(nullptr); }

   private:
    Node* oldest_;
  };

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
  Batch TakeAll() {
    Node* n = head_.exchange(nullptr, std::memory_order_acquire);
    Node* oldest = nullptr;  // the stack reversed in place
    while (n != nullptr) {
      Node* next = n->next;
      n->next = oldest;
      oldest = n;
      n = next;
    }
    return Batch(oldest);
  }

  bool empty() const { return head_.load(std::memory_order_acquire) == nullptr; }

 private:
  std::atomic<Node*> head_{nullptr};
};

}  // namespace ringrpc::runtime

#endif  // RINGRPC_CLIENT_RUNTIME_INBOX_H_
