// ordo's Functionalize kernels for the in-place ops: copy_, which torch's
// kernel refuses in a case users write, and every other op that updates
// self and has a functional form. On the xla device they skip torch's
// check on meta tensors (about 40% of an add_'s cost: BENCHMARKS.md, "#36:
// in-place ops without the meta check") and apply the update to the
// tensor's storage at once (set_value_of: torch 1.13 keeps every old
// value until a view syncs, a leak of the tensor's size per op). The
// updates of training (zero_grad, gradient accumulation, the optimizers,
// in-place activations) have unboxed kernels; the rest share a boxed one.
// The out= ops share another (BoxedOutUpdate), for the same leak.
//
// An override replaces torch's kernel for every backend, so each kernel
// here also does what torch's does for tensors that are not on the xla
// device.
#include <ATen/FunctionalTensorWrapper.h>
#include <ATen/Operators.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty_strided.h>
#include <torch/library.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "torch_device/bridge.h"
#include "torch_device/dtypes.h"
#include "torch_device/foreach.h"
#include "torch_device/in_place_values.h"
#include "torch_device/op_schemas.h"

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
  if (!tensor.defined()) return tensor;
  return at::empty_strided(tensor.sizes(), tensor.strides(), tensor.options().device(c10::DeviceType::Meta));
}

template <class T>
bool is_functional(const T&) {
  return false;
}
bool is_functional(const at::Tensor& tensor) { return functional::isFunctionalTensor(tensor); }

// torch's refusal (in its words, which users match) of a result written
// into a tensor of a type it cannot be cast to.
void check_castable(c10::ScalarType result, const at::Tensor& written) {
  TORCH_CHECK(c10::canCast(result, written.scalar_type()), "result type ", result,
              " can't be cast to the desired output type ", written.scalar_type());
}

// self on the xla device takes value, the functional op's: checked for
// what the meta check would have refused and applied to self's storage
// at once.
at::Tensor& take_value(at::Tensor& self, ordo::Tensor value) {
  const c10::IntArrayRef sizes(value.shape().data(), value.shape().size());
  TORCH_CHECK(sizes == self.sizes(), "output with shape ", self.sizes(), " doesn't match the broadcast shape ", sizes);
  check_castable(shown_scalar_type_of(value.dtype()), self);
  set_value_of(self, std::move(value));
  return self;
}

// self elsewhere takes result, the functional op's: the update waits, as
// torch's kernel leaves it.
at::Tensor& take_result(at::Tensor& self, const at::Tensor& result) {
  functional::replace_(self, result);
  functional::commit_update(self);
  functional::sync(self);
  return self;
}

// self = Functional(self, args...), as functionalization writes an
// in-place op. On the xla device the functional op itself refuses bad
// operands (devices, dtypes, alpha), and what remains of the meta check is
// take_value's; its value is kValue's where the op has one
// (in_place_values.h). Elsewhere the op runs on meta tensors first, as
// torch's kernel does.
template <class InPlace, class Functional, auto kValue = nullptr, class Schema = typename InPlace::schema>
struct InPlaceUpdate;

template <class InPlace, class Functional, auto kValue, class... Args>
struct InPlaceUpdate<InPlace, Functional, kValue, at::Tensor&(at::Tensor&, Args...)> {
  static at::Tensor& kernel(at::Tensor& self, Args... args) {
    if (!functional::isFunctionalTensor(self)) {
      TORCH_CHECK(!(is_functional(args) || ...), InPlace::name,
                  ": a tensor that is not functional cannot be updated from a functional one");
      at::AutoDispatchSkipFunctionalize below;
      return InPlace::call(self, args...);
    }
    at::Tensor self_value = unwrapped(self);
    if (self_value.device().type() != c10::DeviceType::XLA) {
      at::Tensor result;
      {
        at::AutoDispatchSkipFunctionalize below;
        at::Tensor self_meta = on_meta(self);
        InPlace::call(self_meta, on_meta(args)...);
        result = Functional::call(self_value, unwrapped(args)...);
      }
      return take_result(self, result);
    }
    ordo::Tensor value;
    {
      at::AutoDispatchSkipFunctionalize below;
      if constexpr (std::is_same_v<decltype(kValue), std::nullptr_t>) {
        value = value_of(Functional::call(self_value, unwrapped(args)...));
      } else {
        value = kValue(self_value, unwrapped(args)...);
      }
    }
    self_value.reset();  // held, it would keep set_value_of from updating self's value in place
    return take_value(self, std::move(value));
  }
};

// An argument with f applied to every tensor it holds (a tensor, or a
// list of tensors or optional ones). A list is copied: the caller's stays
// as it was.
template <class F>
c10::IValue mapped(const c10::IValue& argument, F f) {
  if (argument.isTensor()) return f(argument.toTensor());
  if (!argument.isList()) return argument;
  const c10::List<c10::IValue> list = argument.toList();
  c10::impl::GenericList copy(list.elementType());
  copy.reserve(list.size());
  for (const c10::IValue& element : list) copy.push_back(element.isTensor() ? f(element.toTensor()) : element);
  return copy;
}

bool holds_functional(const c10::IValue& argument) {
  if (argument.isTensor()) return functional::isFunctionalTensor(argument.toTensor());
  if (!argument.isList()) return false;
  const auto& elements = argument.toListRef();
  return std::any_of(elements.begin(), elements.end(), holds_functional);
}

// An update of a tensor that is not functional runs as torch's kernel runs
// it, and none of its arguments may be functional either. Whether it ran.
bool ran_unwrapped(const c10::OperatorHandle& op, const at::Tensor& written, torch::jit::Stack* stack) {
  if (functional::isFunctionalTensor(written)) return false;
  const auto arguments = stack->end() - static_cast<std::ptrdiff_t>(op.schema().arguments().size());
  TORCH_CHECK(std::none_of(arguments, stack->end(), holds_functional), op.schema().name(),
              ": a tensor that is not functional cannot be updated from a functional one");
  at::AutoDispatchSkipFunctionalize below;
  op.callBoxed(stack);
  return true;
}

// The arguments from `from` to the stack's end, as the functional op below
// functionalization takes them.
void unwrap_arguments(torch::jit::Stack::iterator from, torch::jit::Stack* stack) {
  for (auto it = from; it != stack->end(); ++it) *it = mapped(*it, [](const at::Tensor& t) { return unwrapped(t); });
}

// InPlaceUpdate for any other in-place op, boxed: functional_ is the op's
// functional form.
class BoxedInPlaceUpdate final : public c10::OperatorKernel {
 public:
  explicit BoxedInPlaceUpdate(c10::OperatorHandle functional) : functional_(std::move(functional)) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    const auto arguments = stack->end() - static_cast<std::ptrdiff_t>(op.schema().arguments().size());
    at::Tensor self = arguments->toTensor();
    if (ran_unwrapped(op, self, stack)) return;
    const bool on_xla = unwrapped(self).device().type() == c10::DeviceType::XLA;
    at::AutoDispatchSkipFunctionalize below;
    if (!on_xla) {
      torch::jit::Stack meta(arguments, stack->end());
      for (c10::IValue& argument : meta) argument = mapped(argument, [](const at::Tensor& t) { return on_meta(t); });
      op.callBoxed(&meta);
    }
    unwrap_arguments(arguments, stack);
    functional_.callBoxed(stack);
    const at::Tensor result = torch::jit::pop(*stack).toTensor();
    torch::jit::push(*stack, on_xla ? take_value(self, value_of(result)) : take_result(self, result));
  }

 private:
  c10::OperatorHandle functional_;
};

// out = Functional(args...) for an out= op, boxed: functional_ is the op's
// functional form. torch's kernel commits the update without applying it
// (as commit_update does for in-place ops: the storage would keep every
// value out had). On the xla device out takes the value at once, resized
// as torch resizes it, after torch's check that the dtype can be cast.
class BoxedOutUpdate final : public c10::OperatorKernel {
 public:
  explicit BoxedOutUpdate(c10::OperatorHandle functional) : functional_(std::move(functional)) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    const auto arguments = stack->end() - static_cast<std::ptrdiff_t>(op.schema().arguments().size());
    at::Tensor out = stack->back().toTensor();
    if (ran_unwrapped(op, out, stack)) return;
    const bool on_xla = unwrapped(out).device().type() == c10::DeviceType::XLA;
    stack->pop_back();
    unwrap_arguments(arguments, stack);
    {
      at::AutoDispatchSkipFunctionalize below;
      functional_.callBoxed(stack);
    }
    const at::Tensor result = torch::jit::pop(*stack).toTensor();
    if (on_xla) {
      check_castable(result.scalar_type(), out);
      set_value_of(out, value_of(result));
    } else {
      take_result(out, result);
    }
    torch::jit::push(*stack, out);
  }

 private:
  c10::OperatorHandle functional_;
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

template <class InPlace, class Functional, auto kValue = nullptr>
constexpr auto update = TORCH_FN((InPlaceUpdate<InPlace, Functional, kValue>::kernel));

// The dispatcher warns of any kernel that replaces another; these are
// meant to.
struct Silent final : c10::WarningHandler {
  void process(const c10::SourceLocation&, const std::string&, bool) override {}
};

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

// An op with a Functionalize kernel of its own: torch's kernel for it is
// the one to replace (an op that decomposes is left to its parts).
bool functionalized_itself(const c10::OperatorHandle& op) {
  return op.hasKernelForDispatchKey(c10::DispatchKey::Functionalize) &&
         !op.hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd);
}

struct UpdateForm {
  c10::OperatorHandle update;
  c10::OperatorHandle functional;
};

// The in-place ops torch functionalizes as self = functional(self, ...):
// named as their functional form with a trailing underscore (or, for
// normal_, with _functional in its place), writing self and nothing else,
// with a Functionalize kernel of their own (ops that decompose are left to
// their parts), and a functional form of the same arguments (in any
// overload) that returns one new tensor. The updates of lists (_foreach_)
// are foreach.cc's; resize_, _resize_output_ and set_ change storage,
// which torch's kernels handle apart.
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
          std::any_of(arguments.begin() + 1, arguments.end(), writes) || !functionalized_itself(op)) {
        continue;
      }
      if (auto functional = functional_form(name, op.schema())) forms.push_back({op, *functional});
    }
  }
  return forms;
}

// The out= ops torch functionalizes as out = functional(args...): the
// overload "out" of an op, writing its last argument (a tensor) and
// nothing else, whose overloads include exactly one of the same arguments
// less out that returns one new tensor. Ops of several outs (max.dim_max)
// are left to torch.
std::vector<UpdateForm> out_forms(const OpsByName& by_name) {
  std::vector<UpdateForm> forms;
  for (const auto& [name, ops] : by_name) {
    for (const c10::OperatorHandle& op : ops) {
      const c10::FunctionSchema& schema = op.schema();
      const auto& arguments = schema.arguments();
      if (op.operator_name().overload_name != "out" || arguments.empty() || !is_tensor(arguments.back()) ||
          std::count_if(arguments.begin(), arguments.end(), writes) != 1 || !writes(arguments.back()) ||
          !functionalized_itself(op)) {
        continue;
      }
      std::vector<c10::OperatorHandle> functionals;
      for (const c10::OperatorHandle& functional : ops) {
        if (returns_a_new_tensor(functional.schema()) && same_arguments(schema, functional.schema(), 1)) {
          functionals.push_back(functional);
        }
      }
      if (functionals.size() == 1) forms.push_back({op, functionals.front()});
    }
  }
  return forms;
}

}  // namespace

void register_functionalize_kernels() {
  static Silent silent;
  c10::Warning::WarningHandlerGuard quiet(&silent);
  static torch::Library library(torch::Library::IMPL, "aten", c10::DispatchKey::Functionalize, __FILE__, __LINE__);
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
