// Which backend serves a process: ORDO_BACKEND, else by mpirun.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>
#include <string>

#include "comm/backend.h"
#include "comm/factory.h"
#include "ordo/error.h"
#include "ordo/runtime.h"

namespace ordo::comm {
namespace {

std::string error_of(const char* ordo_backend, const char* mpi_world_size) {
  try {
    choose_backend(ordo_backend, mpi_world_size);
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(BackendTest, WithoutMpirunInProcessIsTheDefault) {
  EXPECT_EQ(choose_backend(nullptr, nullptr), Backend::kInProcess);
  EXPECT_EQ(choose_backend("", ""), Backend::kInProcess);
}

// A job of one process has nothing to send: its devices are threads.
TEST(BackendTest, MpirunWithOneProcessStaysInProcess) {
  EXPECT_EQ(choose_backend(nullptr, "1"), Backend::kInProcess);
}

TEST(BackendTest, InProcessAskedForUnderMpirunIsAWorldOfItsOwn) {
  EXPECT_EQ(choose_backend("in_process", "4"), Backend::kInProcess);
}

TEST(BackendTest, UnknownNamesTheChoices) {
  EXPECT_EQ(error_of("tcp", nullptr), "ORDO_BACKEND: 'tcp' is not one of in_process, mpi");
  EXPECT_EQ(error_of("MPI", "2"), "ORDO_BACKEND: 'MPI' is not one of in_process, mpi");
}

TEST(BackendTest, AWorldSizeThatIsNoCountIsAnError) {
  EXPECT_NE(error_of(nullptr, "two").find("OMPI_COMM_WORLD_SIZE: 'two' is not a count of processes"),
            std::string::npos);
  EXPECT_NE(error_of(nullptr, "0").find("OMPI_COMM_WORLD_SIZE: '0'"), std::string::npos);
}

#ifdef ORDO_HAVE_MPI
TEST(BackendTest, MpirunWithSeveralProcessesUsesMpi) {
  EXPECT_EQ(choose_backend(nullptr, "2"), Backend::kMpi);
  EXPECT_EQ(choose_backend("mpi", nullptr), Backend::kMpi);
  EXPECT_EQ(choose_backend("mpi", "1"), Backend::kMpi);
  EXPECT_STREQ(backend_name(Backend::kMpi), "mpi");
}

// A child forked from a process of the job has copies of its MPI state but
// is no process of it: asking for MPI there is an error, before MPI is
// touched, and the child can still start in-process.
TEST(BackendTest, MpiInAForkedChildIsRefused) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int code = 0;
    setenv("ORDO_BACKEND", "mpi", 1);
    try {
      ordo::init(1);
      code = 1;
    } catch (const InvalidArgument& e) {
      if (std::string(e.what()).find("was forked from pid " + std::to_string(getppid())) == std::string::npos) code = 2;
    }
    setenv("ORDO_BACKEND", "in_process", 1);
    ordo::init(1);
    if (ordo::world_size() != 1) code = 3;
    ordo::shutdown();
    _exit(code);
  }
  int status = -1;
  for (int i = 0; i < 300 && waitpid(child, &status, WNOHANG) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (waitpid(child, &status, WNOHANG) == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the forked child did not end within 30 s";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: MPI started, 2: another message, 3: no in-process runtime";
}
#else
// Never in-process by itself under mpirun: each process would be its own
// world, and the job would compute something else without a word.
TEST(BackendTest, MpiWithoutTheBackendSaysHowToGetIt) {
  EXPECT_NE(error_of("mpi", nullptr).find("ORDO_BACKEND=mpi: this build of ordo has no MPI backend"),
            std::string::npos);
  const std::string under_mpirun = error_of(nullptr, "2");
  EXPECT_NE(under_mpirun.find("mpirun started 2 processes: this build of ordo has no MPI backend"),
            std::string::npos);
  EXPECT_NE(under_mpirun.find("apt-get install libopenmpi-dev openmpi-bin"), std::string::npos);
  EXPECT_NE(under_mpirun.find("ORDO_BACKEND=in_process"), std::string::npos);
}
#endif

TEST(BackendTest, InProcessWorldIsOneProcess) {
  World world = open_world(Backend::kInProcess, 3);
  EXPECT_EQ(world.topology.world_size(), 3);
  EXPECT_EQ(world.topology.process_count(), 1);
  ASSERT_NE(world.communicator, nullptr);
  EXPECT_STREQ(backend_name(Backend::kInProcess), "in_process");
}

// The runtime reads ORDO_BACKEND at every start: a bad one starts nothing,
// and the next start, with it fixed, works.
TEST(BackendTest, RuntimeStartRefusesAnUnknownBackendAndLeavesNothing) {
  ASSERT_FALSE(ordo::is_initialized());
  ASSERT_EQ(setenv("ORDO_BACKEND", "shared_memory", 1), 0);
  EXPECT_THROW(ordo::init(2), InvalidArgument);
  EXPECT_FALSE(ordo::is_initialized());
  ASSERT_EQ(setenv("ORDO_BACKEND", "in_process", 1), 0);
  ordo::init(2);
  EXPECT_EQ(ordo::world_size(), 2);
  ordo::shutdown();
  ASSERT_EQ(unsetenv("ORDO_BACKEND"), 0);
}

}  // namespace
}  // namespace ordo::comm
