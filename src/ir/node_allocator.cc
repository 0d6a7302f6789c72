#include "ir/node_allocator.h"

#include <array>
#include <cstdlib>

namespace ordo::ir {
namespace {

constexpr size_t kGranule = 32;
constexpr size_t kClasses = kMaxCachedBytes / kGranule;
// Per class and thread: enough for the graph of a large step; at most
// ~2.3 MiB of blocks per thread over all classes.
constexpr size_t kMaxCachedBlocks = 2048;

size_t class_of(size_t bytes) { return (bytes + kGranule - 1) / kGranule - 1; }

struct FreeBlock {
  FreeBlock* next;
};

// The freed blocks of one thread. Trivially destructible, so it is usable
// while the thread's other thread_local objects are destroyed (some hold
// nodes); CacheCloser gives the blocks back and closes it.
struct ThreadCache {
  std::array<FreeBlock*, kClasses> heads;
  std::array<size_t, kClasses> counts;
  bool closer_armed;
  bool closed;
};

thread_local ThreadCache t_cache{};

struct CacheCloser {
  void arm() { t_cache.closer_armed = true; }
  ~CacheCloser() {
    t_cache.closed = true;
    for (FreeBlock*& head : t_cache.heads) {
      while (head != nullptr) {
        FreeBlock* next = head->next;
        std::free(head);
        head = next;
      }
    }
  }
};

thread_local CacheCloser t_closer;

// AddressSanitizer must see every node freed, to catch a use after free.
#if defined(__SANITIZE_ADDRESS__)
#define ORDO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ORDO_ASAN 1
#endif
#endif
#ifdef ORDO_ASAN
constexpr bool kCaching = false;
#else
constexpr bool kCaching = true;
#endif

void* take(size_t c) {
  FreeBlock* block = t_cache.heads[c];
  if (block == nullptr) return nullptr;
  t_cache.heads[c] = block->next;
  --t_cache.counts[c];
  return block;
}

bool keep(size_t c, void* memory) {
  if (!kCaching || t_cache.closed || t_cache.counts[c] >= kMaxCachedBlocks) return false;
  if (!t_cache.closer_armed) t_closer.arm();  // registers its destructor
  t_cache.heads[c] = new (memory) FreeBlock{t_cache.heads[c]};
  ++t_cache.counts[c];
  return true;
}

}  // namespace

void* allocate_node_block(size_t bytes) {
  if (bytes == 0 || bytes > kMaxCachedBytes) {
    void* block = std::malloc(bytes == 0 ? 1 : bytes);
    if (block == nullptr) throw std::bad_alloc();
    return block;
  }
  const size_t c = class_of(bytes);
  if (void* block = take(c)) return block;
  // Every block of a class has the class's full size, so it can serve any
  // request of that class later.
  void* block = std::malloc((c + 1) * kGranule);
  if (block == nullptr) throw std::bad_alloc();
  return block;
}

void free_node_block(void* block, size_t bytes) noexcept {
  if (block == nullptr) return;
  if (bytes != 0 && bytes <= kMaxCachedBytes && keep(class_of(bytes), block)) return;
  std::free(block);
}

}  // namespace ordo::ir
