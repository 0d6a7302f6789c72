// Which communication backend serves this process: the in-process one
// (the devices are threads of this process: the embedded default) or MPI
// (the world is every device of every process of an mpirun job).
//
//   comm::Backend b = comm::backend_from_env();   // ORDO_BACKEND, else by mpirun
//   comm::backend_name(b);                        // "mpi"
//
// The rule:
// - ORDO_BACKEND=in_process|mpi decides. in_process under mpirun makes each
//   process a world of its own devices: allowed when asked for, never chosen
//   by itself.
// - Otherwise a process that mpirun started with other processes
//   (OMPI_COMM_WORLD_SIZE > 1) uses mpi, and one started alone, or without
//   mpirun, in_process: a job of one process has nothing to send.
// - mpi in a build without Open MPI (ORDO_HAVE_MPI undefined) is an
//   InvalidArgument that says how to get it, as is an unknown name.
#pragma once

namespace ordo::comm {

enum class Backend { kInProcess, kMpi };

const char* backend_name(Backend backend);

// The rule above, from ORDO_BACKEND and OMPI_COMM_WORLD_SIZE (null or
// empty: unset). Throws InvalidArgument as said above.
Backend choose_backend(const char* ordo_backend, const char* mpi_world_size);
// The rule above, from the configuration's ORDO_BACKEND (core/config.h:
// loaded at every runtime start) and the environment's OMPI_COMM_WORLD_SIZE.
Backend backend_from_env();

}  // namespace ordo::comm
