// The xla kernels of the ops on lists of tensors (_foreach_add_,
// _foreach_addcmul, ... : torch.optim's foreach=True). torch 1.13 has them
// for the CPU and CUDA only, so on the xla device they would fall back:
// each is its element op at each index instead, traced as any other op.
#pragma once

#include <torch/library.h>

#include "torch_device/op_schemas.h"

namespace ordo::torch_device {

// Registers a kernel in library (aten, XLA) for every _foreach_
// op whose element op by_name has: "_foreach_X[.O]" applied as the overload
// of "X" whose leading arguments are its own with each list an element
// (Tensor[] a Tensor, Scalar[] a Scalar) and whose other arguments have
// defaults. An in-place list op without an in-place element op takes the
// functional one and copies each result back.
void register_foreach_kernels(torch::Library& library, const OpsByName& by_name);

}  // namespace ordo::torch_device
