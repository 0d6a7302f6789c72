// The spawn core (api/spawned_devices.h) that ordo::spawn, Python's
// ordo.spawn and run_on_devices share: outcomes by ordinal with the time of
// each failure, the news its options ask for, only in the runtime it
// started on, and a caller that is interrupted while it waits.
#include "api/spawned_devices.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/interrupt.h"
#include "test_util.h"

namespace ordo {
namespace {

using namespace std::chrono_literals;
using api::SpawnClock;
using api::SpawnedDevices;
using api::SpawnedOutcome;
using api::SpawnOptions;

using testing::kLongTimeouts;
using SpawnedDevicesTest = testing::FourDeviceLongTimeoutsTest;
constexpr auto kPrompt = 20s;

std::string message_of(const std::exception_ptr& error) {
  if (!error) return "no exception";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "not a std::exception";
}

template <typename E>
bool is(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const E&) {
    return true;
  } catch (...) {
  }
  return false;
}

void all_reduce_of_ones(const ReplicaGroups& groups = {}) {
  all_reduce(ReduceType::kSum, ones({2}), 1.0, groups).to_vector<float>();
}

// An interrupt check that says "interrupt" from `at` on.
struct InterruptAt {
  SpawnClock::time_point at;
  static bool check(void* context) noexcept { return SpawnClock::now() >= static_cast<InterruptAt*>(context)->at; }
};

TEST_F(SpawnedDevicesTest, EachOutcomeSaysWhatItsCallThrewAndWhenSoThatTheFirstInTimeIsTheCause) {
  const auto start = SpawnClock::now();
  SpawnOptions options;
  options.failure_reason_prefix = "its test function threw: ";
  SpawnedDevices devices(
      [](int ordinal) {
        if (ordinal == 2) throw std::runtime_error("device 2 gave up");
        if (ordinal == 3) pthread_exit(nullptr);
        all_reduce_of_ones();  // fails: device 2 (or 3) is gone
      },
      4, options);
  const std::vector<SpawnedOutcome> outcomes = devices.finish();
  EXPECT_LT(SpawnClock::now() - start, kPrompt);
  ASSERT_EQ(outcomes.size(), 4u);
  for (const SpawnedOutcome& outcome : outcomes) {
    EXPECT_TRUE(outcome.ended);
    EXPECT_TRUE(outcome.error);
    EXPECT_GE(outcome.failed_at, start);
  }
  EXPECT_EQ(message_of(outcomes[2].error), "device 2 gave up");
  EXPECT_TRUE(is<ExecutionError>(outcomes[3].error)) << message_of(outcomes[3].error);
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, "device 3 ended before its function returned",
                      message_of(outcomes[3].error));
  for (int ordinal : {0, 1}) {
    const std::string message = message_of(outcomes[ordinal].error);
    EXPECT_TRUE(is<CollectiveError>(outcomes[ordinal].error)) << message;
    // Its collective failed because a peer was gone, so after that peer.
    EXPECT_GT(outcomes[ordinal].failed_at, std::min(outcomes[2].failed_at, outcomes[3].failed_at));
    EXPECT_TRUE(message.find("device 2 is gone (its test function threw: device 2 gave up)") != std::string::npos ||
                message.find("device 3 is gone (the spawn thread of device 3 ended") != std::string::npos)
        << message;
  }
  const int first = api::first_failure(outcomes);
  EXPECT_TRUE(first == 2 || first == 3) << first;
  for (const SpawnedOutcome& outcome : outcomes) EXPECT_LE(outcomes[first].failed_at, outcome.failed_at);
}

TEST(FirstFailureTest, IsTheEarliestFailureOrNone) {
  const SpawnClock::time_point t0 = SpawnClock::now();
  const std::exception_ptr error = std::make_exception_ptr(std::runtime_error("x"));
  std::vector<SpawnedOutcome> outcomes(4);
  for (SpawnedOutcome& outcome : outcomes) outcome.ended = true;
  EXPECT_EQ(api::first_failure(outcomes), -1);
  outcomes[3] = {error, t0 + 2ms, true};
  outcomes[1] = {error, t0 + 5ms, true};
  EXPECT_EQ(api::first_failure(outcomes), 3);
  outcomes[2] = {error, t0 + 1ms, true};
  EXPECT_EQ(api::first_failure(outcomes), 2);
}

TEST_F(SpawnedDevicesTest, ACountOutOfRangeNamesTheArgumentAndRunsNothing) {
  std::atomic<int> calls{0};
  SpawnOptions options;
  options.count_name = "nprocs";
  for (int64_t count : {int64_t{0}, int64_t{5}, int64_t{1} << 40}) {
    try {
      SpawnedDevices devices([&](int) { ++calls; }, count, options);
      ADD_FAILURE() << "started " << count;
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(std::string(e.what()), "spawn: nprocs must be in [1, 4], got " + std::to_string(count));
    }
  }
  EXPECT_EQ(calls.load(), 0);
}

TEST_F(SpawnedDevicesTest, WithoutAbsenceAPeerWaitsForADeviceWhoseCallReturned) {
  set_collective_timeouts({0.05, 0.3});
  auto lonely_all_reduce = [](int ordinal) {
    if (ordinal == 0) all_reduce_of_ones({{0, 1}, {2}, {3}});  // device 1 never joins
  };
  SpawnOptions without_absence;
  without_absence.absence = false;
  ::testing::internal::CaptureStderr();  // the timeout's warning
  std::vector<SpawnedOutcome> outcomes = SpawnedDevices(lonely_all_reduce, 2, without_absence).finish();
  ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(is<CollectiveTimeoutError>(outcomes[0].error)) << message_of(outcomes[0].error);
  EXPECT_FALSE(outcomes[1].error);

  // With absence (the default), the same wait fails at once, naming why.
  set_collective_timeouts(kLongTimeouts);
  const auto start = SpawnClock::now();
  outcomes = SpawnedDevices(lonely_all_reduce, 2).finish();
  EXPECT_LT(SpawnClock::now() - start, kPrompt);
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, "device 1 is gone (its spawn function returned)",
                      message_of(outcomes[0].error));
}

TEST_F(SpawnedDevicesTest, ARuntimeStartedDuringTheSpawnHearsNothingOfIt) {
  // The caller replaces the runtime while the calls run (as after an
  // interrupted spawn whose threads it left behind; a call may not shut it
  // down itself), then device 0 throws and device 1 returns: neither may
  // be told to the new runtime, whose devices 0 and 1 have peers that
  // drive them.
  std::atomic<int> called{0};
  std::atomic<bool> replaced{false};
  SpawnedDevices devices(
      [&](int) {
        ++called;  // out of ordo until the restart is done
        while (!replaced) std::this_thread::yield();
        if (current_device() == 0) throw std::runtime_error("after the restart");
      },
      2);
  while (called < 2) std::this_thread::yield();
  shutdown();
  init(2);
  replaced = true;
  ASSERT_TRUE(devices.wait());  // both calls ended; finish() would clear what they told
  EXPECT_EQ(message_of(devices.outcomes()[0].error), "after the restart");
  EXPECT_EQ(num_devices(), 2);
  // Device 0 is not gone in the new runtime: its peer waits for it (here,
  // until it times out).
  set_collective_timeouts({0.05, 0.3});
  ::testing::internal::CaptureStderr();  // the timeout's warning
  DeviceGuard on(1);
  try {
    all_reduce_of_ones();
    ADD_FAILURE() << "device 0 joined";
  } catch (const CollectiveError& e) {
    EXPECT_PRED_FORMAT2(::testing::IsSubstring, "device 1 waited 0.3 s", e.what());
  }
  ::testing::internal::GetCapturedStderr();
  devices.finish();
}

TEST_F(SpawnedDevicesTest, ACallerInterruptedWhileTheDevicesRunTheirQueuesStillClearsTheirAbsence) {
  SpawnedDevices devices(
      [](int ordinal) {
        if (ordinal != 1) return;
        Tensor m = rand_uniform({128, 128}, 7);  // ~15 ms of work (seconds under a sanitizer)
        for (int i = 0; i < 60; ++i) m = matmul(m, m) * 0.001;
        mark_step();  // its absence is marked after this
      },
      4);
  InterruptAt interrupt{SpawnClock::now()};
  {
    ScopedInterruptCheck check(&InterruptAt::check, &interrupt);
    ASSERT_TRUE(poll_interrupt());  // the waits for the devices' queues give up at once
    for (const SpawnedOutcome& outcome : devices.finish()) EXPECT_FALSE(outcome.error);
  }
  wait_device_ops(1);
  // Device 1 is present, not absent: its peer waits for it (until it times out).
  set_collective_timeouts({0.05, 0.3});
  ::testing::internal::CaptureStderr();  // the timeout's warning
  try {
    all_reduce_of_ones({{0, 1}, {2}, {3}});
    ADD_FAILURE() << "device 1 joined";
  } catch (const CollectiveError& e) {
    EXPECT_PRED_FORMAT2(::testing::IsSubstring, "device 0 waited 0.3 s", e.what());
  }
  ::testing::internal::GetCapturedStderr();
}

TEST_F(SpawnedDevicesTest, AnInterruptedCallerFailsTheDevicesCollectivesWithItsReason) {
  // Devices 0 and 1 wait for devices 2 and 3, which nobody drives.
  SpawnedDevices devices([](int) { all_reduce_of_ones(); }, 2);
  InterruptAt interrupt{SpawnClock::now() + 200ms};
  const auto start = SpawnClock::now();
  {
    ScopedInterruptCheck check(&InterruptAt::check, &interrupt);
    EXPECT_FALSE(devices.wait());
  }
  EXPECT_LT(SpawnClock::now() - start, kPrompt);
  devices.interrupt("the test interrupted the spawn");
  EXPECT_EQ(devices.wait_until(SpawnClock::now() + kPrompt), std::vector<int>{});
  EXPECT_TRUE(devices.wait());
  const std::vector<SpawnedOutcome> outcomes = devices.finish();
  for (int ordinal : {0, 1}) {
    EXPECT_TRUE(is<CollectiveError>(outcomes[ordinal].error)) << message_of(outcomes[ordinal].error);
    EXPECT_PRED_FORMAT2(::testing::IsSubstring, "the test interrupted the spawn",
                        message_of(outcomes[ordinal].error));
  }
  // The devices stay failed: a later collective that needs them fails at once.
  DeviceGuard on(2);
  EXPECT_THROW(all_reduce_of_ones(), CollectiveError);
}

// Interrupts a spawn of every device whose calls wait for each other
// (device 0 in a rendezvous for device 1, the others in an all_reduce for
// device 0), so that all of them end at once; returns their outcomes.
std::vector<SpawnedOutcome> interrupt_a_deadlocked_spawn() {
  SpawnedDevices devices(
      [](int ordinal) {
        if (ordinal == 0) {
          rendezvous("never", {}, {0, 1});
          return;
        }
        all_reduce_of_ones();
      },
      4);
  std::this_thread::sleep_for(50ms);
  devices.interrupt("the test interrupted the spawn");
  EXPECT_EQ(devices.wait_until(SpawnClock::now() + kPrompt), std::vector<int>{});
  return devices.finish();
}

TEST_F(SpawnedDevicesTest, ASpawnAfterAnInterruptedOneStartsClean) {
  const std::vector<SpawnedOutcome> outcomes = interrupt_a_deadlocked_spawn();
  for (int ordinal : {0, 1, 2, 3}) EXPECT_TRUE(is<CollectiveError>(outcomes[ordinal].error)) << ordinal;
  // Every device failed for the interrupt; the next spawn forgets it.
  std::vector<float> sums(4, 0);
  SpawnedDevices again(
      [&](int ordinal) {
        sums[ordinal] = all_reduce(ReduceType::kSum, full({}, ordinal + 1.0, DType::kFloat32)).item<float>();
      },
      4);
  for (const SpawnedOutcome& outcome : again.finish()) EXPECT_FALSE(outcome.error) << message_of(outcome.error);
  EXPECT_EQ(sums, (std::vector<float>{10, 10, 10, 10}));
}

TEST_F(SpawnedDevicesTest, NoSpawnStartsAfreshWhileAThreadOfAnEarlierOneStillRuns) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto left = std::make_unique<SpawnedDevices>(
      [release](int ordinal) {
        if (ordinal == 1) {
          while (!*release) std::this_thread::sleep_for(1ms);  // still drives device 1
          return;
        }
        all_reduce_of_ones();
      },
      4);
  left->interrupt("the test interrupted the spawn");
  const auto others_deadline = SpawnClock::now() + kPrompt;
  while (left->wait_until(SpawnClock::now() + 10ms).size() > 1 && SpawnClock::now() < others_deadline) {
  }
  EXPECT_EQ(left->wait_until(SpawnClock::now()), std::vector<int>{1});
  left->abandon();
  left.reset();
  // Its devices stay failed: a second driver of device 1 would meet the first's collectives.
  SpawnedDevices meanwhile([](int) { all_reduce_of_ones(); }, 4);
  for (const SpawnedOutcome& outcome : meanwhile.finish()) {
    EXPECT_TRUE(is<CollectiveError>(outcome.error)) << message_of(outcome.error);
  }
  *release = true;
  const auto deadline = SpawnClock::now() + kPrompt;
  while (release.use_count() > 1 && SpawnClock::now() < deadline) std::this_thread::sleep_for(1ms);
  ASSERT_EQ(release.use_count(), 1) << "the left thread never ended";
  SpawnedDevices after([](int) { all_reduce_of_ones(); }, 4);
  for (const SpawnedOutcome& outcome : after.finish()) EXPECT_FALSE(outcome.error) << message_of(outcome.error);
}

TEST_F(SpawnedDevicesTest, ThreadsStillRunningAfterAnInterruptAreReportedAndMayBeLeftBehind) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto devices = std::make_unique<SpawnedDevices>(
      [release](int ordinal) {
        if (ordinal == 1) {
          while (!*release) std::this_thread::sleep_for(1ms);  // busy in code of its own
          return;
        }
        all_reduce_of_ones();
      },
      4);
  devices->interrupt("the test interrupted the spawn");
  // The others' collectives fail at once; device 1 is still running.
  auto others_ended = [&] {
    const std::vector<SpawnedOutcome> outcomes = devices->outcomes();
    return outcomes[0].ended && outcomes[2].ended && outcomes[3].ended;
  };
  const auto deadline = SpawnClock::now() + kPrompt;
  while (!others_ended() && SpawnClock::now() < deadline) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(devices->wait_until(SpawnClock::now() + 50ms), std::vector<int>{1});
  const std::vector<SpawnedOutcome> outcomes = devices->outcomes();
  EXPECT_FALSE(outcomes[1].ended);
  for (int ordinal : {0, 2, 3}) EXPECT_TRUE(is<CollectiveError>(outcomes[ordinal].error)) << ordinal;
  devices->abandon();
  devices.reset();  // returns at once: device 1's thread is detached
  *release = true;
  // Its thread keeps what it needs; it ends on its own.
  const auto left_deadline = SpawnClock::now() + kPrompt;
  while (release.use_count() > 1 && SpawnClock::now() < left_deadline) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(release.use_count(), 1) << "the left thread never ended";
}

TEST_F(SpawnedDevicesTest, WaitUntilGivesUpAtItsDeadlineOrWhenTheCallerIsInterrupted) {
  std::atomic<bool> release{false};
  SpawnedDevices devices(
      [&](int) {
        while (!release) std::this_thread::sleep_for(1ms);
      },
      2);
  EXPECT_EQ(devices.wait_until(SpawnClock::now() + 50ms), (std::vector<int>{0, 1}));
  InterruptAt interrupt{SpawnClock::now()};
  {
    ScopedInterruptCheck check(&InterruptAt::check, &interrupt);
    EXPECT_EQ(devices.wait_until(SpawnClock::now() + 1h), (std::vector<int>{0, 1}));
  }
  release = true;
  EXPECT_EQ(devices.wait_until(SpawnClock::now() + kPrompt), std::vector<int>{});
  for (const SpawnedOutcome& outcome : devices.finish()) EXPECT_FALSE(outcome.error);
}

}  // namespace
}  // namespace ordo
