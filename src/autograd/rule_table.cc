#include <iterator>

#include "autograd/rules.h"
#include "core/check.h"

namespace ordo::autograd {
namespace {

constexpr Rule kRules[] = {
#define ORDO_OP(name, str, group, attrs) &backward_##name,
#include "ir/op_list.def"
#undef ORDO_OP
};
static_assert(std::size(kRules) == ir::kNumOps, "one gradient rule per op of op_list.def");

}  // namespace

Rule rule_for(ir::OpKind op) {
  const int index = static_cast<int>(op);
  ORDO_CHECK(index >= 0 && index < ir::kNumOps, ": op ", index, " is not in op_list.def");
  return kRules[index];
}

Tensor BackwardCall::grad(size_t i) const {
  if (grads[i].defined()) return grads[i];
  const ir::ValueType& type = record.outputs[i];
  return zeros(type.shape, type.dtype, record.inputs.front().device());
}

Gradients stops_gradient(const BackwardCall& call) { return Gradients(call.record.inputs.size()); }

Tensor zeros_like(const Tensor& x) { return zeros(x.shape(), x.dtype(), x.device()); }

Tensor sum_to_shape(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  const int64_t lead = g.dim() - static_cast<int64_t>(shape.size());
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < g.dim(); ++d) {
    if (d < lead || (shape[static_cast<size_t>(d - lead)] == 1 && g.shape()[d] != 1)) axes.push_back(d);
  }
  Tensor summed = axes.empty() ? g : sum(g, axes, /*keepdim=*/true);
  return reshape(summed, shape);
}

}  // namespace ordo::autograd
