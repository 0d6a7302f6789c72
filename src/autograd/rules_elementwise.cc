// Gradient rules of the elementwise ops. Broadcast operands get their
// gradient summed back to their shape; ties and kinks follow PyTorch 1.13
// (abs and relu give 0 at 0; maximum and minimum split a tie in halves).
#include <numbers>

#include "autograd/rules.h"

namespace ordo::autograd {
namespace {

Tensor zero_like(const Tensor& g) { return scalar_like(0.0, g); }

// For the binary ops: each operand's gradient, summed to its shape.
Gradients to_operands(const BackwardCall& call, const Tensor& ga, const Tensor& gb) {
  Gradients out(2);
  if (call.needs(0)) out[0] = sum_to_shape(ga, call.input(0).shape());
  if (call.needs(1)) out[1] = sum_to_shape(gb, call.input(1).shape());
  return out;
}

}  // namespace

Gradients backward_Neg(const BackwardCall& call) { return {neg(call.grad())}; }

Gradients backward_Abs(const BackwardCall& call) {
  const Tensor& x = call.input(0);
  const Tensor g = call.grad();
  const Tensor zero = zero_like(g);
  return {where(gt(x, zero), g, where(lt(x, zero), neg(g), zero))};
}

Gradients backward_Exp(const BackwardCall& call) { return {call.grad() * exp(call.input(0))}; }
Gradients backward_Log(const BackwardCall& call) { return {call.grad() / call.input(0)}; }
Gradients backward_Sqrt(const BackwardCall& call) { return {call.grad() / (sqrt(call.input(0)) * 2.0)}; }
Gradients backward_Rsqrt(const BackwardCall& call) {
  const Tensor r = rsqrt(call.input(0));
  return {call.grad() * (r * r * r) * -0.5};
}
Gradients backward_Tanh(const BackwardCall& call) {
  const Tensor t = tanh(call.input(0));
  return {call.grad() * (1.0 - t * t)};
}
Gradients backward_Sigmoid(const BackwardCall& call) {
  const Tensor s = sigmoid(call.input(0));
  return {call.grad() * ((1.0 - s) * s)};
}
Gradients backward_Relu(const BackwardCall& call) {
  const Tensor g = call.grad();
  return {where(gt(call.input(0), zero_like(g)), g, zero_like(g))};
}
Gradients backward_Erf(const BackwardCall& call) {
  const Tensor& x = call.input(0);
  return {call.grad() * exp(neg(x * x)) * (2.0 * std::numbers::inv_sqrtpi)};
}
Gradients backward_LogicalNot(const BackwardCall& call) { return stops_gradient(call); }

// Between float types the gradient is cast back; from or to an integer
// type it stops (such an output never records a gradient).
Gradients backward_Cast(const BackwardCall& call) {
  if (!is_floating(call.input(0).dtype())) return stops_gradient(call);
  return {cast(call.grad(), call.input(0).dtype())};
}

Gradients backward_Add(const BackwardCall& call) { return to_operands(call, call.grad(), call.grad()); }
Gradients backward_Sub(const BackwardCall& call) { return to_operands(call, call.grad(), neg(call.grad())); }
Gradients backward_Mul(const BackwardCall& call) {
  const Tensor g = call.grad();
  return to_operands(call, g * call.input(1), g * call.input(0));
}
Gradients backward_Div(const BackwardCall& call) {
  const Tensor g = call.grad();
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  return to_operands(call, g / b, neg(g) * a / (b * b));
}

// As PyTorch: 0 where the exponent is 0 (for the base) and where the base is
// 0 with a non-negative exponent (for the exponent), not nan.
Gradients backward_Pow(const BackwardCall& call) {
  const Tensor g = call.grad();
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  const Tensor zero = zero_like(g);
  Tensor ga, gb;
  if (call.needs(0)) ga = where(eq(b, zero), zero, g * b * pow(a, b - 1.0));
  if (call.needs(1)) gb = g * where(logical_and(eq(a, zero), ge(b, zero)), zero, pow(a, b) * log(a));
  return to_operands(call, ga, gb);
}

namespace {

// maximum and minimum: the operand that lost (a_lost(a, b) for a, a_lost(b,
// a) for b) gets nothing, a tie gives each half.
Gradients extreme_of_two(const BackwardCall& call, Tensor (*a_lost)(const Tensor&, const Tensor&, Caller)) {
  const Tensor g = call.grad();
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  const Tensor zero = zero_like(g);
  const Tensor shared = where(eq(a, b), g / 2.0, g);
  return to_operands(call, where(a_lost(a, b, Caller::current()), zero, shared),
                     where(a_lost(b, a, Caller::current()), zero, shared));
}

}  // namespace

Gradients backward_Maximum(const BackwardCall& call) { return extreme_of_two(call, &lt); }
Gradients backward_Minimum(const BackwardCall& call) { return extreme_of_two(call, &gt); }

Gradients backward_Eq(const BackwardCall& call) { return stops_gradient(call); }
Gradients backward_Ne(const BackwardCall& call) { return stops_gradient(call); }
Gradients backward_Lt(const BackwardCall& call) { return stops_gradient(call); }
Gradients backward_Le(const BackwardCall& call) { return stops_gradient(call); }
Gradients backward_Gt(const BackwardCall& call) { return stops_gradient(call); }
Gradients backward_Ge(const BackwardCall& call) { return stops_gradient(call); }
Gradients backward_LogicalAnd(const BackwardCall& call) { return stops_gradient(call); }
Gradients backward_LogicalOr(const BackwardCall& call) { return stops_gradient(call); }

// The condition gets none; each branch the gradient where it was chosen.
Gradients backward_Where(const BackwardCall& call) {
  const Tensor g = call.grad();
  const Tensor& condition = call.input(0);
  const Tensor zero = zero_like(g);
  Gradients out(3);
  if (call.needs(1)) out[1] = sum_to_shape(where(condition, g, zero), call.input(1).shape());
  if (call.needs(2)) out[2] = sum_to_shape(where(condition, zero, g), call.input(2).shape());
  return out;
}

// Leaves and random numbers have no inputs that could take a gradient.
Gradients backward_DeviceData(const BackwardCall& call) { return stops_gradient(call); }
Gradients backward_Full(const BackwardCall& call) { return stops_gradient(call); }
Gradients backward_Arange(const BackwardCall& call) { return stops_gradient(call); }
Gradients backward_CcToken(const BackwardCall& call) { return stops_gradient(call); }
Gradients backward_RandomUniform(const BackwardCall& call) { return stops_gradient(call); }

}  // namespace ordo::autograd
