// The collectives' types, apart from the ops that take tensors
// (ordo/collectives.h), so that the IR and the communication layer use
// them without Tensor:
//
//   ordo::ReduceType r = ordo::parse_reduce_type("max");    // ReduceType::kMax
//   ordo::ReplicaGroups halves = {{0, 1}, {2, 3}};           // global ordinals
//   ordo::set_collective_timeouts({.warn_seconds = 5, .timeout_seconds = 60});
#pragma once

#include <string_view>
#include <vector>

namespace ordo {

enum class ReduceType { kSum, kMul, kAnd, kOr, kMin, kMax };
// "sum", "mul", "and", "or", "min", "max".
ReduceType parse_reduce_type(std::string_view name);
std::string_view reduce_type_name(ReduceType type);

// Replica groups: lists of global ordinals that partition the devices. Empty
// means one group of every device. A device's rank is its position in its
// group; the order of the groups does not matter.
using ReplicaGroups = std::vector<std::vector<int>>;

struct CollectiveTimeouts {
  double warn_seconds = 30.0;      // log which devices are missing
  double timeout_seconds = 300.0;  // fail with CollectiveTimeoutError
};
// Defaults come from ORDO_COLLECTIVE_WARN_SECONDS and
// ORDO_COLLECTIVE_TIMEOUT_SECONDS when set (checked when the runtime
// starts); once set here, these win.
void set_collective_timeouts(CollectiveTimeouts timeouts);
CollectiveTimeouts collective_timeouts();

}  // namespace ordo
