#include "device/buffer_pool.h"

#include <bit>
#include <cstdlib>
#include <new>

#include <sys/mman.h>

#include "core/thread_block_cache.h"

namespace ordo::device {
namespace {

constexpr size_t kAlignment = 64;

struct SmallBuffers;
// Blocks up to 4 KiB are kept per thread: the thread that runs a step
// frees most of what it allocates (the step's intermediates) and, running
// the next step, allocates it again. That is usually one thread: the
// worker's, or its driver's when the driver waits for every step (see
// worker.h). At most 16 KiB per class and thread (16 blocks of 1 KiB, 4 of
// 4 KiB); beyond that a thread's blocks go to the depot, at most 64 KiB per
// class and 4 MiB in all. A result freed by its reader goes to the reader's
// cache, and through the depot back to the thread that makes results.
using SmallBlocks = ThreadBlockCache<SmallBuffers, kAlignment, BufferPool::kMaxThreadCachedBytes / kAlignment,
                                     16 * 1024, 64 * 1024>;

size_t round_up(size_t bytes, size_t multiple) { return (bytes + multiple - 1) / multiple * multiple; }

void* aligned_block(size_t bytes) {
  // Large blocks sit on whole huge pages, which the kernel is asked to back
  // with huge pages: an all_reduce streams four such buffers per thread at
  // once, and with 4 KiB pages their TLB misses cost a fifth of its
  // bandwidth at 64 MiB.
  const bool huge = bytes >= BufferPool::kMinHugePageBytes;
  const size_t alignment = huge ? BufferPool::kHugePageBytes : kAlignment;
  const size_t size = round_up(bytes, alignment);
  void* block = std::aligned_alloc(alignment, size);
  if (block == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (huge) madvise(block, size, MADV_HUGEPAGE);  // only advice: fine if refused
#endif
  return block;
}

}  // namespace

BufferPool::~BufferPool() {
  for (auto& [size, blocks] : free_) {
    for (void* block : blocks) std::free(block);
  }
}

size_t BufferPool::size_class(size_t bytes) {
  if (bytes <= kMaxThreadCachedBytes) return round_up(bytes, kAlignment);
  return round_up(bytes, std::bit_floor(bytes) / 4);
}

void* BufferPool::allocate(size_t bytes) {
  const size_t size = size_class(bytes == 0 ? 1 : bytes);
  if (size <= kMaxThreadCachedBytes) {
    if (void* block = SmallBlocks::take(SmallBlocks::class_of(size))) return block;
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(size);
    if (it != free_.end() && !it->second.empty()) {
      void* block = it->second.back();
      it->second.pop_back();
      cached_ -= size;
      return block;
    }
  }
  return aligned_block(size);
}

void BufferPool::release(void* block, size_t bytes) {
  const size_t size = size_class(bytes == 0 ? 1 : bytes);
  if (size <= kMaxThreadCachedBytes) {
    if (SmallBlocks::keep(SmallBlocks::class_of(size), block)) return;
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_ + size <= max_cached_bytes_) {
      free_[size].push_back(block);
      cached_ += size;
      return;
    }
  }
  std::free(block);
}

size_t BufferPool::cached_bytes() {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

BufferPool& BufferPool::global() {
  // Never destroyed: buffers may be released during static destruction.
  static BufferPool* pool = new BufferPool(size_t{1} << 30);
  return *pool;
}

}  // namespace ordo::device
