// The device worker: tasks run one at a time in submission order, whether
// the worker thread or a waiting thread runs them.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "device/worker.h"

namespace ordo::device {
namespace {

using namespace std::chrono_literals;

// Waits up to 10 s for flag; a missed wake-up fails the test instead of
// hanging it.
bool eventually(const std::atomic<bool>& flag) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!flag.load()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(100us);
  }
  return true;
}

// A task that records which thread ran it, and that it ran.
struct RanOn {
  std::atomic<bool> ran{false};
  std::thread::id thread;
  std::function<void()> recorder() {
    return [this] {
      thread = std::this_thread::get_id();
      ran.store(true);
    };
  }
};

TEST(WorkerTest, TasksRunOneAtATimeInSubmissionOrderWhoeverRunsThem) {
  Worker worker;
  std::mutex submit_mu;  // numbers tasks in the order they are queued
  int submitted = 0;
  std::vector<int> ran;  // written by tasks only: ordered by the worker
  std::atomic<bool> in_task{false};
  std::atomic<int> overlaps{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        {
          std::lock_guard<std::mutex> lock(submit_mu);
          worker.submit([&, number = submitted++] {
            if (in_task.exchange(true)) ++overlaps;
            ran.push_back(number);
            in_task.store(false);
          });
        }
        if ((i + t) % 3 == 0) worker.drain();
        if ((i + t) % 3 == 1) worker.help_until([] { return false; });
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  worker.drain();
  EXPECT_EQ(overlaps.load(), 0);
  ASSERT_EQ(ran.size(), 2000u);
  for (size_t i = 0; i < ran.size(); ++i) ASSERT_EQ(ran[i], static_cast<int>(i));
}

TEST(WorkerTest, DrainRunsQueuedTasksOnTheWaitingThread) {
  Worker worker;
  // The worker thread sleeps between tasks: waking it takes longer than
  // taking the task, so the waiting thread runs most of them. On a loaded
  // machine the worker may win many times in a row: tries until the
  // waiting thread runs one, for up to 10 s rather than a fixed count.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  bool ran_here = false;
  while (!ran_here && std::chrono::steady_clock::now() < deadline) {
    std::thread::id ran_on;
    worker.submit([&ran_on] { ran_on = std::this_thread::get_id(); });
    worker.drain();
    ran_here = ran_on == std::this_thread::get_id();
  }
  EXPECT_TRUE(ran_here);
}

TEST(WorkerTest, ATaskTheCallerRunsIsNotTakenByTheSleepingWorkerThread) {
  Worker worker;
  // Once the worker thread sleeps (it ran a task of its own and found the
  // queue empty), nothing wakes it for a task the caller runs.
  std::atomic<bool> warmed{false};
  worker.submit([&warmed] { warmed.store(true); });
  ASSERT_TRUE(eventually(warmed));
  std::this_thread::sleep_for(10ms);
  for (int i = 0; i < 50; ++i) {
    std::thread::id ran_on;
    worker.submit([&ran_on] { ran_on = std::this_thread::get_id(); }, Worker::RunBy::kCaller);
    // Ample time for a woken worker thread to take it (woken, it would
    // take every one).
    std::this_thread::sleep_for(1ms);
    worker.drain();
    ASSERT_EQ(ran_on, std::this_thread::get_id()) << "iteration " << i;
  }
}

TEST(WorkerTest, WhatTheCallerLeavesGoesToTheWorkerThread) {
  Worker worker;
  RanOn task;
  worker.submit(task.recorder(), Worker::RunBy::kCaller);
  // Done at once (a value another graph computed): the caller runs
  // nothing, and hands the task to the worker thread.
  EXPECT_TRUE(worker.help_until([] { return true; }));
  ASSERT_TRUE(eventually(task.ran));
  EXPECT_NE(task.thread, std::this_thread::get_id());
}

TEST(WorkerTest, DrainWaitsForTheTaskAnotherThreadRunsAndTheRestOfTheQueue) {
  Worker worker;
  std::atomic<bool> started{false}, release{false}, first_done{false}, second_done{false};
  worker.submit([&] {
    started.store(true);
    while (!release.load()) std::this_thread::sleep_for(100us);
    first_done.store(true);
  });
  ASSERT_TRUE(eventually(started));  // on the worker thread: nobody else runs tasks yet
  worker.submit([&] {
    EXPECT_TRUE(first_done.load());
    second_done.store(true);
  });
  std::thread drainer([&] { worker.drain(); });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(second_done.load());  // not beside the running task
  release.store(true);
  drainer.join();
  EXPECT_TRUE(second_done.load());
}

TEST(WorkerTest, HelpUntilStopsWhenDoneAndTheWorkerThreadRunsTheRest) {
  Worker worker;
  for (int i = 0; i < 20; ++i) {
    std::atomic<bool> first{false}, second{false};
    // While the first task runs here, the worker thread, woken for it,
    // finds it taken and goes back to sleep.
    worker.submit([&] {
      std::this_thread::sleep_for(2ms);
      first.store(true);
    });
    worker.submit([&] { second.store(true); });
    // Returns once the first task ran here, or at once if the worker
    // thread took it.
    worker.help_until([&] { return first.load(); });
    // Nobody waits for the second task: the worker thread must run it.
    ASSERT_TRUE(eventually(first)) << "iteration " << i;
    ASSERT_TRUE(eventually(second)) << "iteration " << i;
  }
}

TEST(WorkerTest, HelpUntilReturnsWhetherItIsDone) {
  Worker worker;
  EXPECT_FALSE(worker.help_until([] { return false; }));  // nothing queued
  EXPECT_TRUE(worker.help_until([] { return true; }));
}

// A caller that takes turns with the worker thread (mark_step's bound)
// keeps what it leaves queued and runs it when it comes back in time:
// all of it once over the bound, so that steps run in batches.
TEST(WorkerTest, WhatACallerKeepsItRunsWhenItComesBack) {
  Worker worker(-1, 10s);  // the caller always comes back in time
  std::vector<std::thread::id> ran_on(6);
  for (int step = 0; step < 6; ++step) {
    worker.submit([&ran_on, step] { ran_on[step] = std::this_thread::get_id(); }, Worker::RunBy::kCaller);
    worker.drain_to(2, "mark_step", Worker::Leftover::kKeptByCaller);
    std::this_thread::sleep_for(1ms);  // time for a worker thread that was woken to take them
  }
  for (int step = 0; step < 6; ++step) EXPECT_EQ(ran_on[step], std::this_thread::get_id()) << "step " << step;
}

// A caller that does not come back within the keep leaves its tasks to the
// worker thread: a peer's collective may wait for them.
TEST(WorkerTest, WhatACallerKeepsGoesToTheWorkerThreadWhenItIsLate) {
  Worker worker(-1, 2ms);
  RanOn task;
  worker.submit(task.recorder(), Worker::RunBy::kCaller);
  worker.drain_to(1, "mark_step", Worker::Leftover::kKeptByCaller);  // within the bound: kept
  ASSERT_TRUE(eventually(task.ran));
  EXPECT_NE(task.thread, std::this_thread::get_id());
}

// The same when the worker thread was already asleep on an empty queue
// before the keep: the keep tells it when to look.
TEST(WorkerTest, ASleepingWorkerThreadTakesWhatALateCallerKept) {
  Worker worker(-1, 2ms);
  std::atomic<bool> warmed{false};
  worker.submit([&warmed] { warmed.store(true); });
  ASSERT_TRUE(eventually(warmed));
  std::this_thread::sleep_for(10ms);  // asleep, nothing queued
  std::atomic<bool> ran{false};
  worker.submit([&ran] { ran.store(true); }, Worker::RunBy::kCaller);
  worker.drain_to(1, "mark_step", Worker::Leftover::kKeptByCaller);
  EXPECT_TRUE(eventually(ran));
}

// A caller that came back late (it traces for long, or waits for Python's
// GIL) keeps nothing the next time: its CPU would idle through the keep.
TEST(WorkerTest, ACallerThatCameBackLateKeepsNothing) {
  constexpr auto kKeep = 2s;
  Worker worker(-1, kKeep);
  std::atomic<int> ran{0};
  worker.submit([&ran] { ++ran; }, Worker::RunBy::kCaller);
  worker.drain_to(1, "mark_step", Worker::Leftover::kKeptByCaller);  // kept
  std::this_thread::sleep_for(kKeep + 200ms);  // late: the worker thread took it
  ASSERT_EQ(ran.load(), 1);
  worker.submit([&ran] { ++ran; }, Worker::RunBy::kCaller);
  worker.drain_to(1, "mark_step", Worker::Leftover::kKeptByCaller);
  const auto left = std::chrono::steady_clock::now();
  while (ran.load() < 2 && std::chrono::steady_clock::now() - left < kKeep) std::this_thread::sleep_for(100us);
  EXPECT_EQ(ran.load(), 2) << "the leftover waited for a keep";
}

// A task for the worker thread ends a keep: the kept tasks, which come
// before it, go to the worker thread with it.
TEST(WorkerTest, ATaskForTheWorkerThreadEndsAKeep) {
  Worker worker(-1, 10s);
  std::atomic<int> ran{0};
  worker.submit([&ran] { ++ran; }, Worker::RunBy::kCaller);
  worker.drain_to(1, "mark_step", Worker::Leftover::kKeptByCaller);  // kept
  worker.submit([&ran] { ++ran; });
  const auto deadline = std::chrono::steady_clock::now() + 5s;  // far below the keep's 10 s
  while (ran.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(100us);
  EXPECT_EQ(ran.load(), 2);
}

// A bounded caller that leaves tasks for the worker thread wakes it, even
// when it went to sleep behind a task the caller ran.
TEST(WorkerTest, WhatABoundedCallerLeavesGoesToTheWorkerThread) {
  for (int i = 0; i < 20; ++i) {
    Worker worker;
    std::atomic<bool> ran{false};
    for (int step = 0; step < 3; ++step) worker.submit([] {}, Worker::RunBy::kCaller);
    worker.submit([&ran] { ran.store(true); }, Worker::RunBy::kCaller);
    worker.drain_to(2, "mark_step");
    ASSERT_TRUE(eventually(ran)) << "iteration " << i;
  }
}

TEST(WorkerTest, DestructionRunsWhatIsQueued) {
  std::atomic<int> ran{0};
  {
    Worker worker;
    for (int i = 0; i < 10; ++i) {
      worker.submit([&ran] {
        std::this_thread::sleep_for(1ms);
        ++ran;
      });
    }
  }
  EXPECT_EQ(ran.load(), 10);
}

}  // namespace
}  // namespace ordo::device
