// ordo::spawn and the binding of a device's driving thread to a CPU.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "device/cpu_placement.h"
#include "runtime/runtime.h"
#include "test_util.h"

namespace ordo {
namespace {

using SpawnTest = testing::FourDeviceTest;

// The CPUs the calling thread may run on.
std::vector<int> cpus_of_this_thread() {
  cpu_set_t set;
  EXPECT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(set), &set), 0);
  std::vector<int> ids;
  for (int id = 0; id < CPU_SETSIZE; ++id) {
    if (CPU_ISSET(id, &set)) ids.push_back(id);
  }
  return ids;
}

TEST_F(SpawnTest, RunsOnEveryDeviceWithThatDeviceCurrent) {
  std::vector<int> current(4, -1);
  std::vector<float> sums(4, 0);
  spawn([&](int ordinal) {
    current[ordinal] = current_device();
    // Every device takes part, or this would wait for the missing ones.
    sums[ordinal] = all_reduce(ReduceType::kSum, full({}, ordinal + 1.0, DType::kFloat32)).item<float>();
  });
  EXPECT_EQ(current, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(sums, (std::vector<float>{10, 10, 10, 10}));
}

TEST_F(SpawnTest, CountChoosesTheFirstDevices) {
  std::mutex mu;
  std::multiset<int> called;
  spawn(
      [&](int ordinal) {
        std::lock_guard<std::mutex> lock(mu);
        called.insert(ordinal);
      },
      2);
  EXPECT_EQ(called, (std::multiset<int>{0, 1}));
}

TEST_F(SpawnTest, CountOutOfRangeIsAnErrorAndRunsNothing) {
  std::atomic<int> calls{0};
  for (int count : {0, 5}) {
    EXPECT_THROW(spawn([&](int) { ++calls; }, count), InvalidArgument) << count;
  }
  EXPECT_EQ(calls.load(), 0);
}

// What every device of a clean spawn gets, after a step: the sum of an
// all_reduce over every device, an all_gather and an all_reduce in pairs
// of ordinal + 1, then a rendezvous of the ordinals.
struct CleanResults {
  float sum = 0;
  std::vector<float> gathered;
  float pair_sum = 0;
  std::string ordinals;
  bool operator==(const CleanResults&) const = default;
};

std::vector<CleanResults> spawn_clean_step() {
  std::vector<CleanResults> results(4);
  spawn([&](int ordinal) {
    mark_step();  // would throw a failure kept from the failed spawn
    const Tensor x = full({1}, ordinal + 1.0, DType::kFloat32);
    CleanResults& mine = results[ordinal];
    mine.sum = all_reduce(ReduceType::kSum, x).to_vector<float>()[0];
    mine.gathered = all_gather(x).to_vector<float>();
    mine.pair_sum = all_reduce(ReduceType::kSum, x, 1.0, {{0, 1}, {2, 3}}).to_vector<float>()[0];
    for (const std::string& payload : rendezvous("clean", std::to_string(ordinal))) mine.ordinals += payload;
  });
  return results;
}

// A spawn after one that failed meets as in a new runtime. The fixture
// starts every test on a fresh runtime, which forgets failures too: no test
// spawned again after a failed spawn, so none saw the next one fail.
void expect_later_spawns_start_clean() {
  const std::vector<float> gathered{1, 2, 3, 4};
  const std::vector<CleanResults> expected{
      {10, gathered, 3, "0123"}, {10, gathered, 3, "0123"}, {10, gathered, 7, "0123"}, {10, gathered, 7, "0123"}};
  for (int attempt = 2; attempt <= 3; ++attempt) {
    try {
      EXPECT_EQ(spawn_clean_step(), expected) << "spawn " << attempt;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "spawn " << attempt << ": " << e.what();
    }
  }
}

TEST_F(SpawnTest, TheFirstExceptionIsRethrownAndPeersFailInsteadOfWaiting) {
  // Far longer than the test may take: peers must fail because device 1
  // is gone, not because they timed out.
  set_collective_timeouts({60.0, 120.0});
  std::vector<std::string> peer_errors(4);
  try {
    spawn([&](int ordinal) {
      if (ordinal == 1) throw std::runtime_error("device 1 gave up");
      try {
        all_reduce(ReduceType::kSum, ones({3})).to_vector<float>();
      } catch (const CollectiveError& e) {
        peer_errors[ordinal] = e.what();
        throw;
      }
    });
    ADD_FAILURE() << "spawn returned";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "device 1 gave up");
  }
  for (int ordinal : {0, 2, 3}) {
    EXPECT_NE(peer_errors[ordinal].find("device 1 is gone"), std::string::npos) << peer_errors[ordinal];
    EXPECT_NE(peer_errors[ordinal].find("device 1 gave up"), std::string::npos) << peer_errors[ordinal];
  }
  expect_later_spawns_start_clean();
  set_collective_timeouts({});
}

TEST_F(SpawnTest, PeersOfADeviceWhoseFunctionReturnedFailInsteadOfWaiting) {
  set_collective_timeouts({60.0, 120.0});  // far longer than the test may take
  const auto start = std::chrono::steady_clock::now();
  try {
    spawn([&](int ordinal) {
      if (ordinal == 1) return;  // without the all_reduce its peers run
      all_reduce(ReduceType::kSum, ones({3})).to_vector<float>();
    });
    ADD_FAILURE() << "spawn returned";
  } catch (const CollectiveError& e) {
    EXPECT_PRED_FORMAT2(::testing::IsSubstring, "device 1 is gone (its spawn function returned)", e.what());
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  set_collective_timeouts({});
}

TEST_F(SpawnTest, ACollectiveQueuedBeforeTheFunctionReturnedStillRuns) {
  std::vector<float> sums(4, 0);
  spawn([&](int ordinal) {
    Tensor sum = all_reduce(ReduceType::kSum, full({}, ordinal + 1.0, DType::kFloat32));
    if (ordinal == 3) {
      mark_step();  // queued; nobody on device 3 waits for it
      return;
    }
    sums[ordinal] = sum.item<float>();
  });
  EXPECT_EQ(sums, (std::vector<float>{10, 10, 10, 0}));
}

// A driver that takes turns with its worker keeps its last steps for
// itself (device/worker.h): when it then waits for something else, here
// for its peers to read the collective it queued, the worker thread must
// take them.
TEST_F(SpawnTest, StepsADriverKeptRunWhileItWaitsForItsPeers) {
  std::vector<float> sums(4, 0);
  std::atomic<int> read{0};
  spawn([&](int ordinal) {
    Tensor sum = all_reduce(ReduceType::kSum, full({}, ordinal + 1.0, DType::kFloat32));
    mark_step();
    if (ordinal == 0) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (read.load() < 3 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      EXPECT_EQ(read.load(), 3) << "device 0's step never ran";
    } else {
      sums[ordinal] = sum.item<float>();
      ++read;
    }
  });
  EXPECT_EQ(sums, (std::vector<float>{0, 10, 10, 10}));
}

// Queues ~10 ms of work on the current device (seconds under a sanitizer).
void keep_device_busy() {
  Tensor m = rand_uniform({128, 128}, 7);
  for (int i = 0; i < 40; ++i) m = matmul(m, m) * 0.001;
  mark_step();
}

TEST_F(SpawnTest, ACollectiveQueuedLateFailsAtOnceIfItNeedsADeviceWhoseFunctionReturned) {
  set_collective_timeouts({60.0, 120.0});  // far longer than the test may take
  Tensor late;
  const auto start = std::chrono::steady_clock::now();
  spawn([&](int ordinal) {
    if (ordinal == 0) return;
    if (ordinal == 1) {
      keep_device_busy();  // the all_reduce runs after every other function returned
      late = all_reduce(ReduceType::kSum, ones({2}), 1.0, {{0, 1}, {2, 3}});
      mark_step();
      return;
    }
    all_reduce(ReduceType::kSum, ones({2}), 1.0, {{0, 1}, {2, 3}}).to_vector<float>();
  });
  // Waiting for the timeout would take 120 s; the busy work takes seconds
  // at most (under ThreadSanitizer).
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
  try {
    late.to_vector<float>();
    ADD_FAILURE() << "the all_reduce without device 0 completed";
  } catch (const CollectiveError& e) {
    EXPECT_PRED_FORMAT2(::testing::IsSubstring, "device 0 is gone (its spawn function returned)", e.what());
  }
  set_collective_timeouts({});
}

TEST_F(SpawnTest, ASpawnOfSomeDevicesReturnsWhileItsCollectivesWaitForTheOthers) {
  set_collective_timeouts({60.0, 120.0});
  std::vector<Tensor> sums(4);
  const auto start = std::chrono::steady_clock::now();
  spawn(
      [&](int ordinal) {
        sums[ordinal] = all_reduce(ReduceType::kSum, ones({}));
        mark_step();  // waits on the worker for devices 2 and 3
      },
      2);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  for (int d : {2, 3}) {
    DeviceGuard on(d);
    sums[d] = all_reduce(ReduceType::kSum, ones({}));
    mark_step();
  }
  for (const Tensor& sum : sums) EXPECT_EQ(sum.item<float>(), 4);
  set_collective_timeouts({});
}

TEST_F(SpawnTest, ClearingAbsenceCancelsAMarkStillQueued) {
  {
    DeviceGuard on(1);
    keep_device_busy();
  }
  mark_device_absent(1, "nobody drives it");  // queued behind the work
  clear_device_absent(1);
  wait_device_ops();
  std::vector<float> sums(4, 0);
  spawn([&](int ordinal) { sums[ordinal] = all_reduce(ReduceType::kSum, ones({})).item<float>(); });
  EXPECT_EQ(sums, (std::vector<float>{4, 4, 4, 4}));
}

TEST_F(SpawnTest, DevicesAreDrivenAgainAfterASpawn) {
  auto sum_on_every_device = [] {
    std::vector<float> sums(4, 0);
    spawn([&](int ordinal) {
      sums[ordinal] = all_reduce(ReduceType::kSum, full({}, ordinal + 1.0, DType::kFloat32)).item<float>();
    });
    return sums;
  };
  EXPECT_EQ(sum_on_every_device(), (std::vector<float>{10, 10, 10, 10}));
  EXPECT_EQ(sum_on_every_device(), (std::vector<float>{10, 10, 10, 10}));
  // And by one thread that drives every device in turn.
  std::vector<Tensor> sums;
  for (int d = 0; d < 4; ++d) {
    DeviceGuard on(d);
    sums.push_back(all_reduce(ReduceType::kSum, full({}, d + 1.0, DType::kFloat32)));
    mark_step();
  }
  for (const Tensor& sum : sums) EXPECT_EQ(sum.item<float>(), 10);
}

class SpawnAfterAFailureTest : public testing::FourDeviceLongTimeoutsTest {};

TEST_F(SpawnAfterAFailureTest, ASpawnAfterOneThatThrewWhileItsPeersWaitedStartsClean) {
  EXPECT_THROW(spawn([](int ordinal) {
                 all_reduce(ReduceType::kSum, ones({2})).to_vector<float>();
                 if (ordinal == 1) throw std::runtime_error("device 1 gave up");
                 all_reduce(ReduceType::kSum, ones({2})).to_vector<float>();  // waits for device 1
               }),
               std::runtime_error);
  expect_later_spawns_start_clean();
}

TEST_F(SpawnAfterAFailureTest, ASpawnAfterOneThatThrewWithACollectiveTracedStartsClean) {
  // Device 1's all_reduce is traced and never run: run in the next spawn,
  // it would meet that spawn's first collective.
  EXPECT_THROW(spawn([](int ordinal) {
                 Tensor pending = all_reduce(ReduceType::kSum, full({1}, 100.0, DType::kFloat32));
                 if (ordinal == 1) throw std::runtime_error("device 1 gave up");
                 pending.to_vector<float>();
               }),
               std::runtime_error);
  expect_later_spawns_start_clean();
}

TEST_F(SpawnAfterAFailureTest, ASpawnAfterOneThatTimedOutStartsClean) {
  set_collective_timeouts({0.05, 0.3});
  ::testing::internal::CaptureStderr();  // the timeout's warnings
  EXPECT_THROW(spawn([](int ordinal) {
                 if (ordinal == 3) {
                   std::this_thread::sleep_for(std::chrono::milliseconds(600));  // past its peers' timeout
                   return;
                 }
                 all_reduce(ReduceType::kSum, ones({2})).to_vector<float>();
               }),
               CollectiveTimeoutError);
  ::testing::internal::GetCapturedStderr();
  set_collective_timeouts(testing::kLongTimeouts);
  expect_later_spawns_start_clean();
}

TEST_F(SpawnAfterAFailureTest, ASpawnAfterOneWhoseFunctionsCaughtTheFailureStartsClean) {
  // Nothing stays failed, but device 3 never took the collective its
  // peers failed in: the groups are out of step.
  spawn([](int ordinal) {
    if (ordinal == 3) return;
    EXPECT_THROW(all_reduce(ReduceType::kSum, ones({2})).to_vector<float>(), CollectiveError);
  });
  expect_later_spawns_start_clean();
}

TEST_F(SpawnTest, AShutdownInASpawnedFunctionIsRefusedAndItsPeersGoOn) {
  // Before, it was accepted: the peers went on in a new runtime whose
  // device 1 nobody drove, and waited for it until the timeout.
  std::string refused;
  std::vector<float> sums(4, 0);
  spawn([&](int ordinal) {
    if (ordinal == 1) {
      try {
        shutdown();
      } catch (const InvalidArgument& e) {
        refused = e.what();
      }
    }
    sums[ordinal] = all_reduce(ReduceType::kSum, ones({})).item<float>();
  });
  EXPECT_EQ(refused,
            "shutdown: called by the spawn function of ordinal 1; only the caller of spawn may do this, after spawn "
            "returned");
  EXPECT_EQ(sums, (std::vector<float>{4, 4, 4, 4}));
  shutdown();  // the caller may, after spawn returned
  EXPECT_FALSE(is_initialized());
}

TEST_F(SpawnTest, AThreadEndedEarlyCountsAsAFailure) {
  try {
    spawn([](int ordinal) {
      if (ordinal == 2) pthread_exit(nullptr);
    });
    ADD_FAILURE() << "spawn returned";
  } catch (const ExecutionError& e) {
    EXPECT_PRED_FORMAT2(::testing::IsSubstring, "device 2 ended before its function returned", e.what());
  }
}

// Waiting for its device, a driver runs the device's graph itself; a
// cancellation that comes while it waits in that graph's collective is
// acted on after the collective, not through it (which would end the
// process, or leave the collective half-joined).
TEST_F(SpawnTest, ADriverCancelledInsideItsDevicesCollectiveUnwindsAfterIt) {
  std::atomic<pthread_t> driver0{};
  std::atomic<bool> waiting{false};
  std::vector<float> sums(4, 0);
  try {
    spawn([&](int ordinal) {
      if (ordinal == 0) driver0 = pthread_self();
      if (ordinal == 1) {
        while (!waiting) std::this_thread::yield();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        pthread_cancel(driver0.load());
      }
      Tensor sum = all_reduce(ReduceType::kSum, full({}, 1.0, DType::kFloat32));
      mark_step();
      if (ordinal == 0) {
        waiting = true;
        wait_device_ops(0);  // meets devices 1-3 here, or on its worker
        pthread_testcancel();
        ADD_FAILURE() << "device 0 was not cancelled";
      }
      sums[ordinal] = sum.item<float>();
    });
    ADD_FAILURE() << "spawn returned";
  } catch (const ExecutionError& e) {
    EXPECT_PRED_FORMAT2(::testing::IsSubstring, "device 0 ended before its function returned", e.what());
  }
  EXPECT_EQ(sums, (std::vector<float>{0, 4, 4, 4}));
}

TEST_F(SpawnTest, SpawnedThreadsAreBoundToTheirDevicesCpus) {
  const std::vector<int> allowed = cpus_of_this_thread();
  std::vector<std::vector<int>> bound(4);
  spawn([&](int ordinal) { bound[ordinal] = cpus_of_this_thread(); });
  for (int ordinal = 0; ordinal < 4; ++ordinal) {
    if (allowed.size() < 2) {
      EXPECT_EQ(bound[ordinal], allowed) << "one CPU: nothing to choose";
      continue;
    }
    const int index = device::driver_cpu(ordinal, 4, static_cast<int>(allowed.size()));
    const int cpu = allowed[static_cast<size_t>(index) % allowed.size()];
    EXPECT_EQ(bound[ordinal], std::vector<int>{cpu}) << ordinal;
  }
}

// mark_step keeps a device's steps for its driver exactly when the two take
// turns on one CPU (device/worker.h, Leftover).
TEST_F(SpawnTest, ADriverTakesTurnsWithItsWorkerWhenTheyShareItsCpu) {
  const int cpus = static_cast<int>(cpus_of_this_thread().size());
  std::vector<int> takes_turns(4, -1);
  spawn([&](int ordinal) {
    takes_turns[ordinal] = runtime::get().device(LocalDevice(ordinal)).worker().takes_turns_with_caller();
  });
  for (int ordinal = 0; ordinal < 4; ++ordinal) {
    const bool shared = cpus == 1 || device::driver_cpu(ordinal, 4, cpus) % cpus == device::worker_cpu(ordinal) % cpus;
    EXPECT_EQ(takes_turns[ordinal], shared ? 1 : 0) << ordinal;
  }
  std::thread([&] {
    EXPECT_EQ(runtime::get().device(LocalDevice(0)).worker().takes_turns_with_caller(), cpus == 1) << "an unbound thread";
    bind_thread_to_device(0);
    EXPECT_EQ(runtime::get().device(LocalDevice(1)).worker().takes_turns_with_caller(), cpus == 1) << "another device's worker";
  }).join();
}

TEST(CpuPlacementTest, DriversShareTheirWorkersCpuUnlessThereAreTwoCpusPerDevice) {
  struct Case {
    int devices, cpus;
    std::vector<int> workers, drivers;  // by ordinal; indices wrap around the CPUs
  };
  for (const Case& c : std::vector<Case>{{1, 1, {0}, {0}},
                                         {1, 2, {0}, {1}},
                                         {2, 2, {0, 1}, {0, 1}},
                                         {4, 2, {0, 1, 2, 3}, {0, 1, 2, 3}},
                                         {4, 7, {0, 1, 2, 3}, {0, 1, 2, 3}},
                                         {4, 8, {0, 1, 2, 3}, {4, 5, 6, 7}},
                                         {3, 64, {0, 1, 2}, {3, 4, 5}}}) {
    for (int ordinal = 0; ordinal < c.devices; ++ordinal) {
      EXPECT_EQ(device::worker_cpu(ordinal), c.workers[ordinal]);
      EXPECT_EQ(device::driver_cpu(ordinal, c.devices, c.cpus), c.drivers[ordinal])
          << "device " << ordinal << " of " << c.devices << " on " << c.cpus << " CPUs";
    }
  }
}

TEST(CpuPlacementTest, ThreadsAreUnpinnedWhereSeveralDevicesDriversHandOffTheGil) {
  struct Case {
    std::optional<bool> setting;
    bool hand_off_gil;
    int local_devices;
    bool binds;
  };
  for (const Case& c : std::vector<Case>{{std::nullopt, false, 4, true},
                                         {std::nullopt, true, 1, true},
                                         {std::nullopt, true, 2, false},
                                         {true, true, 4, true},
                                         {false, false, 1, false}}) {
    EXPECT_EQ(device::binds_cpus(c.setting, c.hand_off_gil, c.local_devices), c.binds)
        << "ORDO_CPU_BIND " << (c.setting ? (*c.setting ? "cores" : "none") : "unset") << ", GIL handed off "
        << c.hand_off_gil << ", " << c.local_devices << " devices";
  }
}

TEST_F(SpawnTest, BindingChecksTheDeviceAndTakesTheCurrentOneByDefault) {
  std::thread([] {
    EXPECT_THROW(bind_thread_to_device(4), InvalidArgument);
    set_current_device(2);
    bind_thread_to_device(-1);
    const std::vector<int> bound = cpus_of_this_thread();
    if (device::usable_cpu_count() >= 2) {
      EXPECT_EQ(bound.size(), 1u);
    }
  }).join();
}

// The CPUs each device's worker thread may run on. Nobody drains, which
// would run the task on the draining thread.
std::vector<std::vector<int>> worker_cpus() {
  std::vector<std::vector<int>> cpus(static_cast<size_t>(num_devices()));
  for (int d = 0; d < num_devices(); ++d) {
    std::promise<std::vector<int>> cpus_of_worker;
    runtime::get().device(LocalDevice(d)).worker().submit(
        [&cpus_of_worker] { cpus_of_worker.set_value(cpus_of_this_thread()); });
    cpus[d] = cpus_of_worker.get_future().get();
  }
  return cpus;
}

TEST_F(SpawnTest, ABoundThreadDoesNotNarrowTheCpusOfLaterWorkers) {
  const std::vector<int> allowed = cpus_of_this_thread();
  if (allowed.size() < 2) GTEST_SKIP() << "one CPU: nothing to choose";
  std::vector<std::vector<int>> expected;
  for (int d = 0; d < 4; ++d) {
    expected.push_back({allowed[static_cast<size_t>(device::worker_cpu(d)) % allowed.size()]});
  }
  EXPECT_EQ(worker_cpus(), expected);
  // Workers are started by the thread that starts the runtime and inherit
  // its CPUs: restarted from a bound thread, they still spread out.
  std::thread([] {
    bind_thread_to_device(0);
    shutdown();
    init(4);
  }).join();
  EXPECT_EQ(worker_cpus(), expected);
}

}  // namespace
}  // namespace ordo
