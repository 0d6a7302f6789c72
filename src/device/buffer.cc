#include "device/buffer.h"

#include <cstdlib>
#include <new>
#include <utility>

namespace ordo::device {

std::shared_ptr<Buffer> allocate_buffer(DType dtype, Shape shape) {
  int64_t numel = shape_numel(shape);
  constexpr size_t kAlignment = 64;
  size_t bytes = static_cast<size_t>(numel) * dtype_size(dtype);
  size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* memory = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (memory == nullptr) throw std::bad_alloc();
  std::shared_ptr<std::byte> storage(static_cast<std::byte*>(memory), [](std::byte* p) { std::free(p); });
  return std::make_shared<Buffer>(Buffer{dtype, std::move(shape), numel, std::move(storage)});
}

std::shared_ptr<Buffer> view_buffer(const Buffer& source, Shape shape) {
  return std::make_shared<Buffer>(Buffer{source.dtype, std::move(shape), source.numel, source.storage});
}

}  // namespace ordo::device
