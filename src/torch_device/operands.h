// What the kernels share: torch's operands as ordo values of the dtype
// torch's type promotion gives, on the xla device they live on.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/core/SymIntArrayRef.h>

#include <optional>
#include <vector>

#include "ordo/ordo.h"

namespace ordo::torch_device {

ordo::Scalar scalar_of(const c10::Scalar& value);
// The xla device of the first xla tensor among tensors.
int device_of(std::initializer_list<const at::Tensor*> tensors, const char* op);
// tensor as an ordo value of dtype on device: an xla tensor's value (cast
// if needed), a CPU scalar (a Python number torch wrapped, or a 0-d
// tensor) as a constant of the graph. Other CPU tensors are an error
// naming op, as torch's own devices report a mix.
ordo::Tensor operand(const at::Tensor& tensor, DType dtype, int device, const char* op);
ordo::Tensor constant(const c10::Scalar& value, DType dtype, int device);
ordo::Tensor cast_to(const ordo::Tensor& value, DType dtype);

Shape ints_of(c10::SymIntArrayRef sizes);
Shape ints_of(c10::IntArrayRef sizes);
// dim counted from the end when negative, checked against rank.
int64_t wrap_dim(int64_t dim, int64_t rank, const char* op);
// The permutation that undoes order (a permute's dims).
std::vector<int64_t> inverse_order(const std::vector<int64_t>& order);
// The dims a reduction names (none: every dim), wrapped.
std::vector<int64_t> reduced_dims(c10::OptionalIntArrayRef dims, int64_t rank, const char* op);

}  // namespace ordo::torch_device
