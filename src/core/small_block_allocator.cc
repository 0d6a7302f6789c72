#include "ordo/small_block_allocator.h"

#include <cstdlib>
#include <new>

#include "core/thread_block_cache.h"

namespace ordo::detail {
namespace {

struct SmallBlocks;
// Per class and thread 32 KiB, enough for the graph of a 100-node step
// (1,024 blocks of 32 bytes, 128 of 256), 256 KiB per thread in all; the
// depot holds what a large step frees beyond that: 512 KiB per class (2,048
// blocks of the largest), 4 MiB in all, once the bound of every thread.
// With 512 KiB per class and thread and no depot, the soak run's threads
// collected 2 MiB of 32-byte blocks (shapes made by the tracing thread and
// freed by another) over its first 10,000 steps.
using Cache = ThreadBlockCache<SmallBlocks, 32, kMaxCachedBytes / 32, 32 * 1024, 512 * 1024>;

}  // namespace

void* allocate_small_block(size_t bytes) {
  if (bytes == 0 || bytes > kMaxCachedBytes) {
    void* block = std::malloc(bytes == 0 ? 1 : bytes);
    if (block == nullptr) throw std::bad_alloc();
    return block;
  }
  const size_t c = Cache::class_of(bytes);
  if (void* block = Cache::take(c)) return block;
  // Every block of a class has the class's full size, so it can serve any
  // request of that class later.
  void* block = std::malloc(Cache::block_bytes(c));
  if (block == nullptr) throw std::bad_alloc();
  return block;
}

void free_small_block(void* block, size_t bytes) noexcept {
  if (block == nullptr) return;
  if (bytes != 0 && bytes <= kMaxCachedBytes && Cache::keep(Cache::class_of(bytes), block)) return;
  std::free(block);
}

}  // namespace ordo::detail
