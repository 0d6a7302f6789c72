// Gradient rules: one per IR op, in one table (rule_table.cc) generated from
// ir/op_list.def, so an op without a rule does not link. A rule gets the
// op's record (its inputs, attrs, output types) and the gradient of each
// output (undefined: nothing reached that output, i.e. zero), and returns
// the gradient of each input (undefined: none, as for an index or a
// condition). Rules are written with ordo's own tensor ops, so the backward
// pass is lazy IR in the same graph as the forward one. An op whose
// gradient stops (comparisons, argmax, integer casts) says so with
// stops_gradient; one whose rule cannot apply (all_reduce with max) throws
// InvalidArgument naming the op.
#pragma once

#include <span>
#include <vector>

#include "ir/op_attrs.h"
#include "lazy/autograd_state.h"
#include "lazy/tensor_impl.h"
#include "ordo/tensor.h"

namespace ordo::autograd {

struct BackwardCall {
  const lazy::GradRecord& record;
  std::span<const Tensor> grads;  // one per output of the record

  const Tensor& input(size_t i) const { return record.inputs[i]; }
  // The op's attributes, read as the struct op_list.def names for it
  // (ir/op_attrs.h); views in them live as long as the record.
  template <typename T>
  T attrs_as() const {
    return ir::decode<T>(record.op, record.attrs);
  }
  // Whether input i needs a gradient (a constant or an index does not).
  bool needs(size_t i) const { return record.inputs[i].impl()->requires_grad(); }
  // The one output's gradient, zeros if it is undefined.
  Tensor grad(size_t i = 0) const;
};

using Gradients = std::vector<Tensor>;  // one per input of the record
using Rule = Gradients (*)(const BackwardCall& call);

Rule rule_for(ir::OpKind op);

// Every rule of the op list, declared here and defined in rules_*.cc.
#define ORDO_OP(name, str, group, attrs) Gradients backward_##name(const BackwardCall& call);
#include "ir/op_list.def"
#undef ORDO_OP

// ---- Shared by the rules. ----

// No input gets a gradient.
Gradients stops_gradient(const BackwardCall& call);
// g summed over the axes that broadcasting added or stretched, so that it
// has shape (numpy broadcasting, the inverse of broadcast_to).
Tensor sum_to_shape(const Tensor& g, const Shape& shape);
// zeros of x's dtype and shape on x's device.
Tensor zeros_like(const Tensor& x);

}  // namespace ordo::autograd
