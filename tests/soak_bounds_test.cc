// What keeps a long run's memory flat (bench/soak.py runs the whole loop):
// the per-thread block caches stay within their bounds and hand what they
// cannot keep to a shared depot, blocks freed on another thread come back
// to the thread that allocates, and buffers between 4 and 64 KiB are
// pooled instead of fragmenting the C library's heap.
#include <gtest/gtest.h>

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/thread_block_cache.h"
#include "device/buffer_pool.h"
#include "ordo/small_block_allocator.h"

namespace ordo {
namespace {

// Classes of 64 and 128 bytes; a thread keeps 256 bytes of each (four
// blocks of 64), the depot two lists (512 bytes) of each.
template <typename Tag>
using TinyCache = ThreadBlockCache<Tag, 64, 2, 256, 512>;

struct BoundsBlocks;
TEST(SoakBoundsTest, AThreadAndTheDepotKeepNoMoreThanTheirBounds) {
  if (!kCacheFreedBlocks) GTEST_SKIP() << "no caching under AddressSanitizer";
  using Cache = TinyCache<BoundsBlocks>;
  std::vector<void*> kept;
  for (int i = 0; i < 20; ++i) {
    void* block = std::malloc(64);
    if (!Cache::keep(0, block)) {
      std::free(block);
      continue;
    }
    kept.push_back(block);
    EXPECT_LE(Cache::thread_cached_bytes(), 256u) << i;
    EXPECT_LE(Cache::depot_cached_bytes(), 512u) << i;
  }
  // Four on the thread, twice four in the depot: then the 13th is refused.
  EXPECT_EQ(kept.size(), 12u);
  EXPECT_EQ(Cache::thread_cached_bytes(), 256u);
  EXPECT_EQ(Cache::depot_cached_bytes(), 512u);
  std::set<void*> taken;
  while (void* block = Cache::take(0)) {
    EXPECT_TRUE(taken.insert(block).second) << "a block came back twice";
  }
  EXPECT_EQ(taken, std::set<void*>(kept.begin(), kept.end())) << "every kept block comes back, from the depot too";
  EXPECT_EQ(Cache::depot_cached_bytes(), 0u);
  for (void* block : kept) std::free(block);
}

struct HandedOnBlocks;
TEST(SoakBoundsTest, BlocksFreedOnAnotherThreadComeBackToTheAllocatingOne) {
  if (!kCacheFreedBlocks) GTEST_SKIP() << "no caching under AddressSanitizer";
  using Cache = TinyCache<HandedOnBlocks>;
  std::vector<void*> made;
  for (int i = 0; i < 4; ++i) made.push_back(std::malloc(128));
  // Another thread frees them all and ends: the two its class could not
  // hold went to the depot at once, the rest when it ended.
  std::thread([&made] {
    for (void* block : made) EXPECT_TRUE(Cache::keep(1, block));
    EXPECT_EQ(Cache::thread_cached_bytes(), 2 * 128u) << "a thread keeps two blocks of 128";
    EXPECT_EQ(Cache::depot_cached_bytes(), 2 * 128u);
  }).join();
  EXPECT_EQ(Cache::depot_cached_bytes(), 4 * 128u);
  std::set<void*> back;
  while (void* block = Cache::take(1)) back.insert(block);
  EXPECT_EQ(back, std::set<void*>(made.begin(), made.end())) << "no block was lost or freed";
  for (void* block : made) std::free(block);
}

// Two threads hand blocks to each other through the cache, in both
// directions at once: no block is ever handed out twice, and what the
// cache holds stays within its bounds.
struct SharedBlocks;
TEST(SoakBoundsTest, ThreadsThatTradeBlocksNeverShareOne) {
  using Cache = TinyCache<SharedBlocks>;
  std::mutex mu;
  std::set<void*> live;  // blocks handed out and not yet kept or freed
  std::vector<void*> mailbox[2];
  auto trade = [&](int self) {
    std::vector<void*> mine;
    for (int round = 0; round < 2000; ++round) {
      for (int i = 0; i < 7; ++i) {
        void* block = Cache::take(0);
        if (block == nullptr) block = std::malloc(64);
        std::lock_guard<std::mutex> lock(mu);
        EXPECT_TRUE(live.insert(block).second) << "a block was handed out while in use";
        mailbox[1 - self].push_back(block);
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        mine.swap(mailbox[self]);
        for (void* block : mine) live.erase(block);
      }
      for (void* block : mine) {
        if (!Cache::keep(0, block)) std::free(block);
      }
      mine.clear();
      EXPECT_LE(Cache::thread_cached_bytes(), 256u);
    }
  };
  std::thread other(trade, 1);
  trade(0);
  other.join();
  EXPECT_LE(Cache::depot_cached_bytes(), 512u);
  for (int self : {0, 1}) {
    for (void* block : mailbox[self]) std::free(block);
  }
  while (void* block = Cache::take(0)) std::free(block);
}

// Whether mallinfo2 counts what malloc gives (ThreadSanitizer replaces the
// C library's allocator, and mallinfo2 then sees nothing).
bool malloc_is_counted() {
  void* probe = std::malloc(1 << 16);
  const bool counted = mallinfo2().uordblks >= (1 << 16);
  std::free(probe);
  return counted;
}

// A thread that makes small blocks (shapes, when it traces) and another
// that frees them (when the tensors die there). The freeing thread used to
// keep 512 KiB of each class it never allocated from.
TEST(SoakBoundsTest, SmallBlocksMovedBetweenThreadsStayWithinTheBounds) {
  if (!kCacheFreedBlocks) GTEST_SKIP() << "no caching under AddressSanitizer";
  if (!malloc_is_counted()) GTEST_SKIP() << "mallinfo2 does not see this allocator";
  constexpr size_t kBatch = 100;
  std::vector<void*> batch;
  std::atomic<int> round{0};  // odd: the freeing thread's turn
  constexpr int kRounds = 1000;
  size_t in_use_at_end = 0;  // measured before the freeing thread ends and gives its blocks back
  std::thread freer([&] {
    for (int r = 1; r < 2 * kRounds; r += 2) {
      round.wait(r - 1);
      for (void* block : batch) detail::free_small_block(block, 32);
      batch.clear();
      if (r == 2 * kRounds - 1) in_use_at_end = mallinfo2().uordblks;
      round.store(r + 1);
      round.notify_one();
    }
  });
  batch.reserve(kBatch);
  const size_t in_use_before = mallinfo2().uordblks;
  for (int r = 0; r < 2 * kRounds; r += 2) {
    for (size_t i = 0; i < kBatch; ++i) batch.push_back(detail::allocate_small_block(32));
    round.store(r + 1);
    round.notify_one();
    round.wait(r + 1);
  }
  freer.join();
  // 100,000 blocks went from this thread to the other. Each of the two
  // keeps at most 32 KiB of them (1,024 chunks of 48 bytes), the depot a
  // list or two in passing: not the 16,384 blocks (768 KiB of chunks) the
  // freeing thread used to keep.
  const size_t grown = in_use_at_end - in_use_before;
  EXPECT_LT(grown, size_t{320} << 10) << grown << " bytes more in use after moving 100,000 blocks";
}

// The loop in miniature: buffers of 16 KiB made and freed while
// small blocks made between them live on. The C library cuts a 64-byte
// aligned block out of a larger chunk, so a freed one is too small to be
// cut again for the same size, and its small neighbours kept it from
// merging: every step took fresh memory.
TEST(SoakBoundsTest, MidSizedBuffersReuseTheirBlocks) {
  if (!malloc_is_counted()) GTEST_SKIP() << "mallinfo2 does not see this allocator";
  device::BufferPool pool(size_t{64} << 20);
  constexpr int kSteps = 3000;
  constexpr int kWarmup = 500;
  std::vector<void*> neighbours(kSteps, nullptr);
  void* previous = nullptr;
  size_t heap_after_warmup = 0;
  for (int step = 0; step < kSteps; ++step) {
    void* buffer = pool.allocate(16384);
    static_cast<char*>(buffer)[16383] = 1;
    neighbours[step] = std::malloc(100);
    if (previous != nullptr) pool.release(previous, 16384);
    previous = buffer;
    if (step == kWarmup) heap_after_warmup = mallinfo2().arena;
  }
  const size_t grown = mallinfo2().arena - heap_after_warmup;
  pool.release(previous, 16384);
  for (void* block : neighbours) std::free(block);
  // The neighbours take 2,500 chunks of 112 bytes; 2,500 fresh buffers
  // would be 40 MiB.
  EXPECT_LT(grown, size_t{2} << 20) << grown << " bytes of heap grown over " << kSteps - kWarmup << " steps";
}

}  // namespace
}  // namespace ordo
