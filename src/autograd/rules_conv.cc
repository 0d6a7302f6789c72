// Gradient rules of the convolutions. Conv is linear in each operand, and
// its two gradients are its adjoints: ConvInputGrad(g, w) is conv's
// transpose in x, ConvWeightGrad(x, g) its transpose in w. So each of the
// three ops' gradients is made of the three ops again. The bias is an add
// (lazy/conv_ops.cc): the add's rule gives its gradient.
#include "autograd/rules.h"
#include "lazy/conv_ops.h"

namespace ordo::autograd {
namespace {

// The two operands' gradients, each a function of the output's gradient h,
// made only where an operand needs one.
template <typename First, typename Second>
Gradients operands_grads(const BackwardCall& call, First first, Second second) {
  const Tensor h = call.grad();
  Gradients grads(2);
  if (call.needs(0)) grads[0] = first(h);
  if (call.needs(1)) grads[1] = second(h);
  return grads;
}

}  // namespace

// y = conv(x, w): dx = ConvInputGrad(g, w), dw = ConvWeightGrad(x, g).
Gradients backward_Conv(const BackwardCall& call) {
  const Tensor &x = call.input(0), &w = call.input(1);
  const auto conv = call.attrs_as<ir::ConvAttrs>();
  return operands_grads(
      call, [&](const Tensor& g) { return lazy::conv_input_grad(g, w, conv, x.shape()); },
      [&](const Tensor& g) { return lazy::conv_weight_grad(x, g, conv, w.shape()); });
}

// dx = ConvInputGrad(g, w), the pairing <h, dx> = <conv(h, w), g>: h's
// convolution with w for g, and ConvWeightGrad(h, g) for w.
Gradients backward_ConvInputGrad(const BackwardCall& call) {
  const Tensor &g = call.input(0), &w = call.input(1);
  const auto conv = call.attrs_as<ir::ConvAttrs>();
  return operands_grads(
      call, [&](const Tensor& h) { return lazy::conv(h, w, conv); },
      [&](const Tensor& h) { return lazy::conv_weight_grad(h, g, conv, w.shape()); });
}

// dw = ConvWeightGrad(x, g), the pairing <h, dw> = <conv(x, h), g>:
// ConvInputGrad(g, h) for x and x's convolution with h for g.
Gradients backward_ConvWeightGrad(const BackwardCall& call) {
  const Tensor &x = call.input(0), &g = call.input(1);
  const auto conv = call.attrs_as<ir::ConvAttrs>();
  return operands_grads(
      call, [&](const Tensor& h) { return lazy::conv_input_grad(g, h, conv, x.shape()); },
      [&](const Tensor& h) { return lazy::conv(x, h, conv); });
}

}  // namespace ordo::autograd
