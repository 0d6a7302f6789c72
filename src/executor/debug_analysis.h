// ORDO_DEBUG=1: what slows a training loop down, said as it happens (as
// torch_xla's PT_XLA_DEBUG does):
//
//   if (executor::debug_enabled()) executor::note_mark_step(device);  // before the cut
//   ... note_compile(walk, device, ordinal)                    // every uncached compile
//   ... note_transfer_from_device(device, ordinal)             // every read of a value
//
// - Graphs that keep compiling: past kSettleSteps steps, more than one
//   uncached compile per two steps over the last kWindowSteps steps warns,
//   naming the first nodes where the two last compiled graphs of the device
//   differ (a Python number is a constant of the graph: a learning rate that
//   changes every step recompiles every step).
// - Values read back to the host in each of the last kWindowSteps steps:
//   every read waits for the device to finish the step.
// Each warning is said once per device and process, through the log
// (core/log.h, level warning). Without ORDO_DEBUG=1 every call here is one
// test of the configuration's field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/device_numbers.h"
#include "ir/post_order.h"

namespace ordo::executor {

inline constexpr int64_t kSettleSteps = 10;
inline constexpr int64_t kWindowSteps = 10;

// ORDO_DEBUG is on (core/config.h). Callers test it before they note
// anything, so that without it a step pays this test only.
inline bool debug_enabled() { return config().debug; }

// device: its index in this process; ordinal names it in warnings.
void note_mark_step(LocalDevice device);
void note_compile(const ir::PostOrder& graph, LocalDevice device, GlobalOrdinal ordinal);
void note_transfer_from_device(LocalDevice device, GlobalOrdinal ordinal);

// What differs between two graphs' node lines (ir::node_lines), for the
// warning: "node %3: full() reals=[0.1] : float32[] vs full() reals=[0.2] :
// float32[]", up to max_differences of them, then the node counts if they
// differ. Empty when the lines are equal.
std::string describe_difference(const std::vector<std::string>& older, const std::vector<std::string>& newer,
                                int max_differences = 2);

}  // namespace ordo::executor
