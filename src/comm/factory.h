// The communicator of a runtime, chosen by its topology: one process is
// the in-process backend (threads sharing memory), the embedded default.
#pragma once

#include <memory>

#include "comm/communicator.h"
#include "comm/topology.h"

namespace ordo::comm {

// Throws InvalidArgument when no backend of this build serves the topology.
std::unique_ptr<Communicator> make_communicator(const Topology& topology);

}  // namespace ordo::comm
