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
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include <pthread.h>
#include <sched.h>

namespace ordo_bench {

// The first two CPUs of the affinity mask, if there are two.
inline std::optional<std::pair<int, int>> two_usable_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return std::nullopt;
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  if (cpus.size() < 2) return std::nullopt;
  return std::pair{cpus[0], cpus[1]};
}

inline bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

// Nanoseconds one way, the median of 5 runs of `round_trips`; nullopt with
// fewer than two usable CPUs. The calling thread is pinned for the
// measurement and gets its old affinity back.
inline std::optional<double> cross_core_one_way_ns(int round_trips = 100000) {
  const std::optional<std::pair<int, int>> cpus = two_usable_cpus();
  if (!cpus) return std::nullopt;
  cpu_set_t old;
  if (pthread_getaffinity_np(pthread_self(), sizeof old, &old) != 0) return std::nullopt;
  struct alignas(64) Line {
    std::atomic<int64_t> value{0};
  };
  std::vector<double> samples;
  for (int run = 0; run < 5; ++run) {
    Line ping, pong;
    std::thread answerer([&] {
      pin_to(cpus->second);
      for (int64_t i = 1; i <= round_trips; ++i) {
        while (ping.value.load(std::memory_order_acquire) != i) {
        }
        pong.value.store(i, std::memory_order_release);
      }
    });
    pin_to(cpus->first);
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
  pthread_setaffinity_np(pthread_self(), sizeof old, &old);
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace ordo_bench
