#include "pool/runtime.h"

namespace ringrpc::pool {
namespace {
thread_local ThreadContext* current_context = nullptr;
}  // namespace

ThreadContext::~ThreadContext() {
  cached_id_ = 0;
  cached_shard_ = nullptr;
  while (!shards_.empty()) {
    // Pop first so a shard's destructor never sees itself in the map.
    std::unique_ptr<ShardBase> shard = std::move(shards_.back().second);
    shards_.pop_back();
    shard.reset();
  }
}

ThreadContext& ThreadContext::Current() {
  if (current_context != nullptr) return *current_context;
  thread_local ThreadContext implicit_context;
  return implicit_context;
}

ShardBase* ThreadContext::AddShard(uint64_t pool_id,
                                   std::unique_ptr<ShardBase> shard) {
  shards_.emplace_back(pool_id, std::move(shard));
  cached_id_ = pool_id;
  cached_shard_ = shards_.back().second.get();
  return cached_shard_;
}

ThreadContext::Scope::Scope(ThreadContext* ctx) : previous_(current_context) {
  current_context = ctx;
}

ThreadContext::Scope::~Scope() { current_context = previous_; }

}  // namespace ringrpc::pool
