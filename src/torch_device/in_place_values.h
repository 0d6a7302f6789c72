// The values of the functional ops behind training's in-place updates, as
// their xla kernels compute them (aten_elementwise.cc): an update on the
// xla device sets this value in self (in_place.cc) with no tensor of
// the functional op made, dispatched and dropped. Named after torch's
// overloads (add.Tensor: add_Tensor).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

#include "ordo/tensor.h"

namespace ordo::torch_device::in_place_values {

ordo::Tensor add_Tensor(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha);
ordo::Tensor add_Scalar(const at::Tensor& self, const at::Scalar& other, const at::Scalar& alpha);
ordo::Tensor sub_Tensor(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha);
ordo::Tensor sub_Scalar(const at::Tensor& self, const at::Scalar& other, const at::Scalar& alpha);
ordo::Tensor mul_Tensor(const at::Tensor& self, const at::Tensor& other);
ordo::Tensor mul_Scalar(const at::Tensor& self, const at::Scalar& other);
ordo::Tensor div_Tensor(const at::Tensor& self, const at::Tensor& other);
ordo::Tensor div_Scalar(const at::Tensor& self, const at::Scalar& other);
ordo::Tensor addcmul(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const at::Scalar& value);
ordo::Tensor addcdiv(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const at::Scalar& value);

}  // namespace ordo::torch_device::in_place_values
