// Gradient rules of the collectives, as JAX transposes them: a sum
// all_reduce's is a sum all_reduce, all_gather's a sum reduce_scatter and
// back, all_to_all's an all_to_all with the dimensions swapped, a
// permutation's the inverse permutation, a broadcast's a sum to the root.
// The backward collectives are traced like any other, so they take and
// return the device's cc token. Every device of an SPMD program reaches
// them in the same order (the engine runs records in decreasing sequence),
// and a collective whose outputs got no gradient still runs, with zeros:
// its peers wait for it.
#include "autograd/rules.h"
#include "ir/collective_attrs.h"
#include "ordo/collectives.h"
#include "runtime/runtime.h"

namespace ordo::autograd {
namespace {

ir::CollectiveAttrs attrs_of(const BackwardCall& call) { return call.attrs_as<ir::CollectiveAttrs>(); }

void require_sum(const BackwardCall& call, const ir::CollectiveAttrs& attrs) {
  ORDO_ARG_CHECK(attrs.reduce == ReduceType::kSum, ir::op_name(call.record.op), "(",
                 reduce_type_name(attrs.reduce), ") has no gradient: only a sum reduction is differentiable");
}

std::vector<Tensor> every_grad(const BackwardCall& call) {
  std::vector<Tensor> grads;
  for (size_t i = 0; i < call.record.outputs.size(); ++i) grads.push_back(call.grad(i));
  return grads;
}

// As data, like the replica groups it is looked up in.
int global_ordinal(const BackwardCall& call) {
  return runtime::get().ordinal_of(LocalDevice(call.input(0).device())).value();
}

int64_t group_size(const BackwardCall& call, const ir::CollectiveAttrs& attrs) {
  return static_cast<int64_t>(
      attrs.group_of(global_ordinal(call), runtime::get().topology().world_size()).size());
}

}  // namespace

Gradients backward_AllReduce(const BackwardCall& call) {
  const ir::CollectiveAttrs attrs = attrs_of(call);
  require_sum(call, attrs);
  std::vector<Tensor> grads = every_grad(call);
  all_reduce_inplace(ReduceType::kSum, grads, attrs.scale, attrs.groups);
  return grads;
}

Gradients backward_AllGather(const BackwardCall& call) {
  const ir::CollectiveAttrs attrs = attrs_of(call);
  return {reduce_scatter(ReduceType::kSum, call.grad(), 1.0, attrs.dim, group_size(call, attrs), attrs.groups)};
}

Gradients backward_ReduceScatter(const BackwardCall& call) {
  const ir::CollectiveAttrs attrs = attrs_of(call);
  require_sum(call, attrs);
  Tensor gathered = all_gather(call.grad(), attrs.dim, attrs.groups);
  return {attrs.scale == 1.0 ? gathered : gathered * attrs.scale};
}

Gradients backward_AllToAll(const BackwardCall& call) {
  const ir::CollectiveAttrs attrs = attrs_of(call);
  return {all_to_all(call.grad(), attrs.concat_dim, attrs.dim, group_size(call, attrs), attrs.groups)};
}

Gradients backward_CollectivePermute(const BackwardCall& call) {
  std::vector<std::pair<int, int>> inverse;
  for (const auto& [source, target] : attrs_of(call).pairs) inverse.emplace_back(target, source);
  return {collective_permute(call.grad(), inverse)};
}

// Only the root's inputs reached the outputs: they get the group's sum; the
// other members take part in that sum and get zeros.
Gradients backward_CollectiveBroadcast(const BackwardCall& call) {
  const ir::CollectiveAttrs attrs = attrs_of(call);
  std::vector<Tensor> grads = every_grad(call);
  all_reduce_inplace(ReduceType::kSum, grads, 1.0, attrs.groups);
  if (global_ordinal(call) == attrs.root) return grads;
  Gradients none;
  for (const Tensor& input : call.record.inputs) none.push_back(zeros_like(input));
  return none;
}

}  // namespace ordo::autograd
