// The fallback to PyTorch's CPU kernels (fallback.cc), for a kernel that
// lowers only some cases of its op and hands the rest over:
//
//   return at::native::call_fallback_fn<&fall_back_to_cpu, ATEN_OP(convolution)>::call(...);
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

namespace ordo::torch_device {

// Counts the op as aten::<name>, then runs it on the CPU.
void fall_back_to_cpu(const c10::OperatorHandle& op, torch::jit::Stack* stack);

}  // namespace ordo::torch_device
