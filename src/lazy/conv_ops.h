// The convolution nodes without the user-facing checks: what conv1d/conv2d
// record once their arguments passed, and what the gradient rules record
// (autograd/rules_conv.cc), whose operands fit by construction. Each takes
// the geometry its node records.
#pragma once

#include "ir/conv_attrs.h"
#include "ordo/tensor.h"

namespace ordo::lazy {

// x [N, C, *in] convolved with w [O, C / groups, *k].
Tensor conv(const Tensor& x, const Tensor& w, const ir::ConvAttrs& conv);
// The gradient of conv's x from its output's gradient g: x_shape is x's.
Tensor conv_input_grad(const Tensor& g, const Tensor& w, const ir::ConvAttrs& conv, const Shape& x_shape);
// The gradient of conv's w from x and the output's gradient g: w_shape is w's.
Tensor conv_weight_grad(const Tensor& x, const Tensor& g, const ir::ConvAttrs& conv, const Shape& w_shape);

}  // namespace ordo::lazy
