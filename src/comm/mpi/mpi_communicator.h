// The MPI communicator: serves the world of an mpirun job (MpiWorld).
#pragma once

#include <memory>

#include "comm/communicator.h"
#include "comm/mpi/mpi_world.h"

namespace ordo::comm {

// A communicator for every device of the world's job; this process's
// devices are world.topology().global_ordinal(0 .. local_devices-1).
std::unique_ptr<Communicator> make_mpi_communicator(const MpiWorld& world);

}  // namespace ordo::comm
