// The Tensor handle's own methods: metadata, reading and rebinding.
#include <cstring>

#include "executor/graph_executor.h"
#include "lazy/trace.h"
#include "runtime/runtime.h"

namespace ordo {
namespace {

const lazy::TensorImpl& checked(const std::shared_ptr<lazy::TensorImpl>& impl) {
  ORDO_ARG_CHECK(impl != nullptr, "the tensor is undefined (default-constructed)");
  return *impl;
}

}  // namespace

Tensor::Tensor(std::shared_ptr<lazy::TensorImpl> impl) : impl_(std::move(impl)) {}

DType Tensor::dtype() const { return checked(impl_).dtype; }
const Shape& Tensor::shape() const { return checked(impl_).shape; }
int Tensor::device() const { return checked(impl_).device; }

bool Tensor::is_pending() const {
  const Tensor* self = this;
  const int device = lazy::common_device("is_pending", {&self, 1});
  std::lock_guard<std::mutex> lock(runtime::get().graph(device).mu);
  return impl_->is_pending();
}

void Tensor::copy_to_host(void* dst, size_t nbytes) const {
  const Tensor* self = this;
  lazy::common_device("copy_to_host", {&self, 1});
  const size_t expected = static_cast<size_t>(numel()) * dtype_size(dtype());
  ORDO_ARG_CHECK(nbytes == expected, "copy_to_host: the tensor has ", expected, " bytes, the destination ",
                 nbytes);
  const std::shared_ptr<const device::Buffer> buffer = executor::wait_for_value(*impl_);
  if (nbytes != 0) std::memcpy(dst, buffer->storage.get(), nbytes);
}

void Tensor::assign(const Tensor& other) {
  const Tensor* both[] = {this, &other};
  const int device = lazy::common_device("assign", both);
  ORDO_DTYPE_CHECK(dtype() == other.dtype(), "assign: cannot rebind a ", dtype_name(dtype()),
                   " tensor to a ", dtype_name(other.dtype()), " value");
  ORDO_ARG_CHECK(shape() == other.shape(), "assign: cannot rebind a tensor of shape ",
                 shape_to_string(shape()), " to a value of shape ", shape_to_string(other.shape()));
  lazy::DeviceGraph& graph = runtime::get().graph(device);
  std::lock_guard<std::mutex> lock(graph.mu);
  if (impl_ == other.impl_) return;
  impl_->value = other.impl_->value;
  impl_->data = other.impl_->data;
  if (impl_->is_pending()) graph.register_pending(*impl_);
}

}  // namespace ordo
