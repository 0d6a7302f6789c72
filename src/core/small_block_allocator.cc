#include "ordo/small_block_allocator.h"

#include <cstdlib>
#include <new>

#include "core/thread_block_cache.h"

namespace ordo::detail {
namespace {

struct SmallBlocks;
// Per class and thread: enough for the graph of a large step (2048 blocks of
// the largest class), at most 4 MiB in all.
using Cache = ThreadBlockCache<SmallBlocks, 32, kMaxCachedBytes / 32, 512 * 1024>;

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
