// A per-thread cache of freed memory blocks, by size class, with a shared
// depot behind it. A training loop allocates and frees the same small
// blocks every step (IR nodes when it traces, buffers when it runs); the C
// library's per-thread cache holds only seven blocks of a size, and beyond
// that its shared path costs far more (a request of 1 KiB or more first
// consolidates every small free chunk).
//
// A thread keeps what it freed, up to a small bound per class; when a
// class is full, its whole list goes to the depot, and a thread whose
// class is empty takes a list from the depot before it asks the C library.
// Blocks freed on another thread than the one that allocated them (a
// result made by a worker and freed by its reader) thus come back to the
// allocating thread instead of piling up where they were freed: without
// the depot, each thread had to be allowed a whole large step of blocks,
// and a loop that moved a block or two of a class per step between
// threads filled every such thread's bound over some 10,000 steps. The
// depot's bound is the old per-thread one.
//
// Blocks come from the C library (malloc or aligned_alloc) and go back to it
// with free when the thread's class and the depot are full, or when the
// thread exits and the depot is full. The cache is trivially destructible,
// so it stays usable while the thread's other thread_local objects (some of
// which hold blocks) are destroyed; a closer hands the blocks on and closes
// it. The depot is never destroyed: blocks may be freed during static
// destruction. Off under AddressSanitizer, which must see every block freed
// to catch a use after free.
//
// Locking: each class of the depot has its own spin lock, which guards its
// lists and byte count; a thread takes it once per list moved, never while
// holding another. The per-thread lists need no lock.
#pragma once

#include <array>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <new>

#include "core/spin_lock.h"

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

// Class c holds blocks of (c + 1) * kGranule bytes, at most
// kMaxThreadBytesPerClass of them per thread and kMaxDepotBytesPerClass in
// the depot. Tag makes each use its own cache. The cache neither allocates
// nor aligns: a block comes back as some thread kept it, so callers keep
// blocks of one alignment and of their class's full size.
template <typename Tag, size_t kGranule, size_t kClasses, size_t kMaxThreadBytesPerClass,
          size_t kMaxDepotBytesPerClass = 0>
class ThreadBlockCache {
 public:
  static constexpr size_t kMaxBytes = kGranule * kClasses;
  // The class of a request of 1..kMaxBytes bytes, and its blocks' size.
  static constexpr size_t class_of(size_t bytes) { return (bytes + kGranule - 1) / kGranule - 1; }
  static constexpr size_t block_bytes(size_t c) { return (c + 1) * kGranule; }

  // A cached block of class c, or nullptr.
  static void* take(size_t c) {
    assert(c < kClasses);
    List& list = t_cache.lists[c];
    FreeBlock* block = list.head;
    if (block == nullptr) [[unlikely]] return take_from_depot(c);
    list.head = block->next;
    --list.count;
    return block;
  }
  // Keeps a block of class c for this thread (or, when the thread's class
  // is full, for the depot); false when the caller must free it.
  static bool keep(size_t c, void* block) {
    assert(c < kClasses);
    if (!kCacheFreedBlocks) return false;
    List& list = t_cache.lists[c];
    if ((list.count + 1) * block_bytes(c) > kMaxThreadBytesPerClass || t_cache.state != State::kArmed) [[unlikely]] {
      return keep_slowly(c, block);
    }
    list.head = new (block) FreeBlock{list.head};
    ++list.count;
    return true;
  }

  // What the calling thread keeps, and what the depot holds (for tests and
  // measurements).
  static size_t thread_cached_bytes() {
    size_t bytes = 0;
    for (size_t c = 0; c < kClasses; ++c) bytes += t_cache.lists[c].count * block_bytes(c);
    return bytes;
  }
  static size_t depot_cached_bytes() {
    size_t bytes = 0;
    for (DepotClass& depot : s_depot) {
      std::lock_guard<SpinLock> lock(depot.mu);
      bytes += depot.bytes;
    }
    return bytes;
  }

 private:
  struct FreeBlock {
    FreeBlock* next;
  };
  static_assert(kGranule >= sizeof(FreeBlock) && kGranule % alignof(FreeBlock) == 0,
                "a free block holds its link");
  static_assert(kMaxThreadBytesPerClass >= kMaxBytes, "a thread can keep a block of every class");
  struct List {
    FreeBlock* head;
    size_t count;
  };
  // kFresh until the thread first keeps a block (which arms its closer),
  // kClosed once the closer ran.
  enum class State : unsigned char { kFresh, kArmed, kClosed };
  struct Cache {
    std::array<List, kClasses> lists;
    State state;
  };
  // A thread's full list is at most kMaxThreadBytesPerClass; a list left by
  // an exiting thread may be shorter and still take a slot.
  static constexpr size_t kDepotSlots = kMaxDepotBytesPerClass / kMaxThreadBytesPerClass;
  // Cache-line aligned: every thread that moves lists of a class takes its
  // lock.
  struct alignas(64) DepotClass {
    SpinLock mu;
    std::atomic<size_t> count{0};  // lists in slots; read without mu to skip an empty depot
    size_t bytes = 0;
    std::array<List, kDepotSlots> slots{};
  };
  struct Closer {
    void arm() { t_cache.state = State::kArmed; }
    ~Closer() {
      t_cache.state = State::kClosed;
      for (size_t c = 0; c < kClasses; ++c) {
        List& list = t_cache.lists[c];
        if (list.head == nullptr || move_to_depot(c, list)) continue;
        while (list.head != nullptr) {
          FreeBlock* next = list.head->next;
          std::free(list.head);
          list.head = next;
        }
        list.count = 0;
      }
    }
  };

  // Out of line, off the hot paths: once per thread, or once per list of
  // blocks moved.
  [[gnu::noinline]] static bool keep_slowly(size_t c, void* block) {
    if (t_cache.state == State::kClosed) return false;
    List& list = t_cache.lists[c];
    if ((list.count + 1) * block_bytes(c) > kMaxThreadBytesPerClass && !move_to_depot(c, list)) return false;
    if (t_cache.state == State::kFresh) t_closer.arm();  // registers its destructor
    list.head = new (block) FreeBlock{list.head};
    ++list.count;
    return true;
  }
  // A block from a list of the depot (the rest of the list becomes the
  // thread's), or nullptr when the depot has none or the thread is closed
  // (a list taken then would never be handed on).
  [[gnu::noinline]] static void* take_from_depot(size_t c) {
    if constexpr (kDepotSlots == 0) {
      return nullptr;
    } else {
      DepotClass& depot = s_depot[c];
      if (depot.count.load(std::memory_order_relaxed) == 0 || t_cache.state == State::kClosed) return nullptr;
      List& list = t_cache.lists[c];
      {
        std::lock_guard<SpinLock> lock(depot.mu);
        const size_t count = depot.count.load(std::memory_order_relaxed);
        if (count == 0) return nullptr;
        list = depot.slots[count - 1];
        depot.bytes -= list.count * block_bytes(c);
        depot.count.store(count - 1, std::memory_order_relaxed);
      }
      if (t_cache.state == State::kFresh) t_closer.arm();
      FreeBlock* block = list.head;
      list.head = block->next;
      --list.count;
      return block;
    }
  }
  // Moves list (not empty) into the depot and empties it; false when the
  // depot has no room for it.
  static bool move_to_depot(size_t c, List& list) {
    if constexpr (kDepotSlots == 0) {
      return false;
    } else {
      DepotClass& depot = s_depot[c];
      const size_t bytes = list.count * block_bytes(c);
      std::lock_guard<SpinLock> lock(depot.mu);
      const size_t count = depot.count.load(std::memory_order_relaxed);
      if (count == kDepotSlots || depot.bytes + bytes > kMaxDepotBytesPerClass) return false;
      depot.slots[count] = list;
      depot.bytes += bytes;
      depot.count.store(count + 1, std::memory_order_relaxed);
      list = {};
      return true;
    }
  }

  static thread_local Cache t_cache;
  static thread_local Closer t_closer;
  static inline constinit std::array<DepotClass, kClasses> s_depot{};
};

template <typename Tag, size_t G, size_t C, size_t M, size_t D>
thread_local typename ThreadBlockCache<Tag, G, C, M, D>::Cache ThreadBlockCache<Tag, G, C, M, D>::t_cache{};
template <typename Tag, size_t G, size_t C, size_t M, size_t D>
thread_local typename ThreadBlockCache<Tag, G, C, M, D>::Closer ThreadBlockCache<Tag, G, C, M, D>::t_closer;

}  // namespace ordo
