// Recording counters and metrics: one line at the place measured,
//
//   metrics::add(metrics::Counter::kMarkStep, device);
//   metrics::ScopedTimer timer(metrics::Metric::kCompileTime, device);
//
// kept per device (its index in this process) so that devices never write
// one cache line: a device's counters are relaxed atomic adds on its own
// slot, its metrics' samples a ring under the slot's own lock (metrics are
// recorded at the rate of graphs and transfers, not of ops). The names are
// in core/metric_list.def; reading and the report are include/ordo/metrics.h.
// Built with ORDO_METRICS=0 every call here compiles to nothing: the A/B
// figure of their cost.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string_view>
#include <vector>

#ifndef ORDO_METRICS
#define ORDO_METRICS 1
#endif

namespace ordo::metrics {

enum class Counter : int {
#define ORDO_COUNTER(Name) k##Name,
#define ORDO_METRIC(Name, kind)
#include "core/metric_list.def"
#undef ORDO_COUNTER
#undef ORDO_METRIC
  kCount
};

enum class Metric : int {
#define ORDO_COUNTER(Name)
#define ORDO_METRIC(Name, kind) k##Name,
#include "core/metric_list.def"
#undef ORDO_COUNTER
#undef ORDO_METRIC
  kCount
};

enum class MetricKind { kTime, kBytes };

constexpr int kCounterCount = static_cast<int>(Counter::kCount);
constexpr int kMetricCount = static_cast<int>(Metric::kCount);
// A device's index in its process is below this (the runtime's limit).
constexpr int kMaxSlots = 1024;
// The samples a metric keeps per device for its percentiles (torch_xla's count).
constexpr int kKeptSamples = 1024;

std::string_view name(Counter counter);
std::string_view name(Metric metric);
MetricKind kind(Metric metric);

struct Sample {
  int64_t when_ns;  // since the epoch, as torch_xla's
  double value;
};

// What the slots hold; every reader sums slots in index order.
struct CounterTotal {
  int64_t value = 0;
};
struct MetricTotal {
  int64_t total_samples = 0;
  double accumulator = 0;
  std::vector<Sample> samples;  // the newest kKeptSamples of each slot, oldest first per slot
};

namespace internal {
// Each slot's counters once made (by counters_of, on first use): a counter
// is counted inline, as every traced op counts two.
extern std::array<std::atomic<std::atomic<int64_t>*>, kMaxSlots> g_counters;
std::atomic<int64_t>* counters_of(int slot) noexcept;
void record(int metric, int slot, double value) noexcept;
}  // namespace internal

// A slot out of range is no device of this process: nothing is counted.
inline void add(Counter counter, int slot, int64_t delta = 1) noexcept {
  if constexpr (ORDO_METRICS) {
    if (slot < 0 || slot >= kMaxSlots) return;
    std::atomic<int64_t>* counters = internal::g_counters[static_cast<size_t>(slot)].load(std::memory_order_acquire);
    if (counters == nullptr) counters = internal::counters_of(slot);
    counters[static_cast<int>(counter)].fetch_add(delta, std::memory_order_relaxed);
  }
}

inline void record(Metric metric, int slot, double value) noexcept {
  if constexpr (ORDO_METRICS) internal::record(static_cast<int>(metric), slot, value);
}

// Records the nanoseconds from its construction to its destruction.
class ScopedTimer {
 public:
  ScopedTimer(Metric metric, int slot) noexcept : metric_(metric), slot_(slot) {
    if constexpr (ORDO_METRICS) start_ = std::chrono::steady_clock::now();
  }
  ~ScopedTimer() {
    if constexpr (ORDO_METRICS) {
      record(metric_, slot_, std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start_).count());
    }
  }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  Metric metric_;
  int slot_;
  std::chrono::steady_clock::time_point start_;
};

// slot < 0: every slot.
CounterTotal counter_total(Counter counter, int slot = -1);
MetricTotal metric_total(Metric metric, int slot = -1);
void clear_counters();
void clear_metrics();

}  // namespace ordo::metrics
