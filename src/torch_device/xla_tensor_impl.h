// The TensorImpl of PyTorch's `xla` device: an ordo::Tensor (a lazy value
// on one of this process's devices) seen by PyTorch as a dense, contiguous
// tensor without storage. Users hold it inside a FunctionalTensorWrapper
// (bridge.h): PyTorch's functionalization turns views and in-place ops into
// the functional ops the kernels here lower, so this impl never aliases.
//
//   at::Tensor t = wrap(ordo::ones({2, 3}));   // xla:0, float32, sizes [2, 3]
//   const ordo::Tensor& v = value_of(t);       // the lazy value behind it
#pragma once

#include <c10/core/TensorImpl.h>

#include <typeinfo>

#include "ordo/tensor.h"

namespace ordo::torch_device {

class XlaTensorImpl final : public c10::TensorImpl {
 public:
  explicit XlaTensorImpl(ordo::Tensor value);
  // An empty tensor of a dtype ordo cannot hold (batch norm's uint8
  // reserve space): no element is ever read, so only its dtype is shown.
  XlaTensorImpl(ordo::Tensor empty_value, c10::ScalarType shown_as);

  const ordo::Tensor& value() const { return value_; }
  // Rebinds the impl to a new value (an in-place op, a copy_ into it); its
  // sizes and dtype follow.
  void set_value(ordo::Tensor value);

  c10::intrusive_ptr<c10::TensorImpl> shallow_copy_and_detach(
      const c10::VariableVersion& version_counter, bool allow_tensor_metadata_change) const override;
  c10::intrusive_ptr<c10::TensorImpl> shallow_copy_and_detach(
      c10::VariableVersion&& version_counter, bool allow_tensor_metadata_change) const override;
  void shallow_copy_from(const c10::intrusive_ptr<c10::TensorImpl>& impl) override;

 private:
  void refresh_metadata();
  template <typename Version>
  c10::intrusive_ptr<c10::TensorImpl> detached_copy(Version&& version, bool allow_metadata_change) const;

  ordo::Tensor value_;
};

// impl as an XlaTensorImpl, or nullptr. The class is final, so its exact
// type decides: a comparison, where dynamic_cast cost every op's operands
// about 85 instructions each.
inline XlaTensorImpl* as_xla_impl(c10::TensorImpl* impl) {
  return impl != nullptr && typeid(*impl) == typeid(XlaTensorImpl) ? static_cast<XlaTensorImpl*>(impl) : nullptr;
}

}  // namespace ordo::torch_device
