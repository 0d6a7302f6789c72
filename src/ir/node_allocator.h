// The allocator of IR nodes, their operand and output lists, and the
// lazy tensors that hold them. A step of a training loop builds the same few
// hundred small blocks every time and frees them all by the graph cut; from
// the C library most of them took its slow shared path (freeing the IR was
// most of a cache-hit mark_step), so each thread keeps the blocks it freed
// for its next step (core/thread_block_cache.h).
#pragma once

#include <cstddef>
#include <new>

namespace ordo::ir {

// Blocks of up to kMaxCachedBytes come from and go to the calling thread's
// cache (bounded; the overflow goes back to the C library), larger ones
// straight from the C library. A block may be freed on any thread.
void* allocate_node_block(size_t bytes);
void free_node_block(void* block, size_t bytes) noexcept;

inline constexpr size_t kMaxCachedBytes = 256;

template <typename T>
struct NodeAllocator {
  using value_type = T;

  NodeAllocator() = default;
  template <typename U>
  NodeAllocator(const NodeAllocator<U>&) {}  // NOLINT: rebinding is implicit

  // Blocks come from malloc, aligned for any fundamental type.
  static_assert(alignof(T) <= alignof(std::max_align_t), "over-aligned types need another allocator");

  T* allocate(size_t n) { return static_cast<T*>(allocate_node_block(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { free_node_block(p, n * sizeof(T)); }

  template <typename U>
  bool operator==(const NodeAllocator<U>&) const {
    return true;
  }
};

}  // namespace ordo::ir
