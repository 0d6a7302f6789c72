// The steady clock in ns since its epoch: what the backends stamp a
// collective's arrivals with (comm::CollectiveTiming) and the timeline
// records, so that both read one clock (CLOCK_MONOTONIC: comparable across
// the processes of one host).
#pragma once

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

}  // namespace ordo
