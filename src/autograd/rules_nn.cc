// Gradient rules of pooling and batch norm. The forward ops' gradients are
// their backward ops (lazy/pool_ops.h); those are linear in the output's
// gradient, so their own rules are the matching forward (the adjoint of an
// adjoint): average pooling for spreading a mean, the values at each
// window's maximum for max pooling.
#include "autograd/rules.h"
#include "lazy/pool_ops.h"
#include "ordo/nn_ops.h"

namespace ordo::autograd {
namespace {

// x's values at flat plane indices (N, C, OH, OW) of an (N, C, H, W) x.
Tensor pick_in_planes(const Tensor& x, const Tensor& indices) {
  const Shape& s = x.shape();
  const Shape& o = indices.shape();
  const Tensor flat = reshape(x, {s[0], s[1], s[2] * s[3]});
  return reshape(gather(flat, 2, reshape(indices, {o[0], o[1], o[2] * o[3]})), o);
}

Shape spatial(const Shape& shape) { return {shape[2], shape[3]}; }

}  // namespace

Gradients backward_MaxPool2d(const BackwardCall& call) {
  const Tensor& x = call.input(0);
  return {lazy::max_pool2d_backward(call.grad(0), x, call.attrs_as<ir::MaxPoolAttrs>())};
}

// Linear in grad (its gradient: the values at each maximum); x only picks
// where the maxima are, which moves nothing almost everywhere.
Gradients backward_MaxPool2dBackward(const BackwardCall& call) {
  const Tensor& grad = call.input(0);
  const Tensor& x = call.input(1);
  Gradients grads(2);
  if (call.needs(0)) {
    const Tensor indices = lazy::max_pool2d_indices(x, call.attrs_as<ir::MaxPoolAttrs>(), grad.shape());
    grads[0] = pick_in_planes(call.grad(), indices);
  }
  return grads;
}

Gradients backward_AvgPool2d(const BackwardCall& call) {
  return {lazy::avg_pool2d_backward(call.grad(), call.attrs_as<ir::AvgPoolAttrs>(), call.input(0).shape())};
}

Gradients backward_AvgPool2dBackward(const BackwardCall& call) {
  return {lazy::avg_pool2d_forward(call.grad(), call.attrs_as<ir::AvgPoolAttrs>(), call.input(0).shape())};
}

Gradients backward_AdaptiveAvgPool2d(const BackwardCall& call) {
  return {lazy::adaptive_avg_pool2d_backward(call.grad(), call.input(0).shape())};
}

Gradients backward_AdaptiveAvgPool2dBackward(const BackwardCall& call) {
  const Shape out = spatial(call.input(0).shape());
  return {adaptive_avg_pool2d(call.grad(), {out[0], out[1]})};
}

Gradients backward_BatchNormTraining(const BackwardCall& call) {
  const lazy::BatchNormGradients g = lazy::batch_norm_training_backward(
      call.grad(0), call.input(0), call.input(1), call.grad(1), call.grad(2), call.attrs_as<ir::BatchNormAttrs>().eps);
  Gradients grads(3);
  if (call.needs(0)) grads[0] = g.input;
  if (call.needs(1)) grads[1] = g.weight;
  if (call.needs(2)) grads[2] = g.bias;
  return grads;
}

Gradients backward_BatchNormTrainingBackward(const BackwardCall&) {
  throw InvalidArgument(
      "batch_norm_training_backward: batch norm's gradient cannot be differentiated again (no double backward)");
}

}  // namespace ordo::autograd
