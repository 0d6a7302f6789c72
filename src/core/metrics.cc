#include "core/metrics.h"

#include <pthread.h>

#include <array>
#include <atomic>
#include <memory>

#include "core/check.h"
#include "core/spin_lock.h"

namespace ordo::metrics {
namespace {

constexpr std::string_view kCounterNames[] = {
#define ORDO_COUNTER(Name) #Name,
#define ORDO_METRIC(Name, kind)
#include "core/metric_list.def"
#undef ORDO_COUNTER
#undef ORDO_METRIC
};
constexpr std::string_view kMetricNames[] = {
#define ORDO_COUNTER(Name)
#define ORDO_METRIC(Name, kind) #Name,
#include "core/metric_list.def"
#undef ORDO_COUNTER
#undef ORDO_METRIC
};
constexpr MetricKind kMetricKinds[] = {
#define ORDO_COUNTER(Name)
#define ORDO_METRIC(Name, kind) MetricKind::kind,
#include "core/metric_list.def"
#undef ORDO_COUNTER
#undef ORDO_METRIC
};
static_assert(std::size(kCounterNames) == kCounterCount && std::size(kMetricNames) == kMetricCount &&
              std::size(kMetricKinds) == kMetricCount);

struct Ring {
  int64_t total_samples = 0;
  double accumulator = 0;
  size_t next = 0;  // where the next sample goes once the ring is full
  std::vector<Sample> samples;
};

// The tracing thread adds counters while the worker records metrics: each
// on its own cache lines.
struct Slot {
  struct alignas(64) Counters {
    std::array<std::atomic<int64_t>, kCounterCount> values{};
  } counters;
  struct alignas(64) Metrics {
    SpinLock lock;  // Locking: guards rings
    std::array<Ring, kMetricCount> rings;
  } metrics;
};

// Slots are made on first use and live as long as the process: a reader
// never meets one being freed.
std::array<std::atomic<Slot*>, kMaxSlots> g_slots{};

Slot& slot_at(int index) {
  ORDO_CHECK(index >= 0 && index < kMaxSlots, "metrics slot ", index);
  std::atomic<Slot*>& entry = g_slots[static_cast<size_t>(index)];
  Slot* slot = entry.load(std::memory_order_acquire);
  if (slot) return *slot;
  auto made = std::make_unique<Slot>();
  if (entry.compare_exchange_strong(slot, made.get(), std::memory_order_acq_rel)) return *made.release();
  return *slot;  // another thread made it first
}

template <typename Fn>
void for_each_slot(int only, Fn&& fn) {
  for (int i = 0; i < kMaxSlots; ++i) {
    if (only >= 0 && i != only) continue;
    if (Slot* slot = g_slots[static_cast<size_t>(i)].load(std::memory_order_acquire)) fn(*slot);
  }
}

// A forked child finds every slot's lock free and its samples whole: the
// locks are taken around fork() (runtime/fork.cc says why state is). A slot
// lock is a leaf, taken while other locks (a graph's, the compile cache's)
// are held: its handlers register before any layer's, at load, so that
// their prepare runs last, once those other locks are the forking thread's.
void lock_slots_for_fork() {
  for_each_slot(-1, [](Slot& s) { s.metrics.lock.lock(); });
}

void unlock_slots_after_fork() {
  for_each_slot(-1, [](Slot& s) { s.metrics.lock.unlock(); });
}

[[maybe_unused]] const bool g_fork_handlers_registered =
    pthread_atfork(&lock_slots_for_fork, &unlock_slots_after_fork, &unlock_slots_after_fork) == 0;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string_view name(Counter counter) { return kCounterNames[static_cast<int>(counter)]; }
std::string_view name(Metric metric) { return kMetricNames[static_cast<int>(metric)]; }
MetricKind kind(Metric metric) { return kMetricKinds[static_cast<int>(metric)]; }

namespace internal {

std::array<std::atomic<std::atomic<int64_t>*>, kMaxSlots> g_counters{};

std::atomic<int64_t>* counters_of(int slot) noexcept {
  std::atomic<int64_t>* counters = slot_at(slot).counters.values.data();
  g_counters[static_cast<size_t>(slot)].store(counters, std::memory_order_release);
  return counters;
}

void record(int metric, int slot, double value) noexcept {
  if (slot < 0 || slot >= kMaxSlots) return;
  const Sample sample{now_ns(), value};
  Slot::Metrics& metrics = slot_at(slot).metrics;
  std::lock_guard<SpinLock> lock(metrics.lock);
  Ring& ring = metrics.rings[static_cast<size_t>(metric)];
  ++ring.total_samples;
  ring.accumulator += value;
  if (ring.samples.size() < kKeptSamples) {
    if (ring.samples.capacity() == 0) ring.samples.reserve(kKeptSamples);
    ring.samples.push_back(sample);
  } else {
    ring.samples[ring.next] = sample;
    ring.next = (ring.next + 1) % kKeptSamples;
  }
}

}  // namespace internal

CounterTotal counter_total(Counter counter, int slot) {
  CounterTotal total;
  for_each_slot(slot, [&](Slot& s) {
    total.value += s.counters.values[static_cast<size_t>(counter)].load(std::memory_order_relaxed);
  });
  return total;
}

MetricTotal metric_total(Metric metric, int slot) {
  MetricTotal total;
  for_each_slot(slot, [&](Slot& s) {
    std::lock_guard<SpinLock> lock(s.metrics.lock);
    const Ring& ring = s.metrics.rings[static_cast<size_t>(metric)];
    total.total_samples += ring.total_samples;
    total.accumulator += ring.accumulator;
    // Oldest first: from the next slot to overwrite, around.
    for (size_t i = 0; i < ring.samples.size(); ++i) {
      total.samples.push_back(ring.samples[(ring.next + i) % ring.samples.size()]);
    }
  });
  return total;
}

void clear_counters() {
  for_each_slot(-1, [](Slot& s) {
    for (auto& value : s.counters.values) value.store(0, std::memory_order_relaxed);
  });
}

void clear_metrics() {
  for_each_slot(-1, [](Slot& s) {
    std::lock_guard<SpinLock> lock(s.metrics.lock);
    for (Ring& ring : s.metrics.rings) ring = Ring{};
  });
}

}  // namespace ordo::metrics
