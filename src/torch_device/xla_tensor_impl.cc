#include "torch_device/xla_tensor_impl.h"

#include <utility>

#include "torch_device/dtypes.h"

namespace ordo::torch_device {

namespace {

c10::DispatchKeySet xla_keys() {
  // The backend key; TensorImpl adds AutogradXLA and ADInplaceOrView.
  return c10::DispatchKeySet(c10::DispatchKey::XLA);
}

// The value as the device holds it: float32 rounded to bfloat16 under
// XLA_USE_BF16 (dtypes.h).
ordo::Tensor held(ordo::Tensor value) {
  const DType dtype = held_dtype(value.dtype());
  return dtype == value.dtype() ? value : ordo::cast(value, dtype);
}

caffe2::TypeMeta shown_type_of(const ordo::Tensor& value) {
  return c10::scalarTypeToTypeMeta(shown_scalar_type_of(value.dtype()));
}

}  // namespace

XlaTensorImpl::XlaTensorImpl(ordo::Tensor value)
    : c10::TensorImpl(xla_keys(), shown_type_of(value), xla_device_of(value.device())),
      value_(held(std::move(value))) {
  // No storage to hand out: data_ptr() and storage() raise instead of
  // giving PyTorch a pointer it would write through.
  set_storage_access_should_throw();
  refresh_metadata();
}

XlaTensorImpl::XlaTensorImpl(ordo::Tensor empty_value, c10::ScalarType shown_as) : XlaTensorImpl(std::move(empty_value)) {
  TORCH_INTERNAL_ASSERT(value_.numel() == 0);
  data_type_ = c10::scalarTypeToTypeMeta(shown_as);
}

void XlaTensorImpl::set_value(ordo::Tensor value) {
  // An in-place update keeps the shape, and with it sizes and strides.
  const bool same_shape = value.shape() == value_.shape();
  data_type_ = shown_type_of(value);
  value_ = held(std::move(value));
  if (!same_shape) refresh_metadata();
}

void XlaTensorImpl::refresh_metadata() {
  const Shape& shape = value_.shape();
  sizes_and_strides_.set_sizes(c10::IntArrayRef(shape.data(), shape.size()));
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    sizes_and_strides_.stride_at_unchecked(d) = stride;
    stride *= std::max<int64_t>(shape[d], 1);
  }
  storage_offset_ = 0;
  refresh_numel();
  refresh_contiguous();
}

template <typename Version>
c10::intrusive_ptr<c10::TensorImpl> XlaTensorImpl::detached_copy(Version&& version,
                                                                  bool allow_metadata_change) const {
  auto copy = c10::make_intrusive<XlaTensorImpl>(value_);
  copy_tensor_metadata(this, copy.get(), std::forward<Version>(version), allow_metadata_change);
  return copy;
}

c10::intrusive_ptr<c10::TensorImpl> XlaTensorImpl::shallow_copy_and_detach(
    const c10::VariableVersion& version_counter, bool allow_tensor_metadata_change) const {
  return detached_copy(version_counter, allow_tensor_metadata_change);
}

c10::intrusive_ptr<c10::TensorImpl> XlaTensorImpl::shallow_copy_and_detach(
    c10::VariableVersion&& version_counter, bool allow_tensor_metadata_change) const {
  return detached_copy(std::move(version_counter), allow_tensor_metadata_change);
}

void XlaTensorImpl::shallow_copy_from(const c10::intrusive_ptr<c10::TensorImpl>& impl) {
  XlaTensorImpl* source = as_xla_impl(impl.get());
  TORCH_CHECK(source != nullptr, "an xla tensor's data can only be set to another xla tensor's");
  copy_tensor_metadata(source, this, version_counter(), allow_tensor_metadata_change());
  set_value(source->value_);
}

}  // namespace ordo::torch_device
