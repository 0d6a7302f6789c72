#include "device/buffer.h"

#include <utility>

#include "device/buffer_pool.h"
#include "ordo/small_block_allocator.h"

namespace ordo::device {
namespace {

// Owns one pool block: the bytes of a buffer and of its views. Buffers are
// made at the rate of ops, so their two small objects (this and the
// Buffer) come from the per-thread small-block cache, not the C library.
class PoolBlock {
 public:
  explicit PoolBlock(size_t bytes)
      : bytes_(static_cast<std::byte*>(BufferPool::global().allocate(bytes))), size_(bytes) {}
  ~PoolBlock() { BufferPool::global().release(bytes_, size_); }
  PoolBlock(const PoolBlock&) = delete;
  PoolBlock& operator=(const PoolBlock&) = delete;

  std::byte* bytes() const { return bytes_; }

 private:
  std::byte* const bytes_;
  const size_t size_;
};

}  // namespace

std::shared_ptr<Buffer> allocate_buffer(DType dtype, Shape shape) {
  const int64_t numel = shape_numel(shape);
  auto block = std::allocate_shared<PoolBlock>(SmallBlockAllocator<PoolBlock>{},
                                               static_cast<size_t>(numel) * dtype_size(dtype));
  std::shared_ptr<std::byte> storage(block, block->bytes());
  return std::allocate_shared<Buffer>(SmallBlockAllocator<Buffer>{},
                                      Buffer{dtype, std::move(shape), numel, std::move(storage)});
}

std::shared_ptr<Buffer> view_buffer(const Buffer& source, Shape shape) {
  return std::allocate_shared<Buffer>(SmallBlockAllocator<Buffer>{},
                                      Buffer{source.dtype, std::move(shape), source.numel, source.storage});
}

}  // namespace ordo::device
