// The compile cache: plans by (graph hash, schedule), least recently used
// evicted first, with hit and miss counts. One thread compiles a graph at
// a time: devices that reach the same graph together wait for its plan, so
// each graph is compiled, and counted as a miss, once.
//
// Locking: mu_ guards everything; compiling happens outside it. Evicting
// a plan frees its buffers into the buffer pool (device::BufferPool's
// mutex) under mu_.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "executor/plan.h"

namespace ordo::executor {

class CompileCache {
 public:
  explicit CompileCache(int64_t capacity) : capacity_(capacity) {}

  // The cached plan (a hit), after waiting for another thread that is
  // compiling key; or null, counted as a miss: the caller compiles key and
  // then insert()s the plan, or abandon()s key if the compile failed.
  std::shared_ptr<const ExecutionPlan> find(uint64_t key);
  void insert(uint64_t key, std::shared_ptr<const ExecutionPlan> plan);
  // The next thread waiting for key compiles it instead.
  void abandon(uint64_t key);
  CompileCacheStats stats();
  void reset(int64_t capacity);
  // Held around fork() (registered by compile_cache(); see runtime/fork.cc):
  // a child finds the cache whole.
  void lock_for_fork() { mu_.lock(); }
  void unlock_after_fork() { mu_.unlock(); }
  // In a child, no other thread is left to finish a compile.
  void unlock_in_child() {
    compiling_.clear();
    mu_.unlock();
  }

 private:
  using Entry = std::pair<uint64_t, std::shared_ptr<const ExecutionPlan>>;
  std::mutex mu_;
  std::condition_variable compiled_;
  std::unordered_set<uint64_t> compiling_;  // keys a thread is compiling
  int64_t capacity_;
  int64_t hits_ = 0;
  int64_t misses_ = 0;
  std::list<Entry> recency_;  // most recently used first
  std::unordered_map<uint64_t, std::list<Entry>::iterator> index_;
};

// The process-wide cache shared by every device.
CompileCache& compile_cache();

uint64_t cache_key(uint64_t graph_hash, const ScheduleOptions& options);

}  // namespace ordo::executor
