// STAND-IN, TEST-ONLY: delete this file when src/comm/mpi/mpi_communicator.cc
// (the real MpiCommunicator) arrives; tests/mpi/mpi_tests.cmake then links
// the real one and registers every P x L run of the conformance suites.
//
// It lets the MPI variants of the conformance suites build and run before
// the MPI communicator exists: a job of one process is served by an
// in-process communicator of its L devices, so that the MPI test mains, the
// harness's barrier and its session of local devices run for real at P = 1.
// A job of several processes it cannot serve.
#include "comm/mpi/mpi_communicator.h"

#include "comm/in_process/in_process_communicator.h"
#include "ordo/error.h"

namespace ordo::comm {

std::unique_ptr<Communicator> make_mpi_communicator(const MpiWorld& world) {
  if (world.size() != 1) {
    throw_error<InvalidArgument>("tests/mpi/mpi_communicator_standin.cc serves jobs of one process; this one has ",
                                 world.size(), " (the MPI communicator is not built in yet)");
  }
  return std::make_unique<InProcessCommunicator>(world.topology().world_size());
}

}  // namespace ordo::comm
