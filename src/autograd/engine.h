// The backward pass (engine.cc): what ordo::grad and Tensor::backward share.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "ordo/tensor.h"

namespace ordo::autograd {

struct Targets {
  std::vector<Tensor> tensors;          // whose gradients run_backward returns, in this order
  bool accumulate_into_leaves = false;  // backward(): add into each leaf's grad()
};

// Traces the gradients of outputs (weighted by seeds: one per output, or
// none when each output has one element) and returns those of
// targets.tensors (undefined where no gradient reached). `what` names the
// caller in errors, which come before anything is traced.
std::vector<Tensor> run_backward(std::string_view what, std::span<const Tensor> outputs,
                                 std::span<const Tensor> seeds, const Targets& targets);

}  // namespace ordo::autograd
