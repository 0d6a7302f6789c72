// The MPI backend's communicator: one process's part of an MPI job. It
// serves this process's devices only (global ordinals rank x L .. rank x L
// + L - 1); its world_size() is every device of every process.
//
//   const MpiWorld& world = MpiWorld::join(/*local_devices=*/2);
//   std::unique_ptr<Communicator> comm = make_mpi_communicator(world);
#pragma once

#include <memory>

#include "comm/communicator.h"
#include "comm/mpi/mpi_world.h"

namespace ordo::comm {

std::unique_ptr<Communicator> make_mpi_communicator(const MpiWorld& world);

}  // namespace ordo::comm
