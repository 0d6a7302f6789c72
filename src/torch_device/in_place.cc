// The kernels that write a tensor on the xla device: copy_, every in-place
// op that has a functional form, the out= ops and the list ops. Each
// computes its functional form's value and writes it to the tensor
// (set_value_of: through its views to its base and aliases). On the xla
// device they skip torch's check on meta tensors (about 40% of an add_'s
// cost: BENCHMARKS.md, "#36: in-place ops without the meta check"): the
// functional op refuses bad operands, and take_value checks what the meta
// check adds. The updates of training (zero_grad, gradient accumulation,
// the optimizers, in-place activations) have unboxed kernels; the rest
// share a boxed one, the out= ops another.
#include <ATen/Operators.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "torch_device/bridge.h"
#include "torch_device/dtypes.h"
#include "torch_device/foreach.h"
#include "torch_device/in_place_values.h"
#include "torch_device/op_schemas.h"
#include "torch_device/operands.h"

namespace ordo::torch_device {
namespace {

// torch's refusal (in its words, which users match) of a result written
// into a tensor of a type it cannot be cast to.
void check_castable(c10::ScalarType result, const at::Tensor& written) {
  TORCH_CHECK(c10::canCast(result, written.scalar_type()), "result type ", result,
              " can't be cast to the desired output type ", written.scalar_type());
}

// value, cast to written's dtype, written to it.
void write(const at::Tensor& written, ordo::Tensor value) {
  const c10::ScalarType type = shown_scalar_type_of(value.dtype());
  check_castable(type, written);
  if (type != written.scalar_type()) value = cast_to(value, dtype_of(written.scalar_type()));
  set_value_of(written, std::move(value));
}

// self takes value, the functional op's, checked for what the meta check
// would have refused.
at::Tensor& take_value(at::Tensor& self, ordo::Tensor value) {
  const c10::IntArrayRef sizes(value.shape().data(), value.shape().size());
  TORCH_CHECK(sizes == self.sizes(), "output with shape ", self.sizes(), " doesn't match the broadcast shape ", sizes);
  write(self, std::move(value));
  return self;
}

// self = Functional(self, args...): the functional op refuses bad operands
// (devices, dtypes, alpha); its value is kValue's where the op has one
// (in_place_values.h).
template <class InPlace, class Functional, auto kValue = nullptr, class Schema = typename InPlace::schema>
struct InPlaceUpdate;

template <class InPlace, class Functional, auto kValue, class... Args>
struct InPlaceUpdate<InPlace, Functional, kValue, at::Tensor&(at::Tensor&, Args...)> {
  static at::Tensor& kernel(at::Tensor& self, Args... args) {
    if constexpr (std::is_same_v<decltype(kValue), std::nullptr_t>) {
      return take_value(self, value_of(Functional::call(self, args...)));
    } else {
      return take_value(self, kValue(self, args...));
    }
  }
};

// InPlaceUpdate for any other in-place op, boxed: functional_ is the op's
// functional form.
class BoxedInPlaceUpdate final : public c10::OperatorKernel {
 public:
  explicit BoxedInPlaceUpdate(c10::OperatorHandle functional) : functional_(std::move(functional)) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    const auto arguments = stack->end() - static_cast<std::ptrdiff_t>(op.schema().arguments().size());
    at::Tensor self = arguments->toTensor();
    functional_.callBoxed(stack);
    const at::Tensor result = torch::jit::pop(*stack).toTensor();
    torch::jit::push(*stack, take_value(self, value_of(result)));
  }

 private:
  c10::OperatorHandle functional_;
};

// out = Functional(args...) for an out= op, boxed: functional_ is the op's
// functional form. out takes the value resized as torch resizes it, after
// torch's check that the dtype can be cast.
class BoxedOutUpdate final : public c10::OperatorKernel {
 public:
  explicit BoxedOutUpdate(c10::OperatorHandle functional) : functional_(std::move(functional)) {}

  void operator()(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack* stack) {
    at::Tensor out = torch::jit::pop(*stack).toTensor();
    functional_.callBoxed(stack);
    const at::Tensor result = torch::jit::pop(*stack).toTensor();
    write(out, value_of(result));
    torch::jit::push(*stack, out);
  }

 private:
  c10::OperatorHandle functional_;
};

// copy_ into a CPU tensor (`cpu_tensor.copy_(xla_tensor)`, which DDP's
// check of the parameters runs) reads the source back; into an xla tensor
// it is an InPlaceUpdate.
at::Tensor& copy_(at::Tensor& self, const at::Tensor& src, bool non_blocking) {
  if (!is_xla(self)) return self.copy_(download(value_of(src, "copy_")), non_blocking);
  return InPlaceUpdate<at::_ops::copy_, at::_ops::copy>::kernel(self, src, non_blocking);
}

template <class InPlace, class Functional, auto kValue = nullptr>
constexpr auto update = TORCH_FN((InPlaceUpdate<InPlace, Functional, kValue>::kernel));

// Whether op's arguments, less its last `dropped`, are functional's.
bool same_arguments(const c10::FunctionSchema& op, const c10::FunctionSchema& functional, size_t dropped = 0) {
  const auto& arguments = op.arguments();
  if (arguments.size() < dropped) return false;
  return std::equal(arguments.begin(), arguments.end() - static_cast<std::ptrdiff_t>(dropped),
                    functional.arguments().begin(), functional.arguments().end(),
                    [](const c10::Argument& x, const c10::Argument& y) {
                      return x.name() == y.name() && *x.type() == *y.type();
                    });
}

bool returns_a_new_tensor(const c10::FunctionSchema& schema) {
  return schema.returns().size() == 1 && is_tensor(schema.returns()[0]) && schema.returns()[0].alias_info() == nullptr;
}

// An op that reaches the device's kernels: one that decomposes is left to
// its parts (torch generates a Functionalize kernel for every op that does
// not), and one with an xla kernel of its own keeps it.
bool written_here(const c10::OperatorHandle& op) {
  return op.hasKernelForDispatchKey(c10::DispatchKey::Functionalize) &&
         !op.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd) &&
         !op.hasKernelForDispatchKey(c10::DispatchKey::XLA);
}

// A functional op with an xla kernel. Any other falls back, or runs a
// composite kernel that may call the in-place or out= form: that form then
// falls back itself, as one op.
bool lowered(const c10::OperatorHandle& functional) {
  return functional.hasKernelForDispatchKey(c10::DispatchKey::XLA);
}

struct UpdateForm {
  c10::OperatorHandle update;
  c10::OperatorHandle functional;
};

// The in-place ops that are self = functional(self, ...), as torch's
// functionalization pairs them: named as their functional form with a
// trailing underscore (or, for normal_, with _functional in its place),
// writing self and nothing else, reaching the device's kernels
// (written_here), and a lowered functional form of the same arguments (in
// any overload) that returns one new tensor. The updates of lists (_foreach_)
// are foreach.cc's; resize_, _resize_output_ and set_ change storage
// (aten_transfers.cc).
std::vector<UpdateForm> in_place_forms(const OpsByName& by_name) {
  static const std::unordered_set<std::string_view> storage_changes = {"aten::resize_", "aten::resize_as_",
                                                                        "aten::_resize_output_", "aten::set_"};
  auto functional_form = [&](const std::string& name, const c10::FunctionSchema& schema) {
    std::optional<c10::OperatorHandle> match;
    size_t matches = 0;
    const std::string stem = name.substr(0, name.size() - 1);
    for (const std::string& candidate : {stem, stem + "_functional"}) {
      const auto functionals = by_name.find(candidate);
      if (functionals == by_name.end()) continue;
      for (const c10::OperatorHandle& functional : functionals->second) {
        if (returns_a_new_tensor(functional.schema()) && same_arguments(schema, functional.schema())) {
          match = functional;
          ++matches;
        }
      }
    }
    return matches == 1 ? match : std::nullopt;
  };
  std::vector<UpdateForm> forms;
  for (const auto& [name, ops] : by_name) {
    if (name.size() < 2 || name.back() != '_' || storage_changes.count(name)) continue;
    for (const c10::OperatorHandle& op : ops) {
      const auto& arguments = op.schema().arguments();
      if (arguments.empty() || !is_tensor(arguments[0]) || !writes(arguments[0]) ||
          std::any_of(arguments.begin() + 1, arguments.end(), writes) || !written_here(op)) {
        continue;
      }
      auto functional = functional_form(name, op.schema());
      if (functional && lowered(*functional)) forms.push_back({op, *functional});
    }
  }
  return forms;
}

// The out= ops that are out = functional(args...): the overload "out" of
// an op, writing its last argument (a tensor) and nothing else, whose
// overloads include exactly one of the same arguments less out that
// returns one new tensor, lowered. Ops of several outs (max.dim_max) fall
// back.
std::vector<UpdateForm> out_forms(const OpsByName& by_name) {
  std::vector<UpdateForm> forms;
  for (const auto& [name, ops] : by_name) {
    for (const c10::OperatorHandle& op : ops) {
      const c10::FunctionSchema& schema = op.schema();
      const auto& arguments = schema.arguments();
      if (op.operator_name().overload_name != "out" || arguments.empty() || !is_tensor(arguments.back()) ||
          std::count_if(arguments.begin(), arguments.end(), writes) != 1 || !writes(arguments.back()) ||
          !written_here(op)) {
        continue;
      }
      std::vector<c10::OperatorHandle> functionals;
      for (const c10::OperatorHandle& functional : ops) {
        if (returns_a_new_tensor(functional.schema()) && same_arguments(schema, functional.schema(), 1)) {
          functionals.push_back(functional);
        }
      }
      if (functionals.size() == 1 && lowered(functionals.front())) forms.push_back({op, functionals.front()});
    }
  }
  return forms;
}

}  // namespace

void register_in_place_kernels() {
  static torch::Library library(torch::Library::IMPL, "aten", c10::DispatchKey::XLA, __FILE__, __LINE__);
  std::unordered_set<std::string> unboxed;
  auto impl = [&](const char* name, auto kernel) {
    library.impl(name, std::move(kernel));
    unboxed.insert(std::string("aten::") + name);
  };
  using namespace at::_ops;
  impl("copy_", TORCH_FN(copy_));
  namespace values = in_place_values;
  impl("add_.Tensor", update<add__Tensor, add_Tensor, values::add_Tensor>);
  impl("add_.Scalar", update<add__Scalar, add_Scalar, values::add_Scalar>);
  impl("sub_.Tensor", update<sub__Tensor, sub_Tensor, values::sub_Tensor>);
  impl("sub_.Scalar", update<sub__Scalar, sub_Scalar, values::sub_Scalar>);
  impl("mul_.Tensor", update<mul__Tensor, mul_Tensor, values::mul_Tensor>);
  impl("mul_.Scalar", update<mul__Scalar, mul_Scalar, values::mul_Scalar>);
  impl("div_.Tensor", update<div__Tensor, div_Tensor, values::div_Tensor>);
  impl("div_.Scalar", update<div__Scalar, div_Scalar, values::div_Scalar>);
  impl("addcmul_", update<addcmul_, at::_ops::addcmul, values::addcmul>);
  impl("addcdiv_", update<addcdiv_, at::_ops::addcdiv, values::addcdiv>);
  impl("zero_", update<zero_, at::_ops::zero>);
  impl("fill_.Scalar", update<fill__Scalar, fill_Scalar>);
  impl("fill_.Tensor", update<fill__Tensor, fill_Tensor>);
  impl("relu_", update<relu_, at::_ops::relu>);
  impl("neg_", update<neg_, at::_ops::neg>);
  impl("sqrt_", update<sqrt_, at::_ops::sqrt>);
  impl("exp_", update<exp_, at::_ops::exp>);
  impl("sigmoid_", update<sigmoid_, at::_ops::sigmoid>);
  impl("tanh_", update<tanh_, at::_ops::tanh>);
  const OpsByName by_name = ops_by_name();
  for (const UpdateForm& form : in_place_forms(by_name)) {
    const std::string name = full_name(form.update.operator_name());
    if (unboxed.count(name)) continue;
    library.impl(name.c_str(),
                 torch::CppFunction::makeFromBoxedFunctor(std::make_unique<BoxedInPlaceUpdate>(form.functional)));
  }
  for (const UpdateForm& form : out_forms(by_name)) {
    library.impl(full_name(form.update.operator_name()).c_str(),
                 torch::CppFunction::makeFromBoxedFunctor(std::make_unique<BoxedOutUpdate>(form.functional)));
  }
  register_foreach_kernels(library, by_name);
}

}  // namespace ordo::torch_device
