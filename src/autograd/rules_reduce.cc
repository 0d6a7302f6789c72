// Gradient rules of the reductions and of matmul.
#include "autograd/rules.h"
#include "lazy/shape_inference.h"

namespace ordo::autograd {
namespace {

std::vector<int64_t> reduced_axes(const BackwardCall& call) {
  const std::span<const int64_t> axes = call.attrs_as<ir::ReduceAttrs>().axes;
  return {axes.begin(), axes.end()};
}

// The output's gradient with the reduced axes back (size 1), then stretched
// over the input's shape.
Tensor spread(const BackwardCall& call, const Tensor& g) {
  const Tensor& x = call.input(0);
  Shape kept = x.shape();
  const std::vector<int64_t> axes = reduced_axes(call);
  for (int64_t axis : axes) kept[static_cast<size_t>(axis)] = 1;
  if (axes.empty()) kept.assign(kept.size(), 1);
  return broadcast_to(reshape(g, kept), x.shape());
}

// max and min as PyTorch 1.13's amax/amin (and max() without a dim): the
// gradient is shared evenly by the elements equal to the result.
Gradients extreme(const BackwardCall& call,
                  Tensor (*reduce)(const Tensor&, const std::vector<int64_t>&, bool, Caller)) {
  const Tensor& x = call.input(0);
  const Tensor extremes = reduce(x, reduced_axes(call), true, Caller::current());
  const Tensor hit = cast(eq(x, broadcast_to(extremes, x.shape())), x.dtype());
  const Tensor ties = broadcast_to(sum(hit, reduced_axes(call), true), x.shape());
  return {spread(call, call.grad()) / ties * hit};
}

}  // namespace

Gradients backward_Sum(const BackwardCall& call) { return {spread(call, call.grad())}; }

Gradients backward_Mean(const BackwardCall& call) {
  const Tensor& x = call.input(0);
  const int64_t count = x.numel() / std::max<int64_t>(1, shape_numel(call.record.outputs[0].shape));
  return {spread(call, call.grad()) / static_cast<double>(count)};
}

Gradients backward_Max(const BackwardCall& call) { return extreme(call, &max); }
Gradients backward_Min(const BackwardCall& call) { return extreme(call, &min); }
Gradients backward_Argmax(const BackwardCall& call) { return stops_gradient(call); }

// numpy.matmul's 1-D operands are a row (a) or a column (b); batch
// dimensions broadcast, so each gradient is summed back to its operand.
Gradients backward_Matmul(const BackwardCall& call) {
  const Tensor& a = call.input(0);
  const Tensor& b = call.input(1);
  const Tensor a2 = a.dim() == 1 ? reshape(a, {1, a.shape()[0]}) : a;
  const Tensor b2 = b.dim() == 1 ? reshape(b, {b.shape()[0], 1}) : b;
  const Shape& sa = a2.shape();
  const Shape& sb = b2.shape();
  Shape out = lazy::broadcast_shapes("matmul", Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2));
  out.push_back(sa[sa.size() - 2]);
  out.push_back(sb.back());
  const Tensor g = reshape(call.grad(), out);
  Gradients grads(2);
  if (call.needs(0)) grads[0] = reshape(sum_to_shape(matmul(g, transpose(b2, -1, -2)), a2.shape()), a.shape());
  if (call.needs(1)) grads[1] = reshape(sum_to_shape(matmul(transpose(a2, -1, -2), g), b2.shape()), b.shape());
  return grads;
}

}  // namespace ordo::autograd
