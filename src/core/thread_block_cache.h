// A per-thread cache of freed memory blocks, by size class. A training loop
// allocates and frees the same small blocks every step (IR nodes when it
// traces, buffers when it runs); the C library's per-thread cache holds only
// seven blocks of a size, and beyond that its shared path costs far more
// (a request of 1 KiB or more first consolidates every small free chunk).
//
// Blocks come from the C library (malloc or aligned_alloc) and go back to it
// with free when a class is full or the thread exits. The cache is
// trivially destructible, so it stays usable while the thread's other
// thread_local objects (some of which hold blocks) are destroyed; a closer
// gives the blocks back and closes it. Off under AddressSanitizer, which
// must see every block freed to catch a use after free.
#pragma once

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace ordo {

#if defined(__SANITIZE_ADDRESS__)
#define ORDO_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ORDO_ASAN 1
#endif
#endif
#ifdef ORDO_ASAN
inline constexpr bool kCacheFreedBlocks = false;
#else
inline constexpr bool kCacheFreedBlocks = true;
#endif

// Class c holds blocks of (c + 1) * kGranule bytes, at most kMaxBytesPerClass
// of them per thread (so at most kClasses * kMaxBytesPerClass in all). Tag
// makes each use its own cache. The cache neither allocates nor aligns: a
// block comes back as the caller kept it, so callers keep blocks of one
// alignment and of their class's full size.
template <typename Tag, size_t kGranule, size_t kClasses, size_t kMaxBytesPerClass>
class ThreadBlockCache {
 public:
  static constexpr size_t kMaxBytes = kGranule * kClasses;
  // The class of a request of 1..kMaxBytes bytes, and its blocks' size.
  static constexpr size_t class_of(size_t bytes) { return (bytes + kGranule - 1) / kGranule - 1; }
  static constexpr size_t block_bytes(size_t c) { return (c + 1) * kGranule; }

  // A cached block of class c, or nullptr.
  static void* take(size_t c) {
    assert(c < kClasses);
    FreeBlock* block = t_cache.heads[c];
    if (block == nullptr) return nullptr;
    t_cache.heads[c] = block->next;
    --t_cache.counts[c];
    return block;
  }
  // Keeps a block of class c for this thread; false when the caller must
  // free it.
  static bool keep(size_t c, void* block) {
    assert(c < kClasses);
    const bool full = (t_cache.counts[c] + 1) * block_bytes(c) > kMaxBytesPerClass;
    if (!kCacheFreedBlocks || t_cache.closed || full) return false;
    if (!t_cache.closer_armed) t_closer.arm();  // registers its destructor
    t_cache.heads[c] = new (block) FreeBlock{t_cache.heads[c]};
    ++t_cache.counts[c];
    return true;
  }

 private:
  struct FreeBlock {
    FreeBlock* next;
  };
  static_assert(kGranule >= sizeof(FreeBlock) && kGranule % alignof(FreeBlock) == 0,
                "a free block holds its link");
  struct Cache {
    std::array<FreeBlock*, kClasses> heads;
    std::array<size_t, kClasses> counts;
    bool closer_armed;
    bool closed;
  };
  struct Closer {
    void arm() { t_cache.closer_armed = true; }
    ~Closer() {
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

  static thread_local Cache t_cache;
  static thread_local Closer t_closer;
};

template <typename Tag, size_t G, size_t C, size_t M>
thread_local typename ThreadBlockCache<Tag, G, C, M>::Cache ThreadBlockCache<Tag, G, C, M>::t_cache{};
template <typename Tag, size_t G, size_t C, size_t M>
thread_local typename ThreadBlockCache<Tag, G, C, M>::Closer ThreadBlockCache<Tag, G, C, M>::t_closer;

}  // namespace ordo
