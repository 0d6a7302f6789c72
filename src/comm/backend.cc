#include "comm/backend.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/config.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

// How many processes mpirun started, or 0 without mpirun.
int mpirun_processes(const char* mpi_world_size) {
  if (mpi_world_size == nullptr || *mpi_world_size == '\0') return 0;
  int processes = 0;
  const char* end = mpi_world_size + std::strlen(mpi_world_size);
  auto [ptr, ec] = std::from_chars(mpi_world_size, end, processes);
  ORDO_ARG_CHECK(ec == std::errc() && ptr == end && processes >= 1, "OMPI_COMM_WORLD_SIZE: '", mpi_world_size,
                 "' is not a count of processes (mpirun sets it; ORDO_BACKEND=in_process|mpi decides instead)");
  return processes;
}

void check_mpi_built([[maybe_unused]] const std::string_view why) {
#ifndef ORDO_HAVE_MPI
  throw_error<InvalidArgument>(why, ": this build of ordo has no MPI backend (CMake found no Open MPI: "
                               "apt-get install libopenmpi-dev openmpi-bin, then build again); "
                               "ORDO_BACKEND=in_process runs each process as a world of its own");
#endif
}

}  // namespace

const char* backend_name(Backend backend) { return backend == Backend::kMpi ? "mpi" : "in_process"; }

Backend choose_backend(const char* ordo_backend, const char* mpi_world_size) {
  const std::string_view asked = ordo_backend == nullptr ? "" : ordo_backend;
  if (asked == "in_process") return Backend::kInProcess;
  if (asked == "mpi") {
    check_mpi_built("ORDO_BACKEND=mpi");
    return Backend::kMpi;
  }
  ORDO_ARG_CHECK(asked.empty(), "ORDO_BACKEND: '", asked, "' is not one of in_process, mpi");
  const int processes = mpirun_processes(mpi_world_size);
  if (processes <= 1) return Backend::kInProcess;
  check_mpi_built(str_cat("mpirun started ", processes, " processes"));
  return Backend::kMpi;
}

Backend backend_from_env() {
  return choose_backend(config().backend.c_str(), std::getenv("OMPI_COMM_WORLD_SIZE"));
}

}  // namespace ordo::comm
