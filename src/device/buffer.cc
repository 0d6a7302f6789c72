#include "device/buffer.h"

#include "device/buffer_pool.h"

#include <cstdlib>
#include <new>
#include <utility>

namespace ordo::device {

std::shared_ptr<Buffer> allocate_buffer(DType dtype, Shape shape) {
  const int64_t numel = shape_numel(shape);
  const size_t bytes = static_cast<size_t>(numel) * dtype_size(dtype);
  void* memory = BufferPool::global().allocate(bytes);
  std::shared_ptr<std::byte> storage(static_cast<std::byte*>(memory), [bytes](std::byte* p) {
    BufferPool::global().release(p, bytes);
  });
  return std::make_shared<Buffer>(Buffer{dtype, std::move(shape), numel, std::move(storage)});
}

std::shared_ptr<Buffer> view_buffer(const Buffer& source, Shape shape) {
  return std::make_shared<Buffer>(Buffer{source.dtype, std::move(shape), source.numel, source.storage});
}

}  // namespace ordo::device
