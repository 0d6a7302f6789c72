#include "executor/fusion.h"

#include <algorithm>

namespace ordo::executor {
namespace {

// An elementwise node whose operands all have its shape or one element.
bool fusible(const ir::Node& node) {
  if (node.outputs().size() != 1 || node.operands().empty()) return false;
  const ir::ValueType& out = node.output(0);
  if (out.is_token || shape_numel(out.shape) == 0) return false;
  for (const ir::Value& v : node.operands()) {
    const ir::ValueType& in = v.type();
    if (in.is_token || (in.shape != out.shape && shape_numel(in.shape) != 1)) return false;
  }
  return kernels::row_fn(node.op(), node.operands()[0].type().dtype, out.dtype) != nullptr;
}

std::vector<std::vector<int32_t>> runs_of(const LoweredGraph& graph, const std::vector<int32_t>& order) {
  std::vector<std::vector<int32_t>> runs;
  const Shape* run_shape = nullptr;
  for (int32_t position : order) {
    const ir::Node& node = *graph.nodes[position];
    const bool joins = fusible(node);
    if (!joins || run_shape == nullptr || node.output(0).shape != *run_shape) runs.emplace_back();
    runs.back().push_back(position);
    run_shape = joins ? &node.output(0).shape : nullptr;
  }
  return runs;
}

// The program of one group; fills unit.inputs as it meets them.
// used_outside[p]: node p's value is read outside its group or is a root.
std::shared_ptr<const kernels::FusedProgram> build_program(const LoweredGraph& graph, PlanUnit& unit,
                                                           const std::vector<bool>& used_outside) {
  auto program = std::make_shared<kernels::FusedProgram>();
  program->numel = shape_numel(graph.nodes[unit.nodes.front()]->output(0).shape);
  const size_t size = unit.nodes.size();
  // Member index by post-order position, and each member's last reader.
  std::vector<int32_t> member_of(graph.nodes.size(), -1);
  for (size_t m = 0; m < size; ++m) member_of[unit.nodes[m]] = static_cast<int32_t>(m);
  std::vector<size_t> last_read(size, 0);
  for (size_t m = 0; m < size; ++m) {
    for (const ir::Value& v : graph.nodes[unit.nodes[m]]->operands()) {
      const int32_t producer = member_of[graph.position(v.node.get())];
      if (producer >= 0) last_read[producer] = m;
    }
  }
  std::vector<kernels::FusedRef> ref_of(size);
  std::vector<int32_t> free_registers;
  for (size_t m = 0; m < size; ++m) {
    const int32_t position = unit.nodes[m];
    const ir::Node& node = *graph.nodes[position];
    kernels::FusedInstruction op{};
    op.fn = kernels::row_fn(node.op(), node.operands()[0].type().dtype, node.output(0).dtype);
    op.arity = static_cast<int32_t>(node.operands().size());
    for (size_t k = 0; k < node.operands().size(); ++k) {
      const ir::Value& v = node.operands()[k];
      const int32_t producer = member_of[graph.position(v.node.get())];
      if (producer >= 0) {
        op.operands[k] = ref_of[producer];
        continue;
      }
      const NodeOutput input{graph.position(v.node.get()), v.index};
      auto it = std::find_if(unit.inputs.begin(), unit.inputs.end(), [&](const NodeOutput& seen) {
        return seen.node == input.node && seen.index == input.index;
      });
      if (it == unit.inputs.end()) {
        unit.inputs.push_back(input);
        program->input_is_scalar.push_back(shape_numel(v.type().shape) != program->numel);
        it = unit.inputs.end() - 1;
      }
      op.operands[k] = {kernels::FusedRef::Kind::kInput, static_cast<int32_t>(it - unit.inputs.begin()),
                        v.type().dtype};
    }
    const DType dtype = node.output(0).dtype;
    if (used_outside[position]) {
      ref_of[m] = {kernels::FusedRef::Kind::kOutput, static_cast<int32_t>(unit.outputs.size()), dtype};
      unit.outputs.push_back(position);
    } else if (!free_registers.empty()) {
      ref_of[m] = {kernels::FusedRef::Kind::kRegister, free_registers.back(), dtype};
      free_registers.pop_back();
    } else {
      ref_of[m] = {kernels::FusedRef::Kind::kRegister, program->num_registers++, dtype};
    }
    // Registers last read here are free for later members; not for this
    // one's result, since a row's destination aliases none of its operands.
    for (size_t k = 0; k < node.operands().size(); ++k) {
      const int32_t producer = member_of[graph.position(node.operands()[k].node.get())];
      if (producer < 0 || last_read[producer] != m) continue;
      const kernels::FusedRef& ref = ref_of[producer];
      if (ref.kind == kernels::FusedRef::Kind::kRegister &&
          std::find(free_registers.begin(), free_registers.end(), ref.index) == free_registers.end()) {
        free_registers.push_back(ref.index);
      }
    }
    op.result = ref_of[m];
    program->code.push_back(op);
  }
  return program;
}

}  // namespace

std::vector<PlanUnit> fuse_elementwise(const LoweredGraph& graph, std::vector<int32_t> order) {
  std::stable_partition(order.begin(), order.end(),
                        [&](int32_t position) { return graph.nodes[position]->operands().empty(); });
  const std::vector<std::vector<int32_t>> runs = runs_of(graph, order);
  // Which group each node is in, to find the values that leave a group.
  std::vector<int32_t> group_of(graph.nodes.size(), -1);
  for (size_t r = 0; r < runs.size(); ++r) {
    if (runs[r].size() < 2) continue;
    for (int32_t position : runs[r]) group_of[position] = static_cast<int32_t>(r);
  }
  std::vector<bool> used_outside(graph.nodes.size(), false);
  for (size_t p = 0; p < graph.nodes.size(); ++p) {
    for (const ir::Value& v : graph.nodes[p]->operands()) {
      const int32_t producer = graph.position(v.node.get());
      if (group_of[producer] != group_of[p]) used_outside[producer] = true;
    }
  }
  for (const NodeOutput& root : graph.roots) used_outside[root.node] = true;
  std::vector<PlanUnit> units;
  for (const std::vector<int32_t>& run : runs) {
    if (run.size() < 2) {
      for (int32_t position : run) units.push_back({{position}, {}, {}, nullptr});
      continue;
    }
    PlanUnit unit{run, {}, {}, nullptr};
    unit.program = build_program(graph, unit, used_outside);
    units.push_back(std::move(unit));
  }
  return units;
}

}  // namespace ordo::executor
