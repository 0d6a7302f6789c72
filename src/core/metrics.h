// Recording counters and metrics: one line at the place measured,
//
//   metrics::add(metrics::Counter::kMarkStep, device);
//   metrics::ScopedTimer timer(metrics::Metric::kCompileTime, device);
//
// kept per device (its index in this process) so that devices never write
// one cache line. A counter is counted by each thread in a block of its
// own per device (a relaxed load and store, no locked instruction: every
// traced op counts two, CreateTensor and DestroyTensor), and readers sum the
// blocks; a device's metrics' samples are a ring under the slot's own lock
// (metrics are recorded at the rate of graphs and transfers, not of ops). The names are
// in core/metric_list.def; reading and the report are include/ordo/metrics.h.
// Built with ORDO_METRICS=0 every call here compiles to nothing: the A/B
// figure of their cost.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "core/steady_clock.h"

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
// One thread's counters of one slot: only that thread writes them.
struct alignas(64) ThreadCounters {
  std::array<std::atomic<int64_t>, kCounterCount> values{};
};
// Where slot -1 (no device) counts: read by nobody.
inline ThreadCounters g_uncounted;
// The block of the slot the calling thread counted on last.
inline thread_local int t_slot = -1;
inline thread_local ThreadCounters* t_counters = &g_uncounted;
// Every other case: finds or makes the thread's block of slot (and makes it
// the last one), or, once the thread's blocks are gone at its exit, counts
// under the registry's lock.
void add_slow(int counter, int slot, int64_t delta) noexcept;
}  // namespace internal

// One sample of a metric.
struct Recorded {
  Metric metric;
  double value;
};

namespace internal {
void record_all(const Recorded* values, size_t count, int slot, int64_t when_ns) noexcept;
}  // namespace internal

// A slot out of range is no device of this process: nothing is counted.
inline void add(Counter counter, int slot, int64_t delta = 1) noexcept {
  if constexpr (ORDO_METRICS) {
    if (slot == internal::t_slot) {
      std::atomic<int64_t>& value = internal::t_counters->values[static_cast<size_t>(counter)];
      value.store(value.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
    } else {
      internal::add_slow(static_cast<int>(counter), slot, delta);
    }
  }
}

inline void record(Metric metric, int slot, double value) noexcept {
  if constexpr (ORDO_METRICS) {
    const Recorded one{metric, value};
    internal::record_all(&one, 1, slot, wall_now_ns());
  }
}

// Several metrics of one event (a collective's time, wait and bytes) that
// ended at `end_ns` (steady_now_ns: the caller read it to time the event):
// one lock for all of them, and no clock read of their own.
inline void record_all(std::initializer_list<Recorded> values, int slot, int64_t end_ns) noexcept {
  if constexpr (ORDO_METRICS) internal::record_all(values.begin(), values.size(), slot, wall_ns_at(end_ns));
}

// Records the nanoseconds from its construction to its destruction.
class ScopedTimer {
 public:
  ScopedTimer(Metric metric, int slot) noexcept : metric_(metric), slot_(slot) {}
  ~ScopedTimer() {
    if constexpr (ORDO_METRICS) {
      const int64_t end_ns = steady_now_ns();
      record_all({{metric_, static_cast<double>(end_ns - start_ns_)}}, slot_, end_ns);
    }
  }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  Metric metric_;
  int slot_;
  int64_t start_ns_ = ORDO_METRICS ? steady_now_ns() : 0;
};

// slot < 0: every slot.
CounterTotal counter_total(Counter counter, int slot = -1);
MetricTotal metric_total(Metric metric, int slot = -1);
void clear_counters();
void clear_metrics();

}  // namespace ordo::metrics
