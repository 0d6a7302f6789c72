#include "executor/compiler.h"

#include <limits>
#include <random>

#include "executor/fusion.h"
#include "executor/transpose_folding.h"
#include "ir/op_attrs.h"

namespace ordo::executor {
namespace {

// Parameters are slots filled before the first step, not steps.
bool is_parameter(const ir::Node* node) { return node->op() == ir::OpKind::kDeviceData; }

// Kahn's algorithm over the steps, choosing at random among ready ones.
std::vector<int32_t> random_schedule(const ir::PostOrder& graph, uint64_t seed) {
  const size_t n = graph.nodes.size();
  std::vector<int32_t> waiting_on(n, 0);
  std::vector<std::vector<int32_t>> users(n);
  std::vector<int32_t> ready;
  for (size_t i = 0; i < n; ++i) {
    const ir::Node* node = graph.nodes[i];
    if (is_parameter(node)) continue;
    for (const ir::Value& v : node->operands()) {
      const int32_t operand = graph.position(v.node.get());
      if (is_parameter(graph.nodes[operand])) continue;
      ++waiting_on[i];
      users[operand].push_back(static_cast<int32_t>(i));
    }
    if (waiting_on[i] == 0) ready.push_back(static_cast<int32_t>(i));
  }
  std::mt19937_64 rng(seed);
  std::vector<int32_t> order;
  while (!ready.empty()) {
    std::uniform_int_distribution<size_t> pick(0, ready.size() - 1);
    const size_t chosen = pick(rng);
    const int32_t node = ready[chosen];
    ready[chosen] = ready.back();
    ready.pop_back();
    order.push_back(node);
    for (int32_t user : users[node]) {
      if (--waiting_on[user] == 0) ready.push_back(user);
    }
  }
  return order;
}

// The last step that reads each slot; results are never released.
std::vector<int32_t> last_uses(const ExecutionPlan& plan) {
  constexpr int32_t kNever = std::numeric_limits<int32_t>::max();
  std::vector<int32_t> last_use(plan.num_slots, -1);
  for (int32_t s = 0; s < static_cast<int32_t>(plan.steps.size()); ++s) {
    const PlanStep& step = plan.steps[s];
    for (int32_t slot : step.input_slots) last_use[slot] = s;
    // An output nobody reads dies with the step that made it.
    for (size_t o = 0; o < step.output_types.size(); ++o) {
      int32_t slot = step.first_output_slot + static_cast<int32_t>(o);
      if (last_use[slot] < s) last_use[slot] = s;
    }
  }
  for (int32_t slot : plan.result_slots) last_use[slot] = kNever;
  return last_use;
}

}  // namespace

std::vector<int32_t> schedule(const ir::PostOrder& graph, const ScheduleOptions& options) {
  if (options.mode == ScheduleMode::kRandom) return random_schedule(graph, options.seed);
  std::vector<int32_t> order;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (!is_parameter(graph.nodes[i])) order.push_back(static_cast<int32_t>(i));
  }
  return order;
}

namespace {

// The units in run order: fused groups where options allow, else one node
// per step; the views that matmuls read through, and products run as their
// transposing permute, are none.
std::vector<PlanUnit> units_of(const ir::PostOrder& graph, const ScheduleOptions& options,
                               FoldedTransposes& folded) {
  std::vector<int32_t> order = schedule(graph, options);
  folded = fold_transposes(graph, order);
  if (options.fuse_elementwise) return fuse_elementwise(graph, std::move(order));
  std::vector<PlanUnit> units;
  units.reserve(order.size());
  for (int32_t position : order) units.push_back({{position}, {}, {}, nullptr});
  return units;
}

}  // namespace

std::shared_ptr<const ExecutionPlan> compile(const ir::PostOrder& graph,
                                             const ScheduleOptions& options) {
  auto plan = std::make_shared<ExecutionPlan>();
  plan->graph_hash = graph.hash;
  FoldedTransposes folded;
  const std::vector<PlanUnit> units = units_of(graph, options, folded);
  // A step is ~250 bytes: grown by doubling, the steps of a large plan moved
  // through ever larger buffers that the C library maps afresh, and their
  // page faults were most of compiling (1.4 ms of a 1000-step plan, now
  // ~0.2 ms).
  plan->steps.reserve(units.size());
  // Slots: parameters first, then each step's outputs, consecutive. The
  // values inside a fused group live in its registers and have none.
  std::vector<int32_t> first_slot(graph.nodes.size(), -1);
  for (int32_t parameter : graph.parameters) {
    first_slot[parameter] = plan->num_slots++;
    plan->parameter_slots.push_back(first_slot[parameter]);
  }
  auto slot_of = [&](int32_t position, uint32_t index) {
    return first_slot[position] + static_cast<int32_t>(index);
  };
  for (const PlanUnit& unit : units) {
    const ir::Node* first = graph.nodes[unit.nodes.front()];
    PlanStep step{.op = first->op(),
                  .kernel = nullptr,
                  .fused = unit.program,
                  .attrs = {},
                  .collective = {},
                  .output_types = {},
                  .input_slots = {},
                  .first_output_slot = plan->num_slots,
                  .release_slots = {},
                  .reuses = {},
                  .node = unit.nodes.front(),
                  .last_node = unit.nodes.back()};
    if (unit.program) {
      for (int32_t member : unit.outputs) {
        first_slot[member] = plan->num_slots++;
        step.output_types.push_back(graph.nodes[member]->output(0));
      }
      for (const ir::NodeOutput& input : unit.inputs) {
        step.input_slots.push_back(slot_of(input.node, input.index));
      }
    } else {
      step.kernel = kernels::kernel_for(first->op());
      step.attrs = first->attrs();
      if (ir::op_group(first->op()) == ir::OpGroup::kCollective) {
        step.collective = ir::decode_collective(*first);
      }
      step.output_types.assign(first->outputs().begin(), first->outputs().end());
      first_slot[unit.nodes.front()] = plan->num_slots;
      plan->num_slots += static_cast<int32_t>(first->outputs().size());
      if (const FoldedTransposes::Matmul* matmul = folded.find(unit.nodes.front())) {
        step.op = ir::OpKind::kMatmul;  // also for a transposing permute run as the swapped product
        step.kernel = kernels::kernel_for(step.op);
        step.attrs = ir::encode<ir::OpKind::kMatmul>({matmul->transposed[0], matmul->transposed[1]});
        for (const ir::NodeOutput& operand : matmul->operands) {
          step.input_slots.push_back(slot_of(operand.node, operand.index));
        }
      } else {
        for (const ir::Value& v : first->operands()) {
          step.input_slots.push_back(slot_of(graph.position(v.node.get()), v.index));
        }
      }
    }
    plan->steps.push_back(std::move(step));
  }
  for (const ir::NodeOutput& root : graph.roots) plan->result_slots.push_back(slot_of(root.node, root.index));
  std::vector<int32_t> last_use = last_uses(*plan);
  for (int32_t slot = 0; slot < plan->num_slots; ++slot) {
    if (last_use[slot] >= 0 && last_use[slot] < static_cast<int32_t>(plan->steps.size())) {
      plan->steps[last_use[slot]].release_slots.push_back(slot);
    }
  }
  for (PlanStep& step : plan->steps) {
    if (!step.fused) continue;
    for (const kernels::FusedReuse& reuse : step.fused->reusable) {
      if (last_use[step.input_slots[reuse.input]] == &step - plan->steps.data()) step.reuses.push_back(reuse);
    }
  }
  return plan;
}

}  // namespace ordo::executor
