#include "pool/thread_context.h"

namespace ringrpc::pool {

ThreadContext::~ThreadContext() {
  cached_id_ = 0;
  cached_shard_ = nullptr;
  while (!shards_.empty()) {
    // Pop first so a shard's destructor never sees itself in the map.
    std::unique_ptr<ShardBase> shard = std::move(shards_.back().second);
    shards_.pop_back();
    shard.reset();
  }
  if (tls_current_ == this) tls_current_ = nullptr;
}

ThreadContext& ThreadContext::Implicit() {
  thread_local ThreadContext implicit_context;
  tls_current_ = &implicit_context;
  return implicit_context;
}

ShardBase* ThreadContext::AddShard(uint64_t pool_id,
                                   std::unique_ptr<ShardBase> shard) {
  shards_.emplace_back(pool_id, std::move(shard));
  cached_id_ = pool_id;
  cached_shard_ = shards_.back().second.get();
  return cached_shard_;
}

ThreadContext::Scope::Scope(ThreadContext* ctx) : previous_(tls_current_) {
  tls_current_ = ctx;
}

ThreadContext::Scope::~Scope() { tls_current_ = previous_; }

}  // namespace ringrpc::pool
