#include "executor/compile_cache.h"

#include <pthread.h>

#include "ordo/error.h"
#include "runtime/runtime.h"

namespace ordo::executor {

std::shared_ptr<const ExecutionPlan> CompileCache::find(uint64_t key) {
  std::unique_lock<std::mutex> lock(mu_);
  compiled_.wait(lock, [&] { return compiling_.count(key) == 0; });
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++misses_;
    compiling_.insert(key);
    return nullptr;
  }
  ++hits_;
  recency_.splice(recency_.begin(), recency_, it->second);
  return it->second->second;
}

void CompileCache::insert(uint64_t key, std::shared_ptr<const ExecutionPlan> plan) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    compiling_.erase(key);
    if (index_.count(key) == 0) {
      recency_.emplace_front(key, std::move(plan));
      index_[key] = recency_.begin();
      while (static_cast<int64_t>(recency_.size()) > capacity_) {
        index_.erase(recency_.back().first);
        recency_.pop_back();
      }
    }
  }
  compiled_.notify_all();
}

void CompileCache::abandon(uint64_t key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    compiling_.erase(key);
  }
  compiled_.notify_all();
}

CompileCacheStats CompileCache::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return {hits_, misses_, static_cast<int64_t>(recency_.size()), capacity_};
}

void CompileCache::reset(int64_t capacity) {
  ORDO_ARG_CHECK(capacity >= 1, "reset_compile_cache: capacity must be at least 1, got ", capacity);
  std::lock_guard<std::mutex> lock(mu_);
  capacity_ = capacity;
  hits_ = misses_ = 0;
  recency_.clear();
  index_.clear();
}

CompileCache& compile_cache() {
  static CompileCache* const cache = [] {
    // Held around fork() (runtime/fork.cc): after the runtime's handlers,
    // so that the cache is locked before the buffer pool its evictions free
    // into.
    runtime::register_fork_handlers();
    pthread_atfork([] { compile_cache().lock_for_fork(); }, [] { compile_cache().unlock_after_fork(); },
                   [] { compile_cache().unlock_in_child(); });
    return new CompileCache(1024);  // outlives every worker
  }();
  return *cache;
}

uint64_t cache_key(uint64_t graph_hash, const ScheduleOptions& options) {
  uint64_t key = graph_hash;
  if (options.mode == ScheduleMode::kRandom) {
    key = ir::hash_mix(ir::hash_mix(key, 0x52414E44ull), options.seed);
  }
  if (!options.fuse_elementwise) key = ir::hash_mix(key, 0x4E4F4655ull);
  return key;
}

}  // namespace ordo::executor
