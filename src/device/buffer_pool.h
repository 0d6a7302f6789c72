// A cache of large device allocations. Large blocks come from mmap in the C
// library and go back to the kernel when freed, so every new large buffer
// page-faults on first touch; reusing freed blocks of the same size class
// keeps steady-state steps (the same graph, the same sizes) free of that.
//
// Locking: mu_ guards the free lists and the cached byte count.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

namespace ordo::device {

class BufferPool {
 public:
  // Blocks of up to this size are kept by the threads that freed them (see
  // thread_block_cache.h); larger ones are pooled here. Blocks from 4 to 64
  // KiB were once left to the C library, which gives a 64-byte aligned one
  // by cutting it out of a larger chunk: a freed block was then too small
  // to be cut again for the same size, and a loop of 16 KiB buffers on 4
  // devices left 60 MiB free but unusable in its heaps after 100,000 steps.
  static constexpr size_t kMaxThreadCachedBytes = 4096;
  // Blocks of at least this size are aligned to (and padded to whole) huge
  // pages of kHugePageBytes, and advised to be backed by them.
  static constexpr size_t kMinHugePageBytes = size_t{4} << 20;
  static constexpr size_t kHugePageBytes = size_t{2} << 20;

  explicit BufferPool(size_t max_cached_bytes) : max_cached_bytes_(max_cached_bytes) {}
  ~BufferPool();  // frees the cached blocks
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  // 64-byte aligned, at least bytes long; throws std::bad_alloc.
  void* allocate(size_t bytes);
  // bytes is what allocate was asked for.
  void release(void* block, size_t bytes);
  size_t cached_bytes();
  // Held around fork() (runtime/fork.cc): a child finds the pool whole.
  void lock_for_fork() { mu_.lock(); }
  void unlock_after_fork() { mu_.unlock(); }

  static BufferPool& global();

 private:
  // Size classes: up to kMaxThreadCachedBytes whole 64-byte lines, above it
  // four per power of two, so that a block wastes at most 25% and a program
  // of many sizes pools few classes.
  static size_t size_class(size_t bytes);

  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0;
  const size_t max_cached_bytes_;
};

}  // namespace ordo::device
