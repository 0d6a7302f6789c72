// Every aten op the kernels here do not lower runs on PyTorch's CPU
// kernels: its xla inputs read back, its outputs uploaded, its mutated
// inputs written back (at::native::cpu_fallback). Each such op is counted
// as "aten::<name>" in ordo's metrics, as torch_xla counts them: a
// fallback cuts the step's graph, so a user should see it.
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include "core/named_counters.h"
#include "ordo/runtime.h"
#include "torch_device/bridge.h"
#include "torch_device/fallback.h"

namespace ordo::torch_device {
namespace {

int device_among(const torch::jit::Stack& stack, size_t arguments) {
  for (size_t i = stack.size() - arguments; i < stack.size(); ++i) {
    if (stack[i].isTensor() && is_xla(stack[i].toTensor())) return value_of(stack[i].toTensor()).device();
  }
  return ordo::current_device();
}

// cpu_fallback moves tensors and tensor lists to the CPU, not the tensors
// of a list of optional tensors (index.Tensor's and index_put_'s indices):
// those move here, read back as any input.
void move_optional_tensor_lists_to_cpu(torch::jit::Stack& stack, size_t arguments) {
  for (size_t i = stack.size() - arguments; i < stack.size(); ++i) {
    if (!stack[i].isList()) continue;
    const c10::List<c10::IValue> list = stack[i].toList();
    if (list.elementType()->kind() != c10::TypeKind::OptionalType) continue;
    c10::List<c10::IValue> moved(list.elementType());  // a copy: the caller's list stays as it was
    for (const c10::IValue& item : list) {
      moved.push_back(item.isTensor() && is_xla(item.toTensor()) ? c10::IValue(item.toTensor().cpu()) : item);
    }
    stack[i] = std::move(moved);
  }
}

}  // namespace

void fall_back_to_cpu(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const size_t arguments = op.schema().arguments().size();
  metrics::count_named(op.schema().name(), device_among(*stack, arguments));
  move_optional_tensor_lists_to_cpu(*stack, arguments);
  at::native::cpu_fallback(op, stack);
}

TORCH_LIBRARY_IMPL(_, XLA, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&fall_back_to_cpu>()); }

}  // namespace ordo::torch_device
