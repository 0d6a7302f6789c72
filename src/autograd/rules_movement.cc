// Gradient rules of the movement ops: each puts the output's gradient back
// where the input's elements came from; picking by index adds back with a
// scatter-add (several picks of one element add up, in a fixed order).
#include "autograd/rules.h"

namespace ordo::autograd {
namespace {

// Zeros of x's dtype with shape, except that dimension axis has size.
Tensor zeros_along(const Tensor& x, int64_t axis, int64_t size) {
  Shape shape = x.shape();
  shape[static_cast<size_t>(axis)] = size;
  return zeros(shape, x.dtype(), x.device());
}

// g, which covers [start, start + g's size) of dimension axis of a tensor
// whose dimension has size, with zeros around it.
Tensor pad_along(const Tensor& g, int64_t axis, int64_t start, int64_t size) {
  const int64_t covered = g.shape()[static_cast<size_t>(axis)];
  std::vector<Tensor> pieces;
  if (start > 0) pieces.push_back(zeros_along(g, axis, start));
  pieces.push_back(g);
  if (size - start - covered > 0) pieces.push_back(zeros_along(g, axis, size - start - covered));
  return pieces.size() == 1 ? g : concat(pieces, axis);
}

}  // namespace

Gradients backward_Reshape(const BackwardCall& call) { return {reshape(call.grad(), call.input(0).shape())}; }

Gradients backward_Permute(const BackwardCall& call) {
  const std::span<const int64_t> perm = call.attrs_as<ir::PermuteAttrs>().permutation;
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return {permute(call.grad(), inverse)};
}

// A slice with step s took every s-th element from start: the gradient
// goes back with s - 1 zeros after each of its elements.
Gradients backward_Slice(const BackwardCall& call) {
  const Tensor& x = call.input(0);
  const auto [axis, start, step] = call.attrs_as<ir::SliceAttrs>();
  const int64_t size = x.shape()[static_cast<size_t>(axis)];
  Tensor g = call.grad();
  const int64_t taken = g.shape()[static_cast<size_t>(axis)];
  if (taken == 0) return {zeros_like(x)};
  if (step > 1 && taken > 1) {
    Shape split = g.shape();
    split.insert(split.begin() + axis + 1, 1);
    Tensor spaced = reshape(g, split);
    Shape gap = split;
    gap[static_cast<size_t>(axis + 1)] = step - 1;
    spaced = concat({spaced, zeros(gap, g.dtype(), g.device())}, axis + 1);
    Shape merged = g.shape();
    merged[static_cast<size_t>(axis)] = taken * step;
    // The last element has no gap after it within the input.
    g = slice(reshape(spaced, merged), axis, 0, (taken - 1) * step + 1);
  }
  return {pad_along(g, axis, start, size)};
}

Gradients backward_Concat(const BackwardCall& call) {
  const int64_t axis = call.attrs_as<ir::AxisAttrs>().axis;
  const Tensor g = call.grad();
  Gradients grads(call.record.inputs.size());
  int64_t offset = 0;
  for (size_t i = 0; i < grads.size(); ++i) {
    const int64_t size = call.input(i).shape()[static_cast<size_t>(axis)];
    if (call.needs(i)) grads[i] = slice(g, axis, offset, offset + size);
    offset += size;
  }
  return grads;
}

Gradients backward_BroadcastTo(const BackwardCall& call) {
  return {sum_to_shape(call.grad(), call.input(0).shape())};
}

Gradients backward_IndexSelect(const BackwardCall& call) {
  const Tensor& x = call.input(0);
  return {index_add(zeros_like(x), call.attrs_as<ir::AxisAttrs>().axis, call.input(1), call.grad()), Tensor()};
}

Gradients backward_Gather(const BackwardCall& call) {
  const Tensor& x = call.input(0);
  return {scatter_add(zeros_like(x), call.attrs_as<ir::AxisAttrs>().axis, call.input(1), call.grad()), Tensor()};
}

Gradients backward_ScatterAdd(const BackwardCall& call) {
  const Tensor g = call.grad();
  Gradients grads(3);
  if (call.needs(0)) grads[0] = g;
  if (call.needs(2)) grads[2] = gather(g, call.attrs_as<ir::AxisAttrs>().axis, call.input(1));
  return grads;
}

Gradients backward_OneHot(const BackwardCall& call) { return stops_gradient(call); }

}  // namespace ordo::autograd
