// ordo's Functionalize kernels for the ops on lists of tensors
// (_foreach_add_, _foreach_addcmul, ... : torch.optim's foreach=True).
// torch 1.13's own run each op on meta tensors first, which these ops
// have no kernel for, so on the xla device they failed. Each is its element
// op at each index instead, whose update the in-place kernels apply at once.
#pragma once

#include <torch/library.h>

#include "torch_device/op_schemas.h"

namespace ordo::torch_device {

// Registers a kernel in library (aten, Functionalize) for every _foreach_
// op whose element op by_name has: "_foreach_X[.O]" applied as the overload
// of "X" whose leading arguments are its own with each list an element
// (Tensor[] a Tensor, Scalar[] a Scalar) and whose other arguments have
// defaults. An in-place list op without an in-place element op takes the
// functional one and copies each result back.
void register_foreach_kernels(torch::Library& library, const OpsByName& by_name);

}  // namespace ordo::torch_device
