// The free-core pool (device/free_cores.h): every block runs exactly once
// whatever the callers, threads and nesting; errors come back to the caller
// after the running blocks end; ORDO_KERNEL_THREADS caps the threads.
// Each test sets the host's devices itself (1: on a 2-CPU host one free core).
#include "device/free_cores.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/config.h"
#include "device/cpu_placement.h"
#include "ordo/error.h"
#include "ordo/ordo.h"

namespace ordo::device {
namespace {

using namespace std::chrono_literals;

class FreeCoresTest : public ::testing::Test {
 protected:
  void SetUp() override { without_kernel_threads(); }
  void TearDown() override { without_kernel_threads(); }
  static void without_kernel_threads() {
    unsetenv("ORDO_KERNEL_THREADS");
    load_config();
    set_host_devices(1);
  }
};

// Runs num_blocks blocks and checks each ran exactly once.
void expect_every_block_once(int64_t num_blocks) {
  std::vector<std::atomic<int>> runs(static_cast<size_t>(std::max<int64_t>(num_blocks, 0)));
  run_blocks(num_blocks, [&](int64_t block) { runs[static_cast<size_t>(block)].fetch_add(1); });
  for (int64_t block = 0; block < num_blocks; ++block) {
    ASSERT_EQ(runs[static_cast<size_t>(block)].load(), 1) << "block " << block << " of " << num_blocks;
  }
}

// The threads that ran blocks, when each block waits (up to `patience`)
// until two threads have entered blocks.
std::set<std::thread::id> threads_of_waiting_blocks(int64_t num_blocks, std::chrono::milliseconds patience) {
  std::mutex mutex;
  std::set<std::thread::id> ids;
  run_blocks(num_blocks, [&](int64_t) {
    {
      std::lock_guard lock(mutex);
      ids.insert(std::this_thread::get_id());
    }
    for (auto deadline = std::chrono::steady_clock::now() + patience; std::chrono::steady_clock::now() < deadline;) {
      {
        std::lock_guard lock(mutex);
        if (ids.size() >= 2) return;
      }
      std::this_thread::sleep_for(1ms);
    }
  });
  return ids;
}

TEST_F(FreeCoresTest, EveryBlockRunsExactlyOnce) {
  for (int64_t n : {1, 2, 3, 7, 64, 1001}) expect_every_block_once(n);
}

TEST_F(FreeCoresTest, ZeroOrNegativeBlocksRunNothing) {
  int calls = 0;
  run_blocks(0, [&](int64_t) { ++calls; });
  run_blocks(-3, [&](int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST_F(FreeCoresTest, FreeCoresRunBlocksBesideTheCaller) {
  if (usable_cpu_count() < 2) GTEST_SKIP() << "one CPU: no free core";
  EXPECT_EQ(free_core_threads(), usable_cpu_count() - 1);
  EXPECT_EQ(threads_of_waiting_blocks(2, 10s).size(), 2u);
}

TEST_F(FreeCoresTest, WithEveryCoreHoldingADeviceNothingIsSplit) {
  set_host_devices(usable_cpu_count());
  EXPECT_EQ(free_core_threads(), 0);
  EXPECT_EQ(threads_of_waiting_blocks(4, 20ms), std::set{std::this_thread::get_id()});
}

TEST_F(FreeCoresTest, ConcurrentCallersEachRunAllTheirBlocks) {
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int caller = 0; caller < 4; ++caller) {
    callers.emplace_back([&, caller] {
      for (int call = 0; call < 200; ++call) {
        const int64_t n = 1 + (call * 7 + caller) % 50;
        std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
        run_blocks(n, [&](int64_t block) { runs[static_cast<size_t>(block)].fetch_add(1); });
        for (auto& count : runs) failures += count.load() != 1;
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(FreeCoresTest, AnErrorReachesTheCallerAfterTheRunningBlocksEnded) {
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> running{0};
    try {
      run_blocks(32, [&](int64_t block) {
        ++running;
        std::this_thread::sleep_for(100us);
        --running;
        if (block == 5) throw std::runtime_error("block 5 failed");
      });
      FAIL() << "no error";
    } catch (const std::runtime_error& error) {
      EXPECT_STREQ(error.what(), "block 5 failed");
      EXPECT_EQ(running.load(), 0) << "a block still ran when the error came back";
    }
  }
  expect_every_block_once(100);  // the pool still works
}

TEST_F(FreeCoresTest, ANestedCallRunsInlineOnTheBlocksThread) {
  std::atomic<int> elsewhere{0};
  std::atomic<int> inner_runs{0};
  run_blocks(8, [&](int64_t) {
    const std::thread::id outer = std::this_thread::get_id();
    run_blocks(16, [&](int64_t) {
      ++inner_runs;
      if (std::this_thread::get_id() != outer) ++elsewhere;
    });
  });
  EXPECT_EQ(inner_runs.load(), 8 * 16);
  EXPECT_EQ(elsewhere.load(), 0);
}

TEST_F(FreeCoresTest, KernelThreadsCapsTheThreadsAndABadValueChangesNothing) {
  setenv("ORDO_KERNEL_THREADS", "1", 1);
  load_config();
  set_host_devices(1);
  EXPECT_EQ(free_core_threads(), 0);
  EXPECT_EQ(threads_of_waiting_blocks(4, 20ms), std::set{std::this_thread::get_id()});
  setenv("ORDO_KERNEL_THREADS", "zero", 1);
  try {
    load_config();
    FAIL() << "no error";
  } catch (const InvalidArgument& error) {
    EXPECT_NE(std::string(error.what()).find("ORDO_KERNEL_THREADS: 'zero'"), std::string::npos) << error.what();
  }
  set_host_devices(1);
  EXPECT_EQ(free_core_threads(), 0);  // still capped at 1
  setenv("ORDO_KERNEL_THREADS", "2", 1);
  load_config();
  set_host_devices(1);
  EXPECT_EQ(free_core_threads(), std::min(1, usable_cpu_count() - 1));
}

TEST_F(FreeCoresTest, ABadKernelThreadsFailsTheRuntimeStart) {
  shutdown();
  setenv("ORDO_KERNEL_THREADS", "-2", 1);
  EXPECT_THROW(init(1), InvalidArgument);
  unsetenv("ORDO_KERNEL_THREADS");
  init(1);
  shutdown();
}

// A forked child (of a parent whose pool has threads) runs blocks on a
// fresh pool, and exits cleanly, joining it.
TEST_F(FreeCoresTest, AForkedChildHasAWorkingPoolAndExitsCleanly) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer cannot start threads in the child of a threaded process";
#endif
  expect_every_block_once(64);
  const pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    std::vector<std::atomic<int>> runs(500);
    run_blocks(500, [&](int64_t block) { runs[static_cast<size_t>(block)].fetch_add(1); });
    bool ok = true;
    for (auto& count : runs) ok = ok && count.load() == 1;
    std::exit(ok ? 0 : 3);
  }
  int status = 0;
  pid_t done = 0;
  for (auto deadline = std::chrono::steady_clock::now() + 30s; done == 0 && std::chrono::steady_clock::now() < deadline;) {
    done = waitpid(child, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(5ms);
  }
  if (done == 0) kill(child, SIGKILL), waitpid(child, &status, 0);
  ASSERT_EQ(done, child) << "the child hung";
  ASSERT_TRUE(WIFEXITED(status)) << "the child crashed";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace ordo::device
