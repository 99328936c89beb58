#include "ringrpc/base/fork.h"

#include <pthread.h>

#include <atomic>

namespace ringrpc {
namespace {

std::atomic<uint64_t> generation{0};

void OnChild() { generation.fetch_add(1, std::memory_order_relaxed); }

// Registered before main (so before any ringrpc thread exists), and first:
// child handlers run in the order they were registered, so every later one
// sees the new generation.
const bool registered = [] {
  pthread_atfork(nullptr, nullptr, &OnChild);
  return true;
}();

// A push-only list, never freed: what it holds stays reachable.
struct Abandoned {
  void* p;
  Abandoned* next;
};
std::atomic<Abandoned*> abandoned{nullptr};

}  // namespace

uint64_t ForkGeneration() {
  (void)registered;
  return generation.load(std::memory_order_relaxed);
}

void AbandonForeverRaw(void* p) {
  if (p == nullptr) return;
  auto* node = new Abandoned{p, abandoned.load(std::memory_order_relaxed)};
  while (!abandoned.compare_exchange_weak(node->next, node, std::memory_order_release,
                                          std::memory_order_relaxed)) {
  }
}

}  // namespace ringrpc
