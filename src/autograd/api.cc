// ordo/autograd.h and the autograd methods of ordo::Tensor.
#include "core/source_location.h"
#include "autograd/engine.h"
#include "lazy/tensor_impl.h"
#include "lazy/trace.h"
#include "ordo/autograd.h"

namespace ordo {
namespace {

lazy::TensorImpl& impl_of(std::string_view what, const Tensor& t) {
  const Tensor* self = &t;
  lazy::common_device(what, {&self, 1});
  return *t.impl();
}

lazy::AutogradState& state_of(lazy::TensorImpl& impl) {
  if (!impl.autograd) impl.autograd = std::make_unique<lazy::AutogradState>();
  return *impl.autograd;
}

}  // namespace

bool is_grad_enabled() { return lazy::grad_mode_enabled(); }
void set_grad_enabled(bool enabled) { lazy::set_grad_mode_enabled(enabled); }

Tensor& Tensor::set_requires_grad(bool requires_grad) {
  lazy::TensorImpl& impl = impl_of("set_requires_grad", *this);
  ORDO_DTYPE_CHECK(!requires_grad || is_floating(impl.dtype), "set_requires_grad: only floating tensors can "
                   "require a gradient, this one is ", dtype_name(impl.dtype));
  if (!requires_grad && !impl.autograd) return *this;
  lazy::AutogradState& state = state_of(impl);
  ORDO_ARG_CHECK(!state.record || requires_grad, "set_requires_grad: only a leaf's flag can change; this tensor "
                 "was made by an op from one that requires a gradient (use detach())");
  state.requires_grad = requires_grad;
  return *this;
}

bool Tensor::requires_grad() const { return impl_of("requires_grad", *this).requires_grad(); }

bool Tensor::is_leaf() const {
  const lazy::TensorImpl& impl = impl_of("is_leaf", *this);
  return !impl.autograd || !impl.autograd->record;
}

Tensor Tensor::grad() const {
  const lazy::TensorImpl& impl = impl_of("grad", *this);
  return impl.autograd ? impl.autograd->grad : Tensor();
}

void Tensor::set_grad(const Tensor& grad) {
  lazy::TensorImpl& impl = impl_of("set_grad", *this);
  if (grad.defined()) {
    const Tensor* both[] = {this, &grad};
    lazy::common_device("set_grad", both);
    ORDO_ARG_CHECK(grad.shape() == impl.shape, "set_grad: the gradient has shape ", shape_to_string(grad.shape()),
                   ", the tensor ", shape_to_string(impl.shape));
    ORDO_DTYPE_CHECK(grad.dtype() == impl.dtype, "set_grad: the gradient is ", dtype_name(grad.dtype()),
                     ", the tensor ", dtype_name(impl.dtype));
  } else if (!impl.autograd) {
    return;
  }
  state_of(impl).grad = grad;
}

void Tensor::backward(const Tensor& gradient, Caller caller) const {
  const ScopedUserLocation here(caller);
  autograd::Targets targets;
  targets.accumulate_into_leaves = true;
  const Tensor seeds[] = {gradient};
  autograd::run_backward("backward", {this, 1}, gradient.defined() ? std::span<const Tensor>(seeds)
                                                                    : std::span<const Tensor>(), targets);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& seeds, Caller caller) {
  const ScopedUserLocation here(caller);
  autograd::Targets targets;
  for (const Tensor& input : inputs) {
    ORDO_ARG_CHECK(input.defined(), "grad: an input is undefined");
    ORDO_ARG_CHECK(input.requires_grad(), "grad: an input does not require a gradient (set_requires_grad first)");
    targets.tensors.push_back(input);
  }
  std::vector<Tensor> grads = autograd::run_backward("grad", outputs, seeds, targets);
  NoGradGuard no_grad;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) grads[i] = zeros(inputs[i].shape(), inputs[i].dtype(), inputs[i].device());
  }
  return grads;
}

std::vector<Tensor> grad(const Tensor& output, const std::vector<Tensor>& inputs, const Tensor& seed, Caller caller) {
  const ScopedUserLocation here(caller);
  return grad(std::vector<Tensor>{output}, inputs, seed.defined() ? std::vector<Tensor>{seed} : std::vector<Tensor>{});
}

}  // namespace ordo
