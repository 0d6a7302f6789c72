// How long a write by one core takes to be seen by another: two threads,
// each pinned to one of the first two CPUs this process may use, pass a
// counter back and forth through two cache lines. Small collectives are a
// few such trips, so their figures follow this one; on a shared VM it can
// change several-fold between hours (BENCHMARKS.md, #13), and the benches
// print it so that a run says which machine it met.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <optional>
#include <thread>
#include <vector>

#include "device/cpu_placement.h"

namespace ordo_bench {

// Nanoseconds one way, the median of 5 runs of `round_trips`, between the
// first two CPUs the process may use (pinned as ordo pins its workers);
// nullopt with fewer than two. The calling thread is pinned for the
// measurement and may use all those CPUs again afterwards.
inline std::optional<double> cross_core_one_way_ns(int round_trips = 100000) {
  const int cpus = ordo::device::usable_cpu_count();
  if (cpus < 2) return std::nullopt;
  struct alignas(64) Line {
    std::atomic<int64_t> value{0};
  };
  std::vector<double> samples;
  for (int run = 0; run < 5; ++run) {
    Line ping, pong;
    std::thread answerer([&] {
      ordo::device::pin_current_thread(1);
      for (int64_t i = 1; i <= round_trips; ++i) {
        while (ping.value.load(std::memory_order_acquire) != i) {
        }
        pong.value.store(i, std::memory_order_release);
      }
    });
    ordo::device::pin_current_thread(0);
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 1; i <= round_trips; ++i) {
      ping.value.store(i, std::memory_order_release);
      while (pong.value.load(std::memory_order_acquire) != i) {
      }
    }
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    answerer.join();
    samples.push_back(took.count() / (2.0 * round_trips));
  }
  std::vector<int> all(static_cast<size_t>(cpus));
  std::iota(all.begin(), all.end(), 0);
  ordo::device::pin_current_thread(all);
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace ordo_bench
