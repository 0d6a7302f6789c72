#include "comm/factory.h"

#include "comm/in_process/in_process_communicator.h"
#include "ordo/error.h"

namespace ordo::comm {

std::unique_ptr<Communicator> make_communicator(const Topology& topology) {
  ORDO_ARG_CHECK(topology.process_count() == 1, "no communication backend of this build serves ",
                 topology.describe(), ": the in-process backend serves one process");
  return std::make_unique<InProcessCommunicator>(topology.world_size());
}

}  // namespace ordo::comm
