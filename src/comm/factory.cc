#include "comm/factory.h"

#include <unistd.h>

#include "comm/in_process/in_process_communicator.h"
#include "ordo/error.h"
#ifdef ORDO_HAVE_MPI
#include "comm/mpi/mpi_transport.h"
#include "comm/mpi/mpi_world.h"
#endif

namespace ordo::comm {
namespace {

// The process that loaded ordo. A child forked from it has copies of its
// MPI state but is no process of the job: it must not speak MPI.
const pid_t g_loading_process = getpid();

World open_mpi_world([[maybe_unused]] int local_devices) {
#ifdef ORDO_HAVE_MPI
  ORDO_ARG_CHECK(getpid() == g_loading_process, "the mpi backend: this process (pid ", getpid(),
                 ") was forked from pid ", g_loading_process,
                 ", and only the processes mpirun started are in the MPI job; ORDO_BACKEND=in_process runs it "
                 "as a world of its own");
  const MpiWorld& world = MpiWorld::join(local_devices);
  return {world.topology(), make_mpi_communicator(world)};
#else
  throw_error<InvalidArgument>("this build of ordo has no MPI backend");
#endif
}

}  // namespace

World open_world(Backend backend, int local_devices) {
  if (backend == Backend::kMpi) return open_mpi_world(local_devices);
  Topology topology = Topology::single_process(local_devices);
  auto communicator = std::make_unique<InProcessCommunicator>(topology.world_size());
  return {std::move(topology), std::move(communicator)};
}

}  // namespace ordo::comm
