// Reverse-mode automatic differentiation, recorded lazily: the backward
// pass is more IR in the device's graph, so the forward pass, the backward
// pass, the optimizer's update and the collectives of a training step are
// one graph, compiled once and a cache hit from the second step on.
//
//   ordo::Tensor w = ordo::from_vector<double>({1, 2, 3}, {3});
//   w.set_requires_grad();
//   ordo::Tensor loss = ordo::sum(w * w);
//   loss.backward();                       // w.grad() is 2 * w, still lazy
//   { ordo::NoGradGuard no_grad; w.assign(w - w.grad() * 0.1); }
//   ordo::mark_step();                     // forward, backward, update: one graph
//
// A gradient rule exists for every op (src/autograd/rules.h); comparisons,
// argmax, integer casts and indices stop the gradient. Collectives are
// differentiable: a sum all_reduce's gradient is a sum all_reduce,
// all_gather's a sum reduce_scatter (and back), all_to_all's an all_to_all
// with the dimensions swapped, collective_permute's the inverse permutation;
// they take and return the cc token like any collective, and every device
// of an SPMD program issues them in the same order. all_reduce or
// reduce_scatter with another reduction than sum cannot be differentiated
// (InvalidArgument when a backward pass reaches one).
#pragma once

#include <vector>

#include "ordo/tensor.h"

namespace ordo {

// The gradients of output (one element, or weighted by seed, which has
// output's shape and dtype) with respect to each input, which must require
// a gradient; an input output does not depend on gets zeros. Nothing
// accumulates into .grad().
std::vector<Tensor> grad(const Tensor& output, const std::vector<Tensor>& inputs, const Tensor& seed = {},
                         Caller caller = Caller::current());
// Several outputs: the sum of their gradients (seeds: one per output, or
// empty when every output has one element).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& seeds, Caller caller = Caller::current());

// Whether ops of the calling thread record gradients (on by default).
bool is_grad_enabled();
void set_grad_enabled(bool enabled);

// While alive, the calling thread's ops record no gradient (an optimizer's
// update, evaluation).
class NoGradGuard {
 public:
  NoGradGuard() : previous_(is_grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace ordo
