// What keeps a long run's memory flat (bench/soak.py runs the whole loop):
// buffers between 4 and 64 KiB are pooled instead of fragmenting the C
// library's heap.
#include <gtest/gtest.h>

#include <malloc.h>

#include <cstdlib>
#include <vector>

#include "device/buffer_pool.h"

namespace ordo {
namespace {

// Whether mallinfo2 counts what malloc gives (ThreadSanitizer replaces the
// C library's allocator, and mallinfo2 then sees nothing).
bool malloc_is_counted() {
  void* probe = std::malloc(1 << 16);
  const bool counted = mallinfo2().uordblks >= (1 << 16);
  std::free(probe);
  return counted;
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
