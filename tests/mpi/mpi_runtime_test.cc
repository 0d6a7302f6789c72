// The runtime under mpirun (tests/mpi/mpi_tests.cmake): the mpi backend
// chosen by itself, the world of every process's devices, the ordinals as
// torch_xla means them, restarts on the one MPI job of the process, and a
// start that cannot be, which leaves nothing running.
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ordo/error.h"
#include "ordo/ordo.h"
#include "runtime/runtime.h"

namespace ordo {
namespace {

int env_int(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr) ADD_FAILURE() << name << " is not set: not started by mpirun";
  return text == nullptr ? -1 : std::atoi(text);
}

void expect_the_job(int devices) {
  const int processes = env_int("OMPI_COMM_WORLD_SIZE");
  const int rank = env_int("OMPI_COMM_WORLD_RANK");
  const int local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK");
  EXPECT_EQ(world_size(), processes * devices);
  EXPECT_EQ(num_devices(), devices);
  for (int index = 0; index < devices; ++index) {
    EXPECT_EQ(get_ordinal(index), rank * devices + index);
    EXPECT_EQ(get_local_ordinal(index), local_rank * devices + index);
  }
  std::mutex mu;
  std::vector<int> seen(static_cast<size_t>(devices), -1);  // by index: the ordinal fn got
  spawn([&](int ordinal) {
    std::lock_guard<std::mutex> lock(mu);
    seen[static_cast<size_t>(current_device())] = ordinal;
  });
  for (int index = 0; index < devices; ++index) EXPECT_EQ(seen[static_cast<size_t>(index)], rank * devices + index);
}

TEST(MpiRuntime, StartsOnTheJobAndRestartsOnIt) {
  const int devices = runtime::num_devices_from_env();
  expect_the_job(devices);  // started on first use
  shutdown();
  init(devices);
  expect_the_job(devices);
  shutdown();
  // MPI starts once per process: the job keeps its count of devices.
  try {
    init(devices + 1);
    ADD_FAILURE() << "started with another count of devices than the job's";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("cannot drive " + std::to_string(devices + 1)), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(is_initialized());
  init(devices);
  expect_the_job(devices);
  shutdown();
}

// Started with ORDO_NUM_DEVICES differing by process (mpirun's MPMD form).
TEST(MpiRuntimeDisagreeing, EveryProcessFailsToStartAndNothingRuns) {
  if (std::getenv("ORDO_TEST_DISAGREEING") == nullptr) GTEST_SKIP() << "run by mpi_tests.cmake";
  try {
    world_size();
    ADD_FAILURE() << "the processes disagree on their devices, and yet the runtime started";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("disagree on how many devices each drives (ORDO_NUM_DEVICES)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(is_initialized());
}

}  // namespace
}  // namespace ordo
