// The main of the conformance suites' MPI variants (tests/mpi/mpi_tests.cmake
// runs them under scripts/mpirun.sh at several processes x devices): every
// process joins the job with L = ORDO_NUM_DEVICES devices and checks the
// "mpi" backend in place of the in-process one, for its own devices, at the
// job's world size (processes x L). Every process's gtest result is its
// exit code, which mpirun passes on: the job fails if any process does.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "comm/mpi/mpi_transport.h"
#include "comm/mpi/mpi_world.h"
#include "comm_conformance.h"
#include "runtime/runtime.h"

namespace ordo::conformance {
namespace {

// ORDO_TEST_MPI_PIECE_BYTES: the backend's longest MPI message, so that
// small data takes the paths of data over 1 GiB (cut into pieces).
size_t piece_bytes_from_env() {
  const char* text = std::getenv("ORDO_TEST_MPI_PIECE_BYTES");
  return text == nullptr ? comm::kMessagePieceBytes : std::stoul(text);
}

Backend mpi_backend(const comm::MpiWorld& world, MPI_Comm harness) {
  const comm::Topology& topology = world.topology();
  return {"mpi", topology.world_size(),
          [&world, piece = piece_bytes_from_env()](int) {
            Session session{comm::make_mpi_communicator(world, piece), {}, {}, world.topology().local_devices()};
            for (int index = 0; index < world.topology().local_devices(); ++index) {
              session.devices.push_back(world.topology().global_ordinal(LocalDevice(index)).value());
            }
            return session;
          },
          [harness] { comm::check_mpi(MPI_Barrier(harness), "the conformance harness's MPI_Barrier"); },
          true};
}

}  // namespace
}  // namespace ordo::conformance

int main(int argc, char** argv) {
  // MPI_THREAD_MULTIPLE, initialized here before the world joins: the
  // harness's barrier (on a communicator of its own) may then run while the
  // backend's threads call MPI under the backend's own lock.
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS ||
      provided < MPI_THREAD_MULTIPLE) {
    std::fprintf(stderr, "conformance: MPI_Init_thread gave thread level %d, the harness needs MPI_THREAD_MULTIPLE\n",
                 provided);
    return 1;
  }
  MPI_Comm harness = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &harness);
  try {
    const ordo::comm::MpiWorld& world = ordo::comm::MpiWorld::join(ordo::runtime::num_devices_from_env());
    ordo::conformance::backends() = {ordo::conformance::mpi_backend(world, harness)};
  } catch (const ordo::Error& e) {
    std::fprintf(stderr, "conformance: cannot join the MPI job: %s\n", e.what());
    return 1;  // without MPI_Finalize, whose fence would wait for the peers: mpirun ends the job
  }

  ::testing::InitGoogleTest(&argc, argv);
  int failed = RUN_ALL_TESTS();
  // A run whose filter matched nothing, or whose tests all skipped, is a
  // failure: mpi_tests.cmake picks the tests of each run by filter.
  if (failed == 0 && ::testing::UnitTest::GetInstance()->successful_test_count() == 0) {
    std::fprintf(stderr, "conformance: no test ran to success (filter or environment wrong)\n");
    failed = 1;
  }
  MPI_Comm_free(&harness);
  MPI_Finalize();  // MPI is this main's: the world does not finalize it
  return failed;
}
