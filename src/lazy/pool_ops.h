// The pooling and batch norm ops that the gradient rules record
// (autograd/rules_nn.cc). Each traces one op over tensors its forward op
// already checked, with the forward's attrs.
#pragma once

#include "ir/op_attrs.h"
#include "ordo/tensor.h"

namespace ordo::lazy {

// The gradient of max_pool2d's input: grad added at each window's maximum
// of x (with_indices is not read).
Tensor max_pool2d_backward(const Tensor& grad, const Tensor& x, const ir::MaxPoolAttrs& pool);
// The index of each window's maximum (with_indices is not read).
Tensor max_pool2d_indices(const Tensor& x, const ir::MaxPoolAttrs& pool, const Shape& output_shape);
// avg_pool2d with given attrs and output shape, and its adjoint (grad
// spread over each window) onto input_shape.
Tensor avg_pool2d_forward(const Tensor& x, const ir::AvgPoolAttrs& pool, const Shape& output_shape);
Tensor avg_pool2d_backward(const Tensor& grad, const ir::AvgPoolAttrs& pool, const Shape& input_shape);
Tensor adaptive_avg_pool2d_backward(const Tensor& grad, const Shape& input_shape);

struct BatchNormGradients {
  Tensor input, weight, bias;
};
// The gradients of batch_norm_training's inputs from its outputs' (each
// defined: zeros where nothing reached an output).
BatchNormGradients batch_norm_training_backward(const Tensor& grad_output, const Tensor& x, const Tensor& weight,
                                                const Tensor& grad_mean, const Tensor& grad_var, double eps);

}  // namespace ordo::lazy
