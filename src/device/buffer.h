// Device memory. Devices are host threads, so a buffer is host memory,
// 64-byte aligned. A buffer is written once by the kernel that makes it and
// is immutable afterwards while anything else can read it, so views
// (reshape) may share its storage. The one exception: a fused step may
// write an output over a dying input whose buffer and storage it holds
// alone (executor/run.cc), which nobody else can see.
#pragma once

#include <cstddef>
#include <memory>

#include "ordo/dtype.h"

namespace ordo::device {

struct Buffer {
  DType dtype;
  Shape shape;
  int64_t numel;
  std::shared_ptr<std::byte> storage;

  size_t nbytes() const { return static_cast<size_t>(numel) * dtype_size(dtype); }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(storage.get());
  }
  template <typename T>
  T* mutable_data() const {
    return reinterpret_cast<T*>(storage.get());
  }
};

std::shared_ptr<Buffer> allocate_buffer(DType dtype, Shape shape);
// The same bytes seen with another shape of the same element count.
std::shared_ptr<Buffer> view_buffer(const Buffer& source, Shape shape);

}  // namespace ordo::device
