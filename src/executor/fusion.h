// Elementwise fusion, a compiler pass: runs of elementwise ops of one shape
// that are next to each other in the schedule become one step, which runs
// them tile by tile (kernels/fused.h). A group runs where its ops would
// have run, so every edge the schedule honours stays honoured; the only
// reordering is of one-element constants, which have no operands.
#pragma once

#include <memory>
#include <vector>

#include "ir/post_order.h"
#include "kernels/fused.h"

namespace ordo::executor {

// One step of a plan, before slots are assigned: one node, or a fused group.
struct PlanUnit {
  std::vector<int32_t> nodes;  // post-order positions in run order; one unless fused
  // Fused groups only:
  std::vector<ir::NodeOutput> inputs;   // values from outside the group, in program order
  std::vector<int32_t> outputs;     // members whose value is used outside the group
  std::shared_ptr<const kernels::FusedProgram> program;
};

// One-element constants move to the front, so that they do not split runs;
// then each run of two or more fusible nodes of one shape becomes a group.
std::vector<PlanUnit> fuse_elementwise(const ir::PostOrder& graph, std::vector<int32_t> order);

}  // namespace ordo::executor
