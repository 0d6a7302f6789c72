// Compiling a graph in post-order into an execution plan: schedule, kernel binding,
// slot assignment and liveness.
#pragma once

#include <memory>

#include "ir/post_order.h"
#include "executor/plan.h"

namespace ordo::executor {

// The order in which a graph's non-leaf nodes run, as post-order positions.
// kDefault is post-order; kRandom picks uniformly among ready nodes with a
// generator seeded by options.seed. Both honour every edge, data and token.
std::vector<int32_t> schedule(const ir::PostOrder& graph, const ScheduleOptions& options);

std::shared_ptr<const ExecutionPlan> compile(const ir::PostOrder& graph,
                                             const ScheduleOptions& options);

}  // namespace ordo::executor
