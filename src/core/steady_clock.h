// The steady clock in ns since its epoch: what the backends stamp a
// collective's arrivals with (comm::CollectiveTiming) and the timeline
// records, so that both read one clock (CLOCK_MONOTONIC: comparable across
// the processes of one host).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace ordo {

inline int64_t steady_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The system clock in ns since the Unix epoch: what other hosts can read
// too (their clocks need not agree exactly).
inline int64_t wall_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace internal {
// The system clock minus the steady clock, and the steady time it was
// taken at (far in the past until the first use).
inline std::atomic<int64_t> g_wall_minus_steady_ns{0};
inline std::atomic<int64_t> g_wall_offset_taken_ns{INT64_MIN / 2};
int64_t refresh_wall_offset() noexcept;
}  // namespace internal

// The system clock at a steady-clock reading, without reading the system
// clock (each reading costs ~25 ns in a VM, and a collective's path has
// several): from an offset between the two clocks that is taken again once
// a second of steady time has passed, so that a step of the system clock
// shows within a second. Threads may race on the refresh: any offset they
// store is a fresh one. A reading older than the offset takes it as it is
// (the clocks drift apart by microseconds a second, not more).
inline int64_t wall_ns_at(int64_t steady_ns) noexcept {
  constexpr int64_t kRefreshEvery = 1'000'000'000;
  const int64_t taken = internal::g_wall_offset_taken_ns.load(std::memory_order_acquire);
  if (steady_ns - taken > kRefreshEvery) return steady_ns + internal::refresh_wall_offset();
  return steady_ns + internal::g_wall_minus_steady_ns.load(std::memory_order_relaxed);
}

}  // namespace ordo
