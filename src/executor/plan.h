// An execution plan: a compiled graph, independent of the nodes it was made
// from, so that one plan serves every later graph with the same hash (on any
// device). Values live in numbered slots; each step reads slots, fills its
// output slots and then releases the slots it was the last user of.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/node.h"
#include "kernels/fused.h"
#include "kernels/kernel.h"
#include "ordo/runtime.h"

namespace ordo::executor {

struct PlanStep {
  ir::OpKind op;                // a fused step's first op
  kernels::KernelFn kernel;     // null for a fused step
  std::shared_ptr<const kernels::FusedProgram> fused;
  ir::Attrs attrs;
  std::optional<ir::CollectiveAttrs> collective;  // attrs decoded, for a collective
  std::vector<ir::ValueType> output_types;
  std::vector<int32_t> input_slots;
  int32_t first_output_slot;
  std::vector<int32_t> release_slots;  // dead once this step ran
  // A fused step's outputs that may be written over inputs dying here, if
  // the run finds their buffers held by nothing else (executor/run.cc).
  std::vector<kernels::FusedReuse> reuses;
  int32_t node;                        // post-order position, for messages
  int32_t last_node;                   // of a fused step's last op
};

struct ExecutionPlan {
  uint64_t graph_hash = 0;
  int32_t num_slots = 0;
  std::vector<int32_t> parameter_slots;  // filled from the graph's parameters
  std::vector<int32_t> result_slots;     // one per root
  std::vector<PlanStep> steps;           // in schedule order
};

}  // namespace ordo::executor
