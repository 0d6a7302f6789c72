// The allocator of ordo's small, short-lived objects: shapes, IR nodes with
// their operand, output and attribute lists, and lazy tensors. A step of a
// training loop builds the same few hundred small blocks every time and
// frees them all by the graph cut. The C library keeps only seven freed
// blocks of a size per thread, and beyond that its shared path cost most
// of a cache-hit mark_step; so each thread keeps the blocks it freed for
// its next step, and hands what it cannot keep to a depot shared by all
// threads (both bounded; see src/core/small_block_allocator.cc).
#pragma once

#include <cstddef>

namespace ordo {

namespace detail {

// Blocks of up to kMaxCachedBytes come from and go to the calling thread's
// cache, larger ones straight from the C library. A block may be freed on
// any thread.
void* allocate_small_block(size_t bytes);
void free_small_block(void* block, size_t bytes) noexcept;

inline constexpr size_t kMaxCachedBytes = 256;

}  // namespace detail

template <typename T>
struct SmallBlockAllocator {
  using value_type = T;

  SmallBlockAllocator() = default;
  template <typename U>
  SmallBlockAllocator(const SmallBlockAllocator<U>&) {}  // NOLINT: rebinding is implicit

  // Blocks come from malloc, aligned for any fundamental type.
  static_assert(alignof(T) <= alignof(std::max_align_t), "over-aligned types need another allocator");

  T* allocate(size_t n) { return static_cast<T*>(detail::allocate_small_block(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { detail::free_small_block(p, n * sizeof(T)); }

  template <typename U>
  bool operator==(const SmallBlockAllocator<U>&) const {
    return true;
  }
};

}  // namespace ordo
