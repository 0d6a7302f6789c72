// The MPI backend's failures across processes, under mpirun at several
// layouts (mpi_tests.cmake): every device of every process gets a clear
// error, in a bounded time, where the programs disagree or a device never
// comes; the group goes on afterwards where the in-process backend's does.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "comm/mpi/mpi_transport.h"
#include "comm/mpi/mpi_world.h"
#include "ordo/collectives.h"
#include "ordo/error.h"
#include "runtime/runtime.h"

namespace ordo::comm {
namespace {

using Clock = std::chrono::steady_clock;

const MpiWorld& world() { return MpiWorld::join(runtime::num_devices_from_env()); }

Communicator& mpi() {
  static Communicator* comm = make_mpi_communicator(world()).release();  // until exit: mpirun ends the job
  return *comm;
}

struct Outcome {
  std::vector<std::string> errors;  // by device
  std::vector<ErrorCode> codes;
  double seconds = 0;
};

// Each local device runs body(device) on a thread of its own.
Outcome on_local_devices(const std::function<void(int)>& body) {
  const Topology& t = world().topology();
  Outcome out{std::vector<std::string>(static_cast<size_t>(t.world_size())),
              std::vector<ErrorCode>(static_cast<size_t>(t.world_size()))};
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < t.local_devices(); ++i) {
    const int d = t.global_ordinal(LocalDevice(i)).value();
    threads.emplace_back([&, d] {
      try {
        body(d);
      } catch (const Error& e) {
        out.errors[static_cast<size_t>(d)] = e.what();
        out.codes[static_cast<size_t>(d)] = e.code();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

void all_reduce(int device, const ir::CollectiveAttrs& attrs, int64_t n = 64) {
  auto in = device::allocate_buffer(DType::kFloat32, {n});
  auto out = device::allocate_buffer(DType::kFloat32, {n});
  const device::Buffer* ins[] = {in.get()};
  const device::Buffer* outs[] = {out.get()};
  mpi().run({ir::OpKind::kAllReduce, attrs, GlobalOrdinal(device), ins, outs});
}

// Every device of every process meets here before the next case.
void barrier() {
  on_local_devices([](int d) { mpi().exchange({GlobalOrdinal(d), "barrier", {}, ""}); });
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The cases run in this order (gtest's, by definition): each leaves the
// world's group in step for the next.
class MpiFailures : public ::testing::Test {
 protected:
  void SetUp() override {
    if (world().topology().world_size() < 2) GTEST_SKIP() << "one device has no peers";
    if (world().size() < 2) GTEST_SKIP() << "the cases are about other processes";
    saved_ = collective_timeouts();
    set_collective_timeouts({1.0, 3.0});
  }
  void TearDown() override {
    if (world().size() >= 2 && world().topology().world_size() >= 2) {
      set_collective_timeouts(saved_);
      barrier();
    }
  }
  CollectiveTimeouts saved_;
  int last() const { return world().topology().world_size() - 1; }
};

TEST_F(MpiFailures, AnAbandonedCollectiveFailsItsPeersOnEveryProcess) {
  const int quitter = last();
  const Outcome out = on_local_devices([&](int d) {
    if (d == quitter) {
      mpi().abandon(ir::OpKind::kAllReduce, {}, GlobalOrdinal(d), "its graph failed: test");
    } else {
      all_reduce(d, {});
    }
  });
  for (int i = 0; i < world().topology().local_devices(); ++i) {
    const int d = world().topology().global_ordinal(LocalDevice(i)).value();
    if (d == quitter) continue;
    const std::string& e = out.errors[static_cast<size_t>(d)];
    EXPECT_TRUE(contains(e, str_cat("device ", quitter, " will not join all_reduce")) && contains(e, "test")) << e;
  }
  EXPECT_LT(out.seconds, 2.5);
  // And the world's collectives go on.
  const Outcome after = on_local_devices([&](int d) { all_reduce(d, {}); });
  for (const std::string& e : after.errors) EXPECT_EQ(e, "");
}

TEST_F(MpiFailures, ADeviceThatNeverComesTimesOutNamingItAndItsProcess) {
  const int missing = last();
  std::string late;
  const Outcome out = on_local_devices([&](int d) {
    if (d != missing) return all_reduce(d, {});
    // It comes once the others have given up, and finds the collective failed.
    std::this_thread::sleep_for(std::chrono::seconds(5));
    try {
      all_reduce(d, {});
    } catch (const Error& e) {
      late = e.what();
    }
  });
  for (int i = 0; i < world().topology().local_devices(); ++i) {
    const int d = world().topology().global_ordinal(LocalDevice(i)).value();
    if (d == missing) continue;
    const std::string& e = out.errors[static_cast<size_t>(d)];
    EXPECT_EQ(out.codes[static_cast<size_t>(d)], ErrorCode::kCollectiveTimeout) << e;
    EXPECT_TRUE(contains(e, str_cat(missing, " (")) && contains(e, "process ")) << e;
  }
  EXPECT_LT(out.seconds, 10.0);
  if (world().topology().is_local(GlobalOrdinal(missing))) {
    EXPECT_FALSE(late.empty()) << "the late device's collective succeeded where its peers' failed";
  }
}

// Last of the world's cases: a device that ran on other replica groups is
// behind on the world's group afterwards, as in-process.
TEST_F(MpiFailures, OtherReplicaGroupsOnAnotherProcessAreAMismatchNotAHang) {
  // The last device runs on replica groups of its own (pairs; alone where
  // the world is too small for a pair that differs from it) where everybody
  // else runs on the whole world: no world group can complete.
  const int w = world().topology().world_size();
  ir::CollectiveAttrs everyone, split;
  if (w >= 4) {
    for (int d = 0; d + 1 < w; d += 2) split.groups.push_back({d, d + 1});
    if (w % 2 == 1) split.groups.push_back({w - 1});
  } else {
    for (int d = 0; d < w; ++d) split.groups.push_back({d});
  }
  const Outcome out = on_local_devices([&](int d) { all_reduce(d, d == last() ? split : everyone); });
  for (int i = 0; i < world().topology().local_devices(); ++i) {
    const int d = world().topology().global_ordinal(LocalDevice(i)).value();
    if (d == last()) continue;  // its own group may complete, or time out waiting in this process
    const std::string& e = out.errors[static_cast<size_t>(d)];
    EXPECT_EQ(out.codes[static_cast<size_t>(d)], ErrorCode::kCollectiveMismatch) << "device " << d << ": " << e;
    EXPECT_TRUE(contains(e, "replica groups")) << e;
  }
  EXPECT_LT(out.seconds, 5.0);
}

TEST_F(MpiFailures, AMismatchedRendezvousFailsBothSides) {
  const Outcome out = on_local_devices([&](int d) {
    mpi().exchange({GlobalOrdinal(d), d == last() ? "other" : "step", {}, "x"});
  });
  for (int i = 0; i < world().topology().local_devices(); ++i) {
    const int d = world().topology().global_ordinal(LocalDevice(i)).value();
    const std::string& e = out.errors[static_cast<size_t>(d)];
    EXPECT_FALSE(e.empty()) << "device " << d;
  }
  EXPECT_LT(out.seconds, 10.0);
}

}  // namespace
}  // namespace ordo::comm
