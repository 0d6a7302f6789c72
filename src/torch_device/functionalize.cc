// ordo's own Functionalize kernels for a few in-place ops: copy_, which
// torch's kernel refuses in a case users write, and the updates of training
// (zero_grad, gradient accumulation, the optimizers, in-place
// activations), where torch's kernel
// checks each op on meta tensors first: about 40% of an add_'s cost on the
// xla device (BENCHMARKS.md, "#36: in-place ops without the meta check").
//
// An override replaces torch's kernel for every backend, so each kernel
// here also does what torch's does for tensors that are not on the xla
// device.
#include <ATen/FunctionalTensorWrapper.h>
#include <ATen/Operators.h>
#include <ATen/ops/empty_strided.h>
#include <torch/library.h>

#include "torch_device/bridge.h"

namespace ordo::torch_device {
namespace {

namespace functional = at::functionalization::impl;

// An argument as the functional op below functionalization takes it.
template <class T>
const T& unwrapped(const T& argument) {
  return argument;
}
at::Tensor unwrapped(const at::Tensor& tensor) {
  if (!functional::isFunctionalTensor(tensor)) return tensor;
  functional::sync(tensor);
  return functional::from_functional_tensor(tensor);
}

// An argument as torch's check on meta tensors takes it.
template <class T>
const T& on_meta(const T& argument) {
  return argument;
}
at::Tensor on_meta(const at::Tensor& tensor) {
  return at::empty_strided(tensor.sizes(), tensor.strides(), tensor.options().device(c10::DeviceType::Meta));
}

template <class T>
bool is_functional(const T&) {
  return false;
}
bool is_functional(const at::Tensor& tensor) { return functional::isFunctionalTensor(tensor); }

// What the meta check would have refused, asked of the functional op's
// result instead (torch's words, which users match).
void check_writable(const at::Tensor& self, const at::Tensor& result) {
  TORCH_CHECK(result.sizes() == self.sizes(), "output with shape ", self.sizes(),
              " doesn't match the broadcast shape ", result.sizes());
  TORCH_CHECK(c10::canCast(result.scalar_type(), self.scalar_type()), "result type ", result.scalar_type(),
              " can't be cast to the desired output type ", self.scalar_type());
}

// self = Functional(self, args...), as functionalization writes an
// in-place op. On the xla device the functional op itself refuses bad
// operands (devices, dtypes, alpha), and what remains of the meta check is
// check_writable; elsewhere the op runs on meta tensors first, as torch's
// kernel does.
template <class InPlace, class Functional, class Schema = typename InPlace::schema>
struct InPlaceUpdate;

template <class InPlace, class Functional, class... Args>
struct InPlaceUpdate<InPlace, Functional, at::Tensor&(at::Tensor&, Args...)> {
  static at::Tensor& kernel(at::Tensor& self, Args... args) {
    if (!functional::isFunctionalTensor(self)) {
      TORCH_CHECK(!(is_functional(args) || ...), InPlace::name,
                  ": a tensor that is not functional cannot be updated from a functional one");
      at::AutoDispatchSkipFunctionalize below;
      return InPlace::call(self, args...);
    }
    const at::Tensor self_value = unwrapped(self);
    const bool on_xla = self_value.device().type() == c10::DeviceType::XLA;
    at::Tensor result;
    {
      at::AutoDispatchSkipFunctionalize below;
      if (!on_xla) {
        at::Tensor self_meta = on_meta(self);
        InPlace::call(self_meta, on_meta(args)...);
      }
      result = Functional::call(self_value, unwrapped(args)...);
    }
    if (on_xla) check_writable(self, result);
    functional::replace_(self, result);
    functional::commit_update(self);
    functional::sync(self);
    return self;
  }
};

// copy_: torch's kernel refuses a plain destination with a functional
// source (an internal assert): the CPU tensor in `cpu_tensor.copy_(
// xla_tensor)`, which users write and DDP's check of the parameters runs.
// That case takes the source's value below functionalization, where the
// CPU's copy_ hands it to _copy_from; the others are an InPlaceUpdate.
at::Tensor& copy_(at::Tensor& self, const at::Tensor& src, bool non_blocking) {
  if (!functional::isFunctionalTensor(self) && functional::isFunctionalTensor(src)) {
    at::AutoDispatchSkipFunctionalize below;
    return at::_ops::copy_::call(self, unwrapped(src), non_blocking);
  }
  return InPlaceUpdate<at::_ops::copy_, at::_ops::copy>::kernel(self, src, non_blocking);
}

template <class InPlace, class Functional>
constexpr auto update = TORCH_FN((InPlaceUpdate<InPlace, Functional>::kernel));

// The dispatcher warns of any kernel that replaces another; these are
// meant to.
struct Silent final : c10::WarningHandler {
  void process(const c10::SourceLocation&, const std::string&, bool) override {}
};

}  // namespace

void register_functionalize_kernels() {
  static Silent silent;
  c10::Warning::WarningHandlerGuard quiet(&silent);
  static torch::Library library(torch::Library::IMPL, "aten", c10::DispatchKey::Functionalize, __FILE__, __LINE__);
  using namespace at::_ops;
  library.impl("copy_", TORCH_FN(copy_));
  library.impl("add_.Tensor", update<add__Tensor, add_Tensor>);
  library.impl("add_.Scalar", update<add__Scalar, add_Scalar>);
  library.impl("sub_.Tensor", update<sub__Tensor, sub_Tensor>);
  library.impl("sub_.Scalar", update<sub__Scalar, sub_Scalar>);
  library.impl("mul_.Tensor", update<mul__Tensor, mul_Tensor>);
  library.impl("mul_.Scalar", update<mul__Scalar, mul_Scalar>);
  library.impl("div_.Tensor", update<div__Tensor, div_Tensor>);
  library.impl("div_.Scalar", update<div__Scalar, div_Scalar>);
  library.impl("addcmul_", update<addcmul_, addcmul>);
  library.impl("addcdiv_", update<addcdiv_, addcdiv>);
  library.impl("zero_", update<zero_, at::_ops::zero>);
  library.impl("fill_.Scalar", update<fill__Scalar, fill_Scalar>);
  library.impl("fill_.Tensor", update<fill__Tensor, fill_Tensor>);
  library.impl("relu_", update<relu_, at::_ops::relu>);
  library.impl("neg_", update<neg_, at::_ops::neg>);
  library.impl("sqrt_", update<sqrt_, at::_ops::sqrt>);
  library.impl("exp_", update<exp_, at::_ops::exp>);
  library.impl("sigmoid_", update<sigmoid_, at::_ops::sigmoid>);
  library.impl("tanh_", update<tanh_, at::_ops::tanh>);
}

}  // namespace ordo::torch_device
