#include "ringrpc/pool/thread_context.h"

namespace ringrpc::pool {

ThreadContext::~ThreadContext() {
  dying_ = true;
  if (sweep_timer_ != 0 && runtime_ != nullptr) runtime_->CancelTimer(sweep_timer_);
  sweep_timer_ = 0;
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

ShardBase* ThreadContext::AddShard(uint64_t pool_id, std::unique_ptr<ShardBase> shard) {
  shards_.emplace_back(pool_id, std::move(shard));
  cached_id_ = pool_id;
  cached_shard_ = shards_.back().second.get();
  return cached_shard_;
}

void ThreadContext::RequestSweep() {
  if (dying_ || sweep_timer_ != 0 || runtime_ == nullptr) return;
  sweep_timer_ = runtime_->ScheduleTimer(runtime_->Now(), this);
}

void ThreadContext::OnTimer() {
  sweep_timer_ = 0;
  // Out of the map first, destroyed after: a shard's destructor may end its
  // pool, whose manager may close another pool here (a new RequestSweep is
  // fine) but must never see a half-erased map.
  std::vector<std::unique_ptr<ShardBase>> finished;
  std::erase_if(shards_, [&](auto& entry) {
    if (!entry.second->Finished()) return false;
    if (cached_shard_ == entry.second.get()) {
      cached_id_ = 0;
      cached_shard_ = nullptr;
    }
    finished.push_back(std::move(entry.second));
    return true;
  });
  finished.clear();
}

ThreadContext::Scope::Scope(ThreadContext* ctx) : previous_(tls_current_) { tls_current_ = ctx; }

ThreadContext::Scope::~Scope() { tls_current_ = previous_; }

}  // namespace ringrpc::pool
