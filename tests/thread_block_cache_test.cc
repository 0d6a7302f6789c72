// The per-thread caches of freed blocks, and the small device buffers that
// come from one.
#include <gtest/gtest.h>

#include <malloc.h>

#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/thread_block_cache.h"
#include "device/buffer_pool.h"

namespace ordo {
namespace {

struct TestBlocks;
// Classes of 64, 128, 192 and 256 bytes, at most 256 bytes of each kept.
using Cache = ThreadBlockCache<TestBlocks, 64, 4, 256>;

TEST(ThreadBlockCacheTest, SizesMapToClassesOfWholeGranules) {
  EXPECT_EQ(Cache::kMaxBytes, 256u);
  EXPECT_EQ(Cache::class_of(1), 0u);
  EXPECT_EQ(Cache::class_of(64), 0u);
  EXPECT_EQ(Cache::class_of(65), 1u);
  EXPECT_EQ(Cache::class_of(256), 3u);
  EXPECT_EQ(Cache::block_bytes(0), 64u);
  EXPECT_EQ(Cache::block_bytes(3), 256u);
}

TEST(ThreadBlockCacheTest, KeepsFreedBlocksPerClassUpToItsBound) {
  if (!kCacheFreedBlocks) GTEST_SKIP() << "no caching under AddressSanitizer";
  EXPECT_EQ(Cache::take(0), nullptr);
  std::vector<void*> blocks;
  for (int i = 0; i < 5; ++i) blocks.push_back(std::malloc(64));
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(Cache::keep(0, blocks[i])) << i;
  EXPECT_FALSE(Cache::keep(0, blocks[4])) << "256 bytes of 64-byte blocks are kept, no more";
  std::free(blocks[4]);
  void* big = std::malloc(256);
  EXPECT_TRUE(Cache::keep(3, big));
  EXPECT_EQ(Cache::take(1), nullptr) << "classes do not mix";
  EXPECT_EQ(Cache::take(3), big);
  std::free(big);
  for (int i = 3; i >= 0; --i) EXPECT_EQ(Cache::take(0), blocks[i]) << "last freed, first reused";
  EXPECT_EQ(Cache::take(0), nullptr);
  for (void* block : blocks) {
    if (block != blocks[4]) std::free(block);
  }
}

TEST(ThreadBlockCacheTest, EachThreadHasItsOwnCache) {
  if (!kCacheFreedBlocks) GTEST_SKIP() << "no caching under AddressSanitizer";
  void* mine = std::malloc(128);
  ASSERT_TRUE(Cache::keep(1, mine));
  std::thread([] {
    EXPECT_EQ(Cache::take(1), nullptr);
    void* theirs = std::malloc(128);
    EXPECT_TRUE(Cache::keep(1, theirs));
    EXPECT_EQ(Cache::take(1), theirs);
    std::free(theirs);
  }).join();
  EXPECT_EQ(Cache::take(1), mine);
  std::free(mine);
}

struct BigBlocks;
using BigCache = ThreadBlockCache<BigBlocks, 4096, 1, 4 << 20>;

// Whether mallinfo2 counts what malloc gives: by now the test program has
// allocated plenty, unless another allocator (ThreadSanitizer's) replaced
// the C library's.
bool malloc_is_counted() { return mallinfo2().uordblks > 0; }

TEST(ThreadBlockCacheTest, AThreadThatEndsGivesItsBlocksBack) {
  if (!kCacheFreedBlocks) GTEST_SKIP() << "no caching under AddressSanitizer";
  if (!malloc_is_counted()) GTEST_SKIP() << "mallinfo2 does not see this allocator";
  const size_t in_use_before = mallinfo2().uordblks;
  std::thread([] {
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE(BigCache::keep(0, std::malloc(4096)));
    EXPECT_GT(mallinfo2().uordblks, size_t{4000} * 1000);
  }).join();
  // 4 MB were kept; what is still in use is the thread's own bookkeeping.
  EXPECT_LT(mallinfo2().uordblks, in_use_before + (size_t{256} << 10));
}

bool aligned_to_line(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

TEST(BufferPoolTest, SmallBlocksAreAlignedAndReusedByTheThreadThatFreedThem) {
  device::BufferPool pool(1 << 20);
  void* first = pool.allocate(1000);
  EXPECT_TRUE(aligned_to_line(first));
  pool.release(first, 1000);
  void* again = pool.allocate(1024);  // the same 1 KiB class
  EXPECT_TRUE(aligned_to_line(again));
  if (kCacheFreedBlocks) {
    EXPECT_EQ(again, first);
  }
  // Freed on another thread: that thread reuses it.
  std::thread([&pool, again] {
    pool.release(again, 1024);
    void* there = pool.allocate(1010);
    if (kCacheFreedBlocks) {
      EXPECT_EQ(there, again);
    }
    pool.release(there, 1010);
  }).join();
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{4096}, size_t{4097}, size_t{70000}}) {
    void* block = pool.allocate(bytes);
    EXPECT_TRUE(aligned_to_line(block)) << bytes;
    static_cast<char*>(block)[bytes == 0 ? 0 : bytes - 1] = 1;  // usable to its end
    pool.release(block, bytes);
  }
  EXPECT_EQ(pool.cached_bytes(), 5120u + 81920u) << "blocks above 4 KiB are pooled: 4097 in the class of 5 KiB, "
                                                    "70000 in the class of 80 KiB";
}

TEST(BufferPoolTest, LargeBlocksSitOnWholeHugePages) {
  device::BufferPool pool(64 << 20);
  // Sizes round up to their class first: 4 MiB - 1 is in the 4 MiB class.
  for (size_t bytes : {size_t{3} << 20, device::BufferPool::kMinHugePageBytes - 1, size_t{5} << 20,
                       (size_t{9} << 20) + 3}) {
    void* block = pool.allocate(bytes);
    if (bytes > (size_t{3} << 20)) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % device::BufferPool::kHugePageBytes, 0u) << bytes;
    }
    EXPECT_TRUE(aligned_to_line(block)) << bytes;
    static_cast<char*>(block)[bytes - 1] = 1;  // usable to its end
    pool.release(block, bytes);
  }
}

}  // namespace
}  // namespace ordo
