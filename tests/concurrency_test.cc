// Many threads tracing on many devices, two threads on one device, and reads
// racing with execution. Run under ThreadSanitizer (see README).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "test_util.h"

namespace ordo {
namespace {

using ConcurrencyTest = testing::FourDeviceTest;

// A few steps of w <- w * 0.5 + d on device d; the fixed point is 2d.
std::vector<float> run_steps(int device, int steps) {
  DeviceGuard on(device);
  Tensor w = zeros({16});
  for (int i = 0; i < steps; ++i) {
    w.assign(w * 0.5 + double(device));
    mark_step();
  }
  return w.to_vector<float>();
}

float expected_after(int device, int steps) {
  float w = 0;
  for (int i = 0; i < steps; ++i) w = w * 0.5f + float(device);
  return w;
}

TEST_F(ConcurrencyTest, ThreadsTraceOnDifferentDevicesAtOnce) {
  constexpr int kSteps = 40;
  std::vector<std::vector<float>> results(4);
  std::vector<std::thread> threads;
  for (int d = 0; d < 4; ++d) threads.emplace_back([d, &results] { results[d] = run_steps(d, kSteps); });
  for (auto& t : threads) t.join();
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(results[d], std::vector<float>(16, expected_after(d, kSteps))) << "device " << d;
  }
  // One graph for the first step (w starts as a constant), one for the rest,
  // shared by every device.
  EXPECT_LE(compile_cache_stats().misses, 2 * 4);
  EXPECT_GE(compile_cache_stats().hits, 4 * (kSteps - 2));
}

TEST_F(ConcurrencyTest, TwoThreadsOnOneDevice) {
  constexpr int kSteps = 50;
  std::vector<Tensor> counters(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([t, &counters] {
      DeviceGuard on(1);
      Tensor counter = zeros({4}, DType::kInt64);
      for (int i = 0; i < kSteps; ++i) {
        counter.assign(counter + int64_t{t + 1});
        mark_step();  // cuts whatever both threads have pending on device 1
      }
      counters[t] = counter;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(counters[0].to_vector<int64_t>(), std::vector<int64_t>(4, kSteps));
  EXPECT_EQ(counters[1].to_vector<int64_t>(), std::vector<int64_t>(4, 2 * kSteps));
}

TEST_F(ConcurrencyTest, ReadsRaceWithExecution) {
  DeviceGuard on(2);
  Tensor x = rand_uniform({64, 64}, 3);
  std::atomic<bool> done{false};
  std::vector<Tensor> produced;
  std::mutex produced_mu;
  // What the reader saw while the steps ran, read again once all ran: a
  // read that raced with its graph would have seen a partial value.
  std::vector<std::vector<float>> seen;
  std::thread reader([&] {
    size_t next = 0;
    while (!done.load() || next < produced.size()) {
      Tensor t;
      {
        std::lock_guard<std::mutex> lock(produced_mu);
        if (next < produced.size()) t = produced[next++];
      }
      if (t.defined()) {
        seen.push_back(t.to_vector<float>());
      } else {
        std::this_thread::yield();
      }
    }
  });
  std::vector<Tensor> keep;
  for (int i = 0; i < 30; ++i) {
    Tensor y = sum(matmul(x, x) * double(i), {1});
    mark_step();
    {
      std::lock_guard<std::mutex> lock(produced_mu);
      produced.push_back(y);
    }
    keep.push_back(y);
  }
  done = true;
  reader.join();
  ASSERT_EQ(seen.size(), keep.size());
  const std::vector<float> base = sum(matmul(x, x), {1}).to_vector<float>();
  for (int i = 0; i < 30; ++i) {
    const std::vector<float> got = keep[i].to_vector<float>();
    EXPECT_EQ(seen[i], got) << "step " << i;
    for (size_t j = 0; j < got.size(); ++j) {
      const float want = base[j] * float(i);
      ASSERT_NEAR(got[j], want, 1e-4f * std::abs(want) + 1e-3f) << "step " << i;
    }
  }
}

TEST_F(ConcurrencyTest, ReadersOfAPendingTensorOnAnotherThread) {
  // Thread 0 traces on device 3; threads 1..3 read its tensors while it goes
  // on tracing: a read cuts the graph from the reading thread.
  DeviceGuard on(3);
  std::vector<Tensor> values;
  for (int i = 0; i < 8; ++i) values.push_back(full({3}, i, DType::kInt32) * 2);
  std::vector<std::thread> readers;
  std::atomic<int> correct{0};
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&, r] {
      for (int i = r; i < 8; i += 3) correct += values[i].to_vector<int32_t>()[0] == 2 * i;
    });
  }
  for (int i = 0; i < 20; ++i) {
    Tensor more = values[i % 8] + 1;
    mark_step();
  }
  for (auto& t : readers) t.join();
  EXPECT_EQ(correct.load(), 8);
}

TEST_F(ConcurrencyTest, TensorsDieWhileAnotherThreadCutsTheGraph) {
  // Thread 0 makes and drops pending temporaries on device 1 while thread 1
  // cuts device 1's graph: a dying tensor leaves the pending list while the
  // cut walks it. The kept tensors are all computed, exactly once.
  constexpr int kRounds = 200;
  std::atomic<bool> done{false};
  std::vector<Tensor> kept;
  std::thread tracer([&] {
    DeviceGuard on(1);
    Tensor x = from_vector<int32_t>({1, 2, 3}, {3});
    for (int i = 0; i < kRounds; ++i) {
      Tensor temporary = x * 2;
      Tensor another = temporary + i;
      if (i % 10 == 0) kept.push_back(another);
    }
    done = true;
  });
  std::thread cutter([&] {
    while (!done) mark_step(1);
  });
  tracer.join();
  cutter.join();
  for (size_t k = 0; k < kept.size(); ++k) {
    const int i = static_cast<int>(k) * 10;
    EXPECT_EQ(kept[k].to_vector<int32_t>(), (std::vector<int32_t>{2 + i, 4 + i, 6 + i}));
  }
}

TEST_F(ConcurrencyTest, TensorsMayDieWhileTheRuntimeShutsDown) {
  // A dying pending tensor unlinks itself from its device's pending list:
  // the list must outlive the runtime, which another thread shuts down.
  for (int round = 0; round < 5; ++round) {
    std::vector<Tensor> held;
    for (int i = 0; i < 2000; ++i) held.push_back(full({2}, i, DType::kInt32) + 1);
    std::atomic<bool> go{false};
    std::thread dropper([&] {
      while (!go) {
      }
      held.clear();
    });
    go = true;
    shutdown();
    dropper.join();
    // A new runtime reuses the lists.
    init(4);
    Tensor fresh = full({2}, 5, DType::kInt32) * 2;
    mark_step();
    EXPECT_EQ(fresh.to_vector<int32_t>(), (std::vector<int32_t>{10, 10}));
  }
}

}  // namespace
}  // namespace ordo
