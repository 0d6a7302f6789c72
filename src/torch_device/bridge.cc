#include "torch_device/bridge.h"

#include <algorithm>
#include <atomic>

#include <ATen/FunctionalTensorWrapper.h>
#include <ATen/ops/empty.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include "torch_device/dtypes.h"
#include "torch_device/xla_tensor_impl.h"

namespace ordo::torch_device {

namespace {

XlaTensorImpl* impl_of(const at::Tensor& tensor) {
  if (!tensor.defined()) return nullptr;
  c10::TensorImpl* impl = tensor.unsafeGetTensorImpl();
  if (at::functionalization::impl::isFunctionalTensor(tensor)) {
    at::functionalization::impl::sync(tensor);
    impl = at::functionalization::impl::unsafeGetFunctionalWrapper(tensor)->value().unsafeGetTensorImpl();
  }
  return as_xla_impl(impl);
}

}  // namespace

bool is_xla(const at::Tensor& tensor) { return tensor.defined() && tensor.device().type() == c10::DeviceType::XLA; }

const ordo::Tensor& value_of(const at::Tensor& tensor, const char* op) {
  XlaTensorImpl* impl = impl_of(tensor);
  TORCH_CHECK_TYPE(impl != nullptr, op, ": expected a tensor on the xla device, got ",
                   tensor.defined() ? c10::str(tensor.device()) : std::string("an undefined tensor"));
  return impl->value();
}

at::Tensor make_xla(ordo::Tensor value) {
  return at::Tensor(c10::make_intrusive<XlaTensorImpl>(std::move(value)));
}

namespace {

at::Tensor functional_unless_excluded(at::Tensor plain) {
  if (c10::impl::tls_local_dispatch_key_set().excluded_.has(c10::DispatchKey::Functionalize)) return plain;
  return at::functionalization::impl::to_functional_tensor(plain);
}

}  // namespace

at::Tensor wrap_empty(ordo::Tensor empty_value, c10::ScalarType shown_as) {
  return functional_unless_excluded(at::Tensor(c10::make_intrusive<XlaTensorImpl>(std::move(empty_value), shown_as)));
}

at::Tensor wrap(ordo::Tensor value) { return functional_unless_excluded(make_xla(std::move(value))); }

namespace {

// The XlaTensorImpl behind a functional tensor that nothing else reaches:
// no view or detached copy shares the wrapper's storage, and the wrapper's
// value is the storage's base, held by the two of them alone. A new value
// of the same shape and dtype set there is the update that replace_ and
// commit_in_place would make, without a TensorImpl made and dropped.
XlaTensorImpl* sole_value(const at::Tensor& functional, const ordo::Tensor& value) {
  auto* wrapper = at::functionalization::impl::unsafeGetFunctionalWrapper(functional);
  const c10::Storage& storage = wrapper->unsafe_storage();
  if (storage.use_count() != 1) return nullptr;
  const at::Tensor& current = wrapper->value();
  auto* aliases = static_cast<at::functionalization::FunctionalStorageImpl*>(storage.unsafeGetStorageImpl());
  if (current.use_count() != 2 || !aliases->base().is_same(current)) return nullptr;
  const Shape& shape = value.shape();
  if (functional.scalar_type() != shown_scalar_type_of(value.dtype()) ||
      !std::equal(shape.begin(), shape.end(), functional.sizes().begin(), functional.sizes().end())) {
    return nullptr;
  }
  return as_xla_impl(current.unsafeGetTensorImpl());
}

}  // namespace

void set_value_of(const at::Tensor& tensor, ordo::Tensor value) {
  if (at::functionalization::impl::isFunctionalTensor(tensor)) {
    if (XlaTensorImpl* sole = sole_value(tensor, value)) {
      sole->set_value(std::move(value));
      return;
    }
    at::functionalization::impl::replace_(tensor, make_xla(std::move(value)));
    commit_in_place(tensor);
    return;
  }
  XlaTensorImpl* impl = as_xla_impl(tensor.unsafeGetTensorImpl());
  TORCH_CHECK_TYPE(impl != nullptr, "expected a tensor on the xla device, got ", tensor.device());
  impl->set_value(std::move(value));
}

void commit_in_place(const at::Tensor& functional) {
  at::functionalization::impl::commit_update(functional);
  at::functionalization::impl::unsafeGetFunctionalWrapper(functional)->apply_updates();
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
