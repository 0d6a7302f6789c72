// Running a plan on a device's worker.
#pragma once

#include <memory>
#include <vector>

#include "device/device.h"
#include "device/device_data.h"
#include "executor/plan.h"

namespace ordo::executor {

// Runs plan over parameters and fulfils results (one per plan result). On a
// failure every result fails with a message naming the op, and the device
// records it for its next mark_step. Never throws. A parameter held by
// nothing else is dropped once its buffer is in its slot, so that a step
// may write over the buffer when the value dies (PlanStep::reuses).
void run_plan(const ExecutionPlan& plan, std::vector<std::shared_ptr<device::DeviceData>> parameters,
              const std::vector<std::shared_ptr<device::DeviceData>>& results,
              device::Device& device);

}  // namespace ordo::executor
