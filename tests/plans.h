// The plan a graph of tensors compiles to, for tests of compiler passes:
//   const auto plan = testing::plan_of({y});
//   for (const executor::PlanStep& step : plan->steps) ...
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "executor/compiler.h"
#include "ir/post_order.h"
#include "lazy/graph_table.h"
#include "lazy/tensor_impl.h"
#include "ordo/ordo.h"

namespace ordo::testing {

// The plan the options compile for the pending graph of device 0 that
// computes tensors (not run).
inline std::shared_ptr<const executor::ExecutionPlan> plan_of(const std::vector<Tensor>& tensors,
                                                               ScheduleOptions options = {}) {
  auto& graph = lazy::graphs().graph(LocalDevice(0));
  std::lock_guard<std::mutex> lock(graph.mu);
  std::vector<ir::Value> roots;
  for (const Tensor& t : tensors) roots.push_back(t.impl()->value);
  return executor::compile(ir::post_order(roots), options);
}

}  // namespace ordo::testing
