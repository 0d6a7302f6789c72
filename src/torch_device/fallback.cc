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

}  // namespace

void fall_back_to_cpu(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const size_t arguments = op.schema().arguments().size();
  metrics::count_named(op.schema().name(), device_among(*stack, arguments));
  at::native::cpu_fallback(op, stack);
}

TORCH_LIBRARY_IMPL(_, XLA, m) { m.fallback(torch::CppFunction::makeFromBoxedFunction<&fall_back_to_cpu>()); }

}  // namespace ordo::torch_device
