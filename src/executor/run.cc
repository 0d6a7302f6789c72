#include "executor/run.h"

#include "ordo/error.h"

namespace ordo::executor {
namespace {

using Slots = std::vector<std::shared_ptr<const device::Buffer>>;

// Runs the steps; returns the failure message, empty on success.
std::string run_steps(const ExecutionPlan& plan, Slots& slots, int ordinal) {
  std::vector<const device::Buffer*> inputs;
  for (const PlanStep& step : plan.steps) {
    inputs.clear();
    for (int32_t slot : step.input_slots) inputs.push_back(slots[slot].get());
    std::span<std::shared_ptr<const device::Buffer>> outputs(&slots[step.first_output_slot],
                                                              step.output_types.size());
    try {
      step.kernel({step.attrs, step.output_types, inputs, outputs, ordinal});
    } catch (const std::exception& e) {
      return str_cat(ir::op_name(step.op), " (node %", step.node, " of graph ", std::hex,
                     plan.graph_hash, std::dec, ") failed on device ", ordinal, ": ", e.what());
    }
    for (int32_t slot : step.release_slots) slots[slot].reset();
  }
  return {};
}

}  // namespace

void run_plan(const ExecutionPlan& plan,
              const std::vector<std::shared_ptr<device::DeviceData>>& parameters,
              const std::vector<std::shared_ptr<device::DeviceData>>& results,
              device::Device& device) {
  Slots slots(plan.num_slots);
  std::string failure;
  // Parameters come from host data or from earlier graphs of this worker, so
  // they are done by now; a failed one fails this graph too.
  for (size_t i = 0; i < parameters.size(); ++i) {
    try {
      slots[plan.parameter_slots[i]] = parameters[i]->wait();
    } catch (const Error& e) {
      failure = str_cat("an input of this graph came from a graph that failed: ", e.what());
      break;
    }
  }
  if (failure.empty()) failure = run_steps(plan, slots, device.ordinal());
  if (!failure.empty()) {
    for (const auto& result : results) result->fail(failure);
    device.record_failure(failure);
    return;
  }
  for (size_t i = 0; i < results.size(); ++i) results[i]->fulfil(slots[plan.result_slots[i]]);
}

}  // namespace ordo::executor
