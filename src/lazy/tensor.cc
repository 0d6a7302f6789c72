// The Tensor handle's own methods: metadata and rebinding (reading a value
// waits for the executor: api/tensor_values.cc).
#include "lazy/graph_table.h"
#include "lazy/trace.h"

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
  std::lock_guard<std::mutex> lock(lazy::graphs().graph(device).mu);
  return impl_->is_pending();
}

void Tensor::assign(const Tensor& other) {
  const Tensor* both[] = {this, &other};
  const int device = lazy::common_device("assign", both);
  ORDO_DTYPE_CHECK(dtype() == other.dtype(), "assign: cannot rebind a ", dtype_name(dtype()),
                   " tensor to a ", dtype_name(other.dtype()), " value");
  ORDO_ARG_CHECK(shape() == other.shape(), "assign: cannot rebind a tensor of shape ",
                 shape_to_string(shape()), " to a value of shape ", shape_to_string(other.shape()));
  lazy::DeviceGraph& graph = lazy::graphs().graph(device);
  std::lock_guard<std::mutex> lock(graph.mu);
  if (impl_ == other.impl_) return;
  impl_->value = other.impl_->value;
  impl_->data = other.impl_->data;
  if (impl_->is_pending()) graph.register_pending(*impl_);
}

}  // namespace ordo
