#include "torch_device/bridge.h"

#include <atomic>
#include <string>
#include <utility>

#include <ATen/ops/empty.h>

#include "torch_device/dtypes.h"
#include "torch_device/xla_tensor_impl.h"

namespace ordo::torch_device {

bool is_xla(const at::Tensor& tensor) { return tensor.defined() && tensor.device().type() == c10::DeviceType::XLA; }

XlaTensorImpl& xla_impl_of(const at::Tensor& tensor, const char* op) {
  XlaTensorImpl* impl = tensor.defined() ? as_xla_impl(tensor.unsafeGetTensorImpl()) : nullptr;
  TORCH_CHECK_TYPE(impl != nullptr, op, ": expected a tensor on the xla device, got ",
                   tensor.defined() ? c10::str(tensor.device()) : std::string("an undefined tensor"));
  return *impl;
}

const ordo::Tensor& value_of(const at::Tensor& tensor, const char* op) { return xla_impl_of(tensor, op).value(); }

at::Tensor make_xla(ordo::Tensor value) {
  return at::Tensor(c10::make_intrusive<XlaTensorImpl>(std::move(value)));
}

at::Tensor make_empty_xla(ordo::Tensor empty_value, c10::ScalarType shown_as) {
  return at::Tensor(c10::make_intrusive<XlaTensorImpl>(std::move(empty_value), shown_as));
}

at::Tensor make_view(const at::Tensor& tensor, const ViewStep& step, const char* op) {
  return at::Tensor(xla_impl_of(tensor, op).view(step));
}

void set_value_of(const at::Tensor& tensor, ordo::Tensor value) {
  xla_impl_of(tensor).set_value(std::move(value));
}

ordo::Tensor upload(const at::Tensor& cpu, int device) {
  at::Tensor dense = cpu.contiguous();
  const DType dtype = dtype_of(dense.scalar_type());
  Shape shape(dense.sizes().begin(), dense.sizes().end());
  return ordo::from_host(dense.data_ptr(), dtype, shape, device);
}

namespace {

std::atomic<ErrorTranslator> error_translator{nullptr};

}  // namespace

void set_error_translator(ErrorTranslator translator) { error_translator.store(translator); }

at::Tensor download(const ordo::Tensor& value) {
  const Shape& shape = value.shape();
  at::Tensor out = at::empty(c10::IntArrayRef(shape.data(), shape.size()),
                             at::TensorOptions().dtype(scalar_type_of(value.dtype())));
  try {
    value.copy_to_host(out.data_ptr(), out.nbytes());
  } catch (const ordo::Error&) {
    if (ErrorTranslator translate = error_translator.load()) translate(std::current_exception());
    throw;
  }
  return out;
}

}  // namespace ordo::torch_device
