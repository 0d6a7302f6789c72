#include "executor/fusion.h"

#include <algorithm>
#include <unordered_map>

namespace ordo::executor {
namespace {

using kernels::FusedRef;

// A group walks its shape in rows, every op once per row (or per tile of a
// long row): an input that breaks the shape into rows shorter than this
// costs more in calls than fusing saves (a bias of 3 added to every row),
// so its op runs on its own.
constexpr int64_t kMinFusedRowLength = 128;

// An elementwise node with something to compute, whose operands broadcast
// to its shape (its builder checked that) in rows that are not too short.
bool fusible(const ir::Node& node) {
  if (node.outputs().size() != 1 || node.operands().empty()) return false;
  const ir::ValueType& out = node.output(0);
  const int64_t numel = shape_numel(out.shape);
  if (out.is_token || numel == 0) return false;
  if (kernels::row_fn(node.op(), node.operands()[0].type().dtype, out.dtype) == nullptr) return false;
  for (const ir::Value& v : node.operands()) {
    const Shape& in = v.type().shape;
    if (in == out.shape || shape_numel(in) == 1) continue;
    // A group's rows are as short as its inputs' shortest (dims merge only
    // where every array agrees).
    const int64_t row = kernels::make_fused_layout(out.shape, {in}).row_length;
    if (row < kMinFusedRowLength && row < numel) return false;
  }
  return true;
}

int32_t element_bytes(DType dtype) { return static_cast<int32_t>(dtype_size(dtype)); }

// A constant of one element (the scalars of `x * 2.0`): moving it to the
// front of the order costs no memory and keeps it from splitting a run.
bool is_scalar_constant(const ir::Node& node) {
  return node.operands().empty() && node.outputs().size() == 1 && shape_numel(node.output(0).shape) <= 1;
}

std::vector<std::vector<int32_t>> runs_of(const ir::PostOrder& graph, const std::vector<int32_t>& order) {
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

// Builds the programs of a graph's groups, one after another, with scratch
// sized once for the graph.
class ProgramBuilder {
 public:
  // used_outside[p]: node p's value is read outside its group or is a root.
  ProgramBuilder(const ir::PostOrder& graph, std::vector<bool> used_outside)
      : graph_(graph), used_outside_(std::move(used_outside)), member_of_(graph.nodes.size(), -1) {}

  // The program of unit's group; fills unit.inputs and unit.outputs.
  std::shared_ptr<const kernels::FusedProgram> build(PlanUnit& unit) {
    auto program = std::make_shared<kernels::FusedProgram>();
    const Shape& shape = graph_.nodes[unit.nodes.front()]->output(0).shape;
    program->numel = shape_numel(shape);
    const size_t size = unit.nodes.size();
    for (size_t m = 0; m < size; ++m) member_of_[unit.nodes[m]] = static_cast<int32_t>(m);
    // Each member's last reader in the group.
    std::vector<size_t> last_read(size, 0);
    for (size_t m = 0; m < size; ++m) {
      for (const ir::Value& v : node(unit, m).operands()) {
        if (const int32_t producer = member_of_[graph_.position(v.node.get())]; producer >= 0) {
          last_read[producer] = m;
        }
      }
    }
    refs_.assign(size, {});
    free_registers_.clear();
    input_index_.clear();
    for (size_t m = 0; m < size; ++m) {
      const ir::Node& member = node(unit, m);
      kernels::FusedInstruction op{};
      op.fn = kernels::row_fn(member.op(), member.operands()[0].type().dtype, member.output(0).dtype);
      op.arity = static_cast<int32_t>(member.operands().size());
      for (size_t k = 0; k < member.operands().size(); ++k) {
        op.operands[k] = read(member.operands()[k], unit);
      }
      op.result = refs_[m] = result_of(unit, m, *program);
      program->code.push_back(op);
      // Registers last read here are free for later members; not for this
      // one's result, since a row's destination aliases none of its operands.
      for (const ir::Value& v : member.operands()) {
        const int32_t producer = member_of_[graph_.position(v.node.get())];
        if (producer < 0 || last_read[producer] != m) continue;
        const FusedRef& ref = refs_[producer];
        if (ref.kind == FusedRef::Kind::kRegister &&
            std::find(free_registers_.begin(), free_registers_.end(), ref.index) == free_registers_.end()) {
          free_registers_.push_back(ref.index);
        }
      }
    }
    for (int32_t position : unit.nodes) member_of_[position] = -1;
    std::vector<Shape> input_shapes;
    for (const ir::NodeOutput& input : unit.inputs) {
      input_shapes.push_back(graph_.nodes[input.node]->output(input.index).shape);
    }
    program->layout = kernels::make_fused_layout(shape, input_shapes);
    pair_reusable_inputs(unit, shape, *program);
    return program;
  }

 private:
  const ir::Node& node(const PlanUnit& unit, size_t m) const { return *graph_.nodes[unit.nodes[m]]; }

  // Where a member reads operand v: a member's result, or a group input
  // (added on first use).
  FusedRef read(const ir::Value& v, PlanUnit& unit) {
    const int32_t position = graph_.position(v.node.get());
    if (const int32_t producer = member_of_[position]; producer >= 0) return refs_[producer];
    const uint64_t key = (static_cast<uint64_t>(position) << 32) | v.index;
    auto [it, added] = input_index_.try_emplace(key, static_cast<int32_t>(unit.inputs.size()));
    if (added) unit.inputs.push_back({position, v.index});
    return {FusedRef::Kind::kInput, it->second, element_bytes(v.type().dtype)};
  }

  // Where member m writes: an output of the group if anything outside reads
  // it, else a free register or a new one.
  FusedRef result_of(PlanUnit& unit, size_t m, kernels::FusedProgram& program) {
    const int32_t position = unit.nodes[m];
    const int32_t bytes = element_bytes(graph_.nodes[position]->output(0).dtype);
    if (used_outside_[position]) {
      unit.outputs.push_back(position);
      return {FusedRef::Kind::kOutput, static_cast<int32_t>(unit.outputs.size() - 1), bytes};
    }
    if (free_registers_.empty()) return {FusedRef::Kind::kRegister, program.num_registers++, bytes};
    const int32_t reg = free_registers_.back();
    free_registers_.pop_back();
    return {FusedRef::Kind::kRegister, reg, bytes};
  }

  // Pairs outputs with the inputs they may be written over
  // (kernels::FusedReuse): inputs of the output's type that no instruction
  // after its writer reads; the run takes the first one nothing else holds.
  void pair_reusable_inputs(const PlanUnit& unit, const Shape& shape, kernels::FusedProgram& program) {
    std::vector<size_t> last_read(unit.inputs.size(), 0);
    for (size_t i = 0; i < program.code.size(); ++i) {
      const kernels::FusedInstruction& op = program.code[i];
      for (int32_t k = 0; k < op.arity; ++k) {
        if (op.operands[k].kind == FusedRef::Kind::kInput) last_read[op.operands[k].index] = i;
      }
    }
    for (size_t i = 0; i < program.code.size(); ++i) {
      const FusedRef& result = program.code[i].result;
      if (result.kind != FusedRef::Kind::kOutput) continue;
      const DType dtype = graph_.nodes[unit.outputs[result.index]]->output(0).dtype;
      for (size_t k = 0; k < unit.inputs.size(); ++k) {
        const ir::ValueType& input = graph_.nodes[unit.inputs[k].node]->output(unit.inputs[k].index);
        if (last_read[k] <= i && input.dtype == dtype && input.shape == shape) {
          program.reusable.push_back({static_cast<int32_t>(k), result.index});
        }
      }
    }
  }

  const ir::PostOrder& graph_;
  const std::vector<bool> used_outside_;
  std::vector<int32_t> member_of_;  // member index by post-order position, -1 outside the group
  std::vector<FusedRef> refs_;      // by member
  std::vector<int32_t> free_registers_;
  std::unordered_map<uint64_t, int32_t> input_index_;  // (position, output) -> group input
};

}  // namespace

std::vector<PlanUnit> fuse_elementwise(const ir::PostOrder& graph, std::vector<int32_t> order) {
  std::stable_partition(order.begin(), order.end(),
                        [&](int32_t position) { return is_scalar_constant(*graph.nodes[position]); });
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
  for (const ir::NodeOutput& root : graph.roots) used_outside[root.node] = true;
  ProgramBuilder builder(graph, std::move(used_outside));
  std::vector<PlanUnit> units;
  for (const std::vector<int32_t>& run : runs) {
    if (run.size() < 2) {
      for (int32_t position : run) units.push_back({{position}, {}, {}, nullptr});
      continue;
    }
    PlanUnit unit{run, {}, {}, nullptr};
    unit.program = builder.build(unit);
    units.push_back(std::move(unit));
  }
  return units;
}

}  // namespace ordo::executor
