#include "device/buffer.h"

#include <iomanip>
#include <iterator>
#include <new>
#include <sstream>
#include <string>
#include <utility>

#include "device/buffer_pool.h"
#include "ordo/error.h"
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

// "4 TiB", "1.5 GiB": the size a reader compares with the machine's memory.
std::string readable_bytes(int64_t bytes) {
  constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double size = static_cast<double>(bytes);
  size_t unit = 0;
  for (; size >= 1024 && unit + 1 < std::size(kUnits); ++unit) size /= 1024;
  std::ostringstream out;
  out << std::setprecision(3) << size << ' ' << kUnits[unit];
  return out.str();
}

}  // namespace

std::shared_ptr<Buffer> allocate_buffer(DType dtype, Shape shape) {
  // Builders checked the shape already; this keeps buffers safe from a caller that did not.
  const ShapeSize size = checked_shape_size("allocate_buffer", shape, dtype);
  std::shared_ptr<PoolBlock> block;
  try {
    block = std::allocate_shared<PoolBlock>(SmallBlockAllocator<PoolBlock>{}, static_cast<size_t>(size.nbytes));
  } catch (const std::bad_alloc&) {
    throw_error<OutOfMemoryError>("cannot allocate ", readable_bytes(size.nbytes), " (", size.nbytes,
                                  " bytes) for a ", dtype_name(dtype), " tensor of shape ",
                                  shape_to_string(shape), ": out of memory");
  }
  std::shared_ptr<std::byte> storage(block, block->bytes());
  return std::allocate_shared<Buffer>(SmallBlockAllocator<Buffer>{},
                                      Buffer{dtype, std::move(shape), size.numel, std::move(storage)});
}

std::shared_ptr<Buffer> view_buffer(const Buffer& source, Shape shape) {
  return std::allocate_shared<Buffer>(SmallBlockAllocator<Buffer>{},
                                      Buffer{source.dtype, std::move(shape), source.numel, source.storage});
}

}  // namespace ordo::device
