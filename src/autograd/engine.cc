// The backward pass: from the outputs' records, every record they reach
// runs its rule once, in decreasing sequence (the order the ops were
// recorded, reversed: the same on every device of an SPMD program), and
// gradients meeting at one tensor are added in the order they arrive.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "autograd/engine.h"
#include "autograd/rules.h"
#include "lazy/tensor_impl.h"
#include "ordo/autograd.h"

namespace ordo::autograd {
namespace {

using lazy::GradRecord;

Tensor plus(const Tensor& sum, const Tensor& g) { return sum.defined() ? sum + g : g; }

// The records the outputs depend on, latest first.
std::vector<std::shared_ptr<const GradRecord>> reachable(std::span<const Tensor> outputs) {
  std::vector<std::shared_ptr<const GradRecord>> found;
  std::unordered_set<const GradRecord*> seen;
  std::vector<const Tensor*> stack;
  for (const Tensor& t : outputs) stack.push_back(&t);
  while (!stack.empty()) {
    const lazy::AutogradState* state = stack.back()->impl()->autograd.get();
    stack.pop_back();
    if (!state || !state->record || !seen.insert(state->record.get()).second) continue;
    found.push_back(state->record);
    for (const Tensor& input : state->record->inputs) stack.push_back(&input);
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a->sequence > b->sequence; });
  return found;
}

class Pass {
 public:
  explicit Pass(const Targets& targets) : targets_(targets), captured_(targets.tensors.size()) {}

  void deliver(const Tensor& tensor, const Tensor& g) {
    lazy::TensorImpl* impl = tensor.impl().get();
    for (size_t i = 0; i < targets_.tensors.size(); ++i) {
      if (targets_.tensors[i].impl().get() == impl) captured_[i] = plus(captured_[i], g);
    }
    const lazy::AutogradState* state = impl->autograd.get();
    if (!state || !state->requires_grad) return;
    if (state->record) {
      std::vector<Tensor>& slots = pending_[state->record.get()];
      slots.resize(state->record->outputs.size());
      slots[state->output] = plus(slots[state->output], g);
    } else if (targets_.accumulate_into_leaves) {
      auto [it, fresh] = leaf_index_.emplace(impl, leaves_.size());
      if (fresh) leaves_.push_back({tensor, Tensor()});
      leaves_[it->second].second = plus(leaves_[it->second].second, g);
    }
  }

  void run(const GradRecord& record) {
    auto it = pending_.find(&record);
    std::vector<Tensor> grads = it == pending_.end() ? std::vector<Tensor>() : std::move(it->second);
    if (it != pending_.end()) pending_.erase(it);
    const bool reached = std::any_of(grads.begin(), grads.end(), [](const Tensor& g) { return g.defined(); });
    // A collective runs even without a gradient: its peers wait for it.
    if (!reached && ir::op_group(record.op) != ir::OpGroup::kCollective) return;
    grads.resize(record.outputs.size());
    const Gradients inputs = rule_for(record.op)({record, grads});
    for (size_t i = 0; i < inputs.size() && i < record.inputs.size(); ++i) {
      if (inputs[i].defined() && record.inputs[i].impl()->requires_grad()) deliver(record.inputs[i], inputs[i]);
    }
  }

  void accumulate_leaves() {
    for (auto& [leaf, g] : leaves_) {
      lazy::AutogradState& state = *leaf.impl()->autograd;
      state.grad = plus(state.grad, g);
    }
  }

  std::vector<Tensor>& captured() { return captured_; }

 private:
  const Targets& targets_;
  std::vector<Tensor> captured_;
  std::unordered_map<const GradRecord*, std::vector<Tensor>> pending_;
  std::unordered_map<const lazy::TensorImpl*, size_t> leaf_index_;
  std::vector<std::pair<Tensor, Tensor>> leaves_;  // in the order they were reached
};

// Before anything is traced: a record a pass already freed, or an input
// rebound in place since its op was recorded, is an error.
void check_usable(std::string_view what, const std::vector<std::shared_ptr<const GradRecord>>& records) {
  for (const auto& record : records) {
    ORDO_ARG_CHECK(!record->freed, what, ": the gradient history through ", ir::op_name(record->op),
                   " was freed by an earlier backward pass (each pass frees what it went through, as "
                   "PyTorch's retain_graph=False)");
    for (size_t i = 0; i < record->inputs.size(); ++i) {
      ORDO_ARG_CHECK(record->inputs[i].impl()->version == record->versions[i], what, ": input ", i, " of ",
                     ir::op_name(record->op), " was rebound in place (assign, copy_, an in-place collective) "
                     "after the op used it, and its gradient needs the old value");
    }
  }
}

void free_history(const std::vector<std::shared_ptr<const GradRecord>>& records) {
  for (const auto& record : records) {
    record->inputs.clear();
    record->versions.clear();
    record->freed = true;
  }
}

Tensor seed_for(std::string_view what, const Tensor& output, const Tensor& seed) {
  if (!seed.defined()) {
    ORDO_ARG_CHECK(output.numel() == 1, what, ": a gradient can be implied only for a tensor of one element; this "
                   "one has shape ", shape_to_string(output.shape()), ": pass the gradient of the output");
    return ones(output.shape(), output.dtype(), output.device());
  }
  ORDO_ARG_CHECK(seed.shape() == output.shape(), what, ": the gradient has shape ", shape_to_string(seed.shape()),
                 ", the output ", shape_to_string(output.shape()));
  ORDO_DTYPE_CHECK(seed.dtype() == output.dtype(), what, ": the gradient is ", dtype_name(seed.dtype()),
                   ", the output ", dtype_name(output.dtype()));
  ORDO_ARG_CHECK(seed.device() == output.device(), what, ": the gradient is on device ", seed.device(),
                 ", the output on device ", output.device());
  return seed;
}

}  // namespace

std::vector<Tensor> run_backward(std::string_view what, std::span<const Tensor> outputs,
                                 std::span<const Tensor> seeds, const Targets& targets) {
  ORDO_ARG_CHECK(!outputs.empty(), what, ": no outputs given");
  ORDO_ARG_CHECK(seeds.empty() || seeds.size() == outputs.size(), what, ": ", seeds.size(),
                 " gradients for ", outputs.size(), " outputs");
  for (const Tensor& output : outputs) {
    ORDO_ARG_CHECK(output.defined(), what, ": an output is undefined");
    ORDO_ARG_CHECK(output.requires_grad(), what, ": the output does not require a gradient (no tensor it was made "
                   "from requires one, or it was made under a NoGradGuard)");
  }
  // Every seed is checked before anything is traced.
  std::vector<Tensor> checked_seeds;
  for (size_t i = 0; i < outputs.size(); ++i) {
    checked_seeds.push_back(seed_for(what, outputs[i], seeds.empty() ? Tensor() : seeds[i]));
  }
  const std::vector<std::shared_ptr<const GradRecord>> records = reachable(outputs);
  check_usable(what, records);
  NoGradGuard no_grad;  // the backward pass records no gradient of its own
  Pass pass(targets);
  for (size_t i = 0; i < outputs.size(); ++i) pass.deliver(outputs[i], checked_seeds[i]);
  for (const auto& record : records) pass.run(*record);
  if (targets.accumulate_into_leaves) pass.accumulate_leaves();
  std::vector<Tensor> captured = std::move(pass.captured());
  free_history(records);
  return captured;
}

}  // namespace ordo::autograd
