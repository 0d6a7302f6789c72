// Waits that end when they must. Interrupted waits (Ctrl-C in Python comes
// down to these): a wait that is interrupted gives up within a poll period
// and the collective it waited in fails for every peer, naming the reason.
// Deadlines: a timeout shorter than the warning time wins. fork(): a child
// of a busy process starts with no runtime, and a fresh one works.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/interrupt.h"
#include "device/device_data.h"
#include "device/worker.h"
#include "spmd.h"
#include "test_util.h"

namespace ordo {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::run_on_devices;

using testing::kLongTimeouts;
constexpr auto kPrompt = 10s;

template <typename T>
std::string error_of(const testing::DeviceOutcome<T>& outcome) {
  try {
    outcome.get();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no exception";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// An interrupt check that says "interrupt" from `at` on, as Python's does
// once a signal handler raised, and interrupts the waits of `device`.
struct InterruptAt {
  Clock::time_point at;
  int device = -1;
  std::atomic<int> calls{0};

  static bool check(void* context) noexcept {
    auto& self = *static_cast<InterruptAt*>(context);
    ++self.calls;
    if (Clock::now() < self.at) return false;
    if (self.device >= 0) interrupt_device(self.device, "the test interrupted it");
    return true;
  }
};

using CollectiveInterruptTest = testing::FourDeviceLongTimeoutsTest;

TEST_F(CollectiveInterruptTest, AnInterruptedDeviceFailsTheCollectiveItWaitsInForEveryPeer) {
  const Clock::time_point start = Clock::now();
  std::thread interrupter([] {
    std::this_thread::sleep_for(200ms);  // devices 0 and 1 wait for 2 and 3 by now
    interrupt_device(0, "the test interrupted it");
  });
  auto outcomes = run_on_devices<int>(2, [](int) {
    all_reduce(ReduceType::kSum, ones({4})).to_vector<float>();
    return 0;
  });
  interrupter.join();
  EXPECT_LT(Clock::now() - start, kPrompt);
  for (int d = 0; d < 2; ++d) {
    const std::string message = error_of(outcomes[d]);
    EXPECT_TRUE(contains(message, "all_reduce(sum, scale 1) of float32[4] #0 on group [0, 1, 2, 3] was "
                                  "interrupted on device 0: the test interrupted it"))
        << d << ": " << message;
    EXPECT_TRUE(contains(message, "devices that had not arrived: 1 (") ||
                contains(message, "devices that had not arrived: 2 ("))
        << message;
  }
}

TEST_F(CollectiveInterruptTest, OnlyWhatWasQueuedIsInterruptedAndTheGroupStaysInStep) {
  std::thread interrupter([] {
    std::this_thread::sleep_for(200ms);
    interrupt_device(0, "the test interrupted it");
  });
  // Not run_on_devices: a device whose thread raised would be gone.
  std::string first_errors[2];
  std::thread first[2];
  for (int d = 0; d < 2; ++d) {
    first[d] = std::thread([d, &first_errors] {
      DeviceGuard on(d);
      try {
        all_reduce(ReduceType::kSum, ones({2})).to_vector<float>();
      } catch (const CollectiveError& e) {
        first_errors[d] = e.what();
      }
    });
  }
  for (std::thread& thread : first) thread.join();
  interrupter.join();
  for (const std::string& error : first_errors) EXPECT_TRUE(contains(error, "was interrupted on device 0")) << error;
  // Devices 2 and 3 come late to the interrupted collective: it failed for
  // them too. The next one meets every device and runs. (Plain threads
  // again: a spawn would start afresh, forgetting the interrupted one.)
  int late[4] = {0, 0, 0, 0};
  std::thread drivers[4];
  for (int d = 0; d < 4; ++d) {
    drivers[d] = std::thread([d, &late] {
      DeviceGuard on(d);
      try {
        if (d >= 2) {
          try {
            all_reduce(ReduceType::kSum, ones({2})).to_vector<float>();
            late[d] = -1;
            return;
          } catch (const CollectiveError& e) {
            if (!contains(e.what(), "was interrupted on device 0")) {
              late[d] = -2;
              return;
            }
          }
        }
        late[d] = static_cast<int>(all_reduce(ReduceType::kSum, ones({2})).to_vector<float>()[0]);
      } catch (const std::exception&) {
        late[d] = -3;
      }
    });
  }
  for (std::thread& driver : drivers) driver.join();
  for (int d = 0; d < 4; ++d) EXPECT_EQ(late[d], 4) << d;
}

TEST_F(CollectiveInterruptTest, AReaderWithAnInterruptCheckGivesUpAndItsCollectiveFailsForThePeers) {
  const Clock::time_point start = Clock::now();
  auto outcomes = run_on_devices<int>(2, [](int d) {
    InterruptAt interrupt{Clock::now() + 200ms, 0};
    std::optional<ScopedInterruptCheck> check;
    if (d == 0) check.emplace(&InterruptAt::check, &interrupt);
    all_reduce(ReduceType::kSum, ones({4})).to_vector<float>();
    return 0;
  });
  EXPECT_LT(Clock::now() - start, kPrompt);
  // Device 0's reader ran the collective itself or waited for its worker:
  // either way it gives up, and the collective fails for device 1.
  EXPECT_TRUE(contains(error_of(outcomes[0]), "interrupted")) << error_of(outcomes[0]);
  EXPECT_TRUE(contains(error_of(outcomes[1]), "was interrupted on device 0")) << error_of(outcomes[1]);
}

TEST_F(CollectiveInterruptTest, WaitDeviceOpsWithAnInterruptCheckGivesUp) {
  Tensor lonely = all_reduce(ReduceType::kSum, ones({2}));  // devices 1-3 never come
  mark_step();
  InterruptAt interrupt{Clock::now() + 200ms, 0};
  const Clock::time_point start = Clock::now();
  {
    ScopedInterruptCheck check(&InterruptAt::check, &interrupt);
    EXPECT_THROW(wait_device_ops(0), ExecutionError);
  }
  EXPECT_LT(Clock::now() - start, kPrompt);
  EXPECT_GE(interrupt.calls.load(), 2);  // it polled, then said "interrupt"
  try {
    lonely.to_vector<float>();
    ADD_FAILURE() << "the interrupted collective ran";
  } catch (const CollectiveError& e) {
    EXPECT_TRUE(contains(e.what(), "was interrupted on device 0: the test interrupted it")) << e.what();
  }
}

// ---- The worker and the value a reader waits for. ----

TEST(WorkerInterruptTest, ADrainWhoseOwnTaskWasInterruptedRaises) {
  // The waiting thread mostly runs the task itself (the worker thread is
  // asleep), and then the task ends because of the interrupt, leaving the
  // queue empty: the drain must still raise. (A collective run so was
  // reported as a wait that ended well.) A task the worker thread ran
  // sees no interrupt, and its drain may return.
  int interrupted_here = 0, returned_anyway = 0;
  // Until 50 tasks ran here, for up to 10 s (under load the worker thread
  // may win many times in a row).
  const Clock::time_point deadline = Clock::now() + 10s;
  while (interrupted_here < 50 && Clock::now() < deadline) {
    device::Worker worker;
    ScopedInterruptCheck check([](void*) noexcept { return true; }, nullptr);
    std::atomic<bool> ran_here{false};
    const std::thread::id me = std::this_thread::get_id();
    worker.submit([&ran_here, me] {
      if (std::this_thread::get_id() != me) return;
      ran_here.store(true);
      poll_interrupt();  // a wait inside the task sees the interrupt
    });
    bool returned = false;
    try {
      worker.drain();
      returned = true;
    } catch (const ExecutionError&) {
    }
    if (ran_here.load()) {
      ++interrupted_here;
      if (returned) ++returned_anyway;
    }
  }
  EXPECT_GT(interrupted_here, 0);
  EXPECT_EQ(returned_anyway, 0);
}

TEST(WorkerInterruptTest, DrainGivesUpWhileAnotherThreadRunsATaskAndTheTaskStillEnds) {
  device::Worker worker;
  std::atomic<bool> started{false}, release{false}, finished{false};
  worker.submit([&] {
    started.store(true);
    while (!release.load()) std::this_thread::sleep_for(100us);
    finished.store(true);
  });
  while (!started.load()) std::this_thread::sleep_for(100us);  // on the worker thread
  InterruptAt interrupt{Clock::now() + 100ms};
  const Clock::time_point start = Clock::now();
  {
    ScopedInterruptCheck check(&InterruptAt::check, &interrupt);
    EXPECT_THROW(worker.drain(), ExecutionError);
  }
  EXPECT_LT(Clock::now() - start, kPrompt);
  EXPECT_FALSE(finished.load());
  release.store(true);
  worker.drain();  // without a check: waits as before
  EXPECT_TRUE(finished.load());
}

TEST(WorkerInterruptTest, AnInterruptedHelperRunsNothingAndTheWorkerThreadRunsTheQueue) {
  device::Worker worker;
  std::atomic<bool> release{false}, second_done{false};
  std::thread::id first_ran_on, second_ran_on;
  {
    InterruptAt interrupt{Clock::now()};
    ScopedInterruptCheck check(&InterruptAt::check, &interrupt);
    ASSERT_TRUE(poll_interrupt());
    worker.submit([&] {
      first_ran_on = std::this_thread::get_id();
      while (!release.load()) std::this_thread::sleep_for(100us);
    });
    worker.submit([&] {
      second_ran_on = std::this_thread::get_id();
      second_done.store(true);
    });
    EXPECT_FALSE(worker.help_until([] { return false; }));  // returns at once, having run nothing
  }
  release.store(true);
  const Clock::time_point deadline = Clock::now() + kPrompt;
  while (!second_done.load() && Clock::now() < deadline) std::this_thread::sleep_for(100us);
  ASSERT_TRUE(second_done.load());  // nobody waits for the queue: the worker thread ran it
  EXPECT_NE(first_ran_on, std::this_thread::get_id());
  EXPECT_NE(second_ran_on, std::this_thread::get_id());
}

TEST(WorkerInterruptTest, AValueCanBeWaitedForWithADeadline) {
  device::DeviceData data(DType::kFloat32, Shape{});
  const Clock::time_point start = Clock::now();
  EXPECT_FALSE(data.wait_until(start + 50ms));
  EXPECT_GE(Clock::now() - start, 50ms);
  std::thread fulfiller([&data] {
    std::this_thread::sleep_for(20ms);
    data.fail({ErrorCode::kExecution, "failed on purpose"});
  });
  EXPECT_TRUE(data.wait_until(Clock::now() + kPrompt));
  fulfiller.join();
  EXPECT_THROW(data.wait(), ExecutionError);
}

TEST(WorkerInterruptTest, ChecksNestAndAreRunAtMostOncePerPollPeriod) {
  EXPECT_FALSE(has_interrupt_check());
  EXPECT_FALSE(poll_interrupt());
  InterruptAt never{Clock::time_point::max()};
  ScopedInterruptCheck outer(&InterruptAt::check, &never);
  EXPECT_FALSE(poll_interrupt());
  EXPECT_FALSE(poll_interrupt());  // too soon: not run again
  EXPECT_EQ(never.calls.load(), 1);
  {
    InterruptAt now{Clock::now()};
    ScopedInterruptCheck inner(&InterruptAt::check, &now);
    EXPECT_TRUE(poll_interrupt());
    EXPECT_TRUE(interrupted());
    EXPECT_THROW(throw_interrupted("the test's wait"), ExecutionError);
  }
  EXPECT_FALSE(interrupted());  // the outer check applies again
  EXPECT_TRUE(has_interrupt_check());
}

// ---- Deadlines: the timeout always wins. ----

class CollectiveDeadlinesTest : public testing::FourDeviceTest {
 protected:
  void TearDown() override {
    set_collective_timeouts({});
    testing::FourDeviceTest::TearDown();
  }
};

TEST_F(CollectiveDeadlinesTest, ATimeoutShorterThanTheWarningTimeFailsAtTheTimeoutWithoutAWarning) {
  set_collective_timeouts({10.0, 0.5});
  ::testing::internal::CaptureStderr();
  const Clock::time_point start = Clock::now();
  std::string message;
  try {
    all_reduce(ReduceType::kSum, ones({2}), 1.0, {{0, 1}, {2}, {3}}).to_vector<float>();
  } catch (const CollectiveTimeoutError& e) {
    message = e.what();
  }
  const auto waited = Clock::now() - start;
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(message, "device 0 waited 0.5 s in all_reduce")) << message;
  EXPECT_GE(waited, 500ms);
  EXPECT_LT(waited, 5s);  // before, it slept until the warning at 10 s
  EXPECT_FALSE(contains(warnings, "has waited")) << warnings;
}

// ---- fork() beside a running runtime. ----

// What the child found, as its exit code.
enum ChildExit : int {
  kChildFine = 0,
  kParentsRuntimeRuns,
  kShutdownSlow,
  kFreshRuntimeWrong,
  kParentsTensorRead,
  kChildThrew,
};

int forked_child_checks(const Tensor& parents) {
  try {
    if (is_initialized()) return kParentsRuntimeRuns;
    const Clock::time_point start = Clock::now();
    shutdown();  // nothing to shut down: it used to join the parent's workers
    if (Clock::now() - start > 1s) return kShutdownSlow;
    std::atomic<int> wrong{0};
    spawn([&wrong](int d) {
      if (all_reduce(ReduceType::kSum, full({2}, Scalar(1.0 + d), DType::kFloat32)).to_vector<float>()[0] != 3.0f) {
        ++wrong;
      }
    });
    if (wrong.load() != 0 || num_devices() != 2) return kFreshRuntimeWrong;
    try {
      parents.to_vector<float>();
      return kParentsTensorRead;
    } catch (const InvalidArgument&) {
    }
    shutdown();
    return kChildFine;
  } catch (...) {
    return kChildThrew;
  }
}

// The child's exit code, or -1 if it did not exit within the time limit.
int wait_for_child(pid_t child) {
  const Clock::time_point deadline = Clock::now() + 60s;
  while (Clock::now() < deadline) {
    int status = 0;
    if (waitpid(child, &status, WNOHANG) == child) return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    std::this_thread::sleep_for(10ms);
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  return -1;
}

TEST(ForkedChildTest, StartsWithNoRuntimeShutsDownAtOnceAndAFreshOneWorks) {
  shutdown();
  init(2);
  set_collective_timeouts(kLongTimeouts);
  // Both devices run collectives while this thread forks; they agree on
  // when to stop, or one would wait for the other.
  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (int d = 0; d < 2; ++d) {
    busy.emplace_back([d, &stop] {
      DeviceGuard on(d);
      for (;;) {
        Tensor sum = all_reduce(ReduceType::kSum, ones({64}));
        Tensor stopping = all_reduce(ReduceType::kMax, full({1}, Scalar(stop.load() ? 1.0 : 0.0), DType::kFloat32));
        mark_step();
        sum.to_vector<float>();
        if (stopping.to_vector<float>()[0] > 0) return;
      }
    });
  }
  std::this_thread::sleep_for(50ms);
  const Tensor parents = ones({2});
  for (int trial = 0; trial < 5; ++trial) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) _exit(forked_child_checks(parents));
    EXPECT_EQ(wait_for_child(child), kChildFine) << "trial " << trial;
  }
  stop.store(true);
  for (std::thread& thread : busy) thread.join();
  set_collective_timeouts({});
  shutdown();
}

}  // namespace
}  // namespace ordo
