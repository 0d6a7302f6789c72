// This process's world for a backend: where every device is (the
// Topology) and the communicator that serves them.
//
//   comm::World world = comm::open_world(comm::backend_from_env(), /*local_devices=*/2);
//   world.topology.world_size();   // 2 in-process; processes x 2 under MPI
//
// - in_process: one process with local_devices devices (threads sharing
//   memory), the embedded default.
// - mpi: this process's place in its mpirun job (MpiWorld::join: MPI is
//   initialized once per process, and a world opened again, after a
//   shutdown, is the same job; every process must open it with as many
//   devices) and the MPI communicator.
#pragma once

#include <memory>

#include "comm/backend.h"
#include "comm/communicator.h"
#include "comm/topology.h"

namespace ordo::comm {

struct World {
  Topology topology;
  std::unique_ptr<Communicator> communicator;  // serves topology's world
};

// Throws InvalidArgument for a count of devices the backend cannot serve
// (the MPI processes disagreeing on it included), a backend this build
// lacks, or MPI in a process forked from the one mpirun started;
// CollectiveError when MPI fails.
World open_world(Backend backend, int local_devices);

}  // namespace ordo::comm
