#include "core/metrics.h"

#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/spin_lock.h"
#include "core/steady_clock.h"

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

// The worker records a device's metrics on cache lines of their own.
struct Slot {
  struct alignas(64) Metrics {
    SpinLock lock;  // Locking: guards rings
    std::array<Ring, kMetricCount> rings;
  } metrics;
};

using internal::ThreadCounters;
using CounterValues = std::array<int64_t, kCounterCount>;

// What a slot's counters hold beyond its live threads' blocks: the counts of
// threads that have exited, and what clear_counters took away (a block is
// only ever written by its thread, so a clear cannot zero it).
struct SlotCounterTotals {
  CounterValues exited{};
  CounterValues cleared{};
};

// Locking: mu guards every member; a leaf lock (taken under none of
// ordo's, around fork too). Blocks are never freed: a thread's are zeroed
// and reused by the next thread at its exit.
struct CounterRegistry {
  std::mutex mu;
  std::vector<std::pair<int, ThreadCounters*>> live;  // (slot, block) of every live thread
  std::vector<ThreadCounters*> unused;
  std::unordered_map<int, SlotCounterTotals> totals;
};

CounterRegistry& counter_registry() {
  static CounterRegistry* registry = new CounterRegistry;  // never destroyed: threads count at exit
  return *registry;
}

// The calling thread's blocks; at its exit their counts move to the slots'
// totals and the blocks to the unused list.
struct ThreadBlocks {
  std::vector<std::pair<int, ThreadCounters*>> blocks;
  ~ThreadBlocks();
};

thread_local bool t_blocks_gone = false;

ThreadBlocks::~ThreadBlocks() {
  t_blocks_gone = true;
  internal::t_slot = -1;
  internal::t_counters = &internal::g_uncounted;
  CounterRegistry& registry = counter_registry();
  std::lock_guard<std::mutex> lock(registry.mu);
  for (const auto& [slot, block] : blocks) {
    CounterValues& exited = registry.totals[slot].exited;
    for (int c = 0; c < kCounterCount; ++c) {
      exited[static_cast<size_t>(c)] += block->values[static_cast<size_t>(c)].load(std::memory_order_relaxed);
      block->values[static_cast<size_t>(c)].store(0, std::memory_order_relaxed);
    }
    std::erase(registry.live, std::pair<int, ThreadCounters*>{slot, block});
    registry.unused.push_back(block);
  }
}

ThreadCounters* block_of_this_thread(int slot) {
  thread_local ThreadBlocks mine;
  for (const auto& [at, block] : mine.blocks) {
    if (at == slot) return block;
  }
  CounterRegistry& registry = counter_registry();
  std::lock_guard<std::mutex> lock(registry.mu);
  ThreadCounters* block = nullptr;
  if (registry.unused.empty()) {
    block = new ThreadCounters;
  } else {
    block = registry.unused.back();
    registry.unused.pop_back();
  }
  registry.live.emplace_back(slot, block);
  mine.blocks.emplace_back(slot, block);
  return block;
}

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
  counter_registry().mu.lock();
}

void unlock_slots_after_fork() {
  counter_registry().mu.unlock();
  for_each_slot(-1, [](Slot& s) { s.metrics.lock.unlock(); });
}

[[maybe_unused]] const bool g_fork_handlers_registered =
    pthread_atfork(&lock_slots_for_fork, &unlock_slots_after_fork, &unlock_slots_after_fork) == 0;

}  // namespace

std::string_view name(Counter counter) { return kCounterNames[static_cast<int>(counter)]; }
std::string_view name(Metric metric) { return kMetricNames[static_cast<int>(metric)]; }
MetricKind kind(Metric metric) { return kMetricKinds[static_cast<int>(metric)]; }

namespace internal {

void add_slow(int counter, int slot, int64_t delta) noexcept {
  if (slot < 0 || slot >= kMaxSlots) return;
  if (t_blocks_gone) {
    // A thread_local destroyed after this thread's blocks (a tensor held by one).
    CounterRegistry& registry = counter_registry();
    std::lock_guard<std::mutex> lock(registry.mu);
    registry.totals[slot].exited[static_cast<size_t>(counter)] += delta;
    return;
  }
  t_counters = block_of_this_thread(slot);
  t_slot = slot;
  std::atomic<int64_t>& value = t_counters->values[static_cast<size_t>(counter)];
  value.store(value.load(std::memory_order_relaxed) + delta, std::memory_order_relaxed);
}

void record_all(const Recorded* values, size_t count, int slot, int64_t when_ns) noexcept {
  if (slot < 0 || slot >= kMaxSlots) return;
  Slot::Metrics& metrics = slot_at(slot).metrics;
  std::lock_guard<SpinLock> lock(metrics.lock);
  for (size_t i = 0; i < count; ++i) {
    Ring& ring = metrics.rings[static_cast<size_t>(values[i].metric)];
    const Sample sample{when_ns, values[i].value};
    ++ring.total_samples;
    ring.accumulator += sample.value;
    if (ring.samples.size() < kKeptSamples) {
      if (ring.samples.capacity() == 0) ring.samples.reserve(kKeptSamples);
      ring.samples.push_back(sample);
    } else {
      ring.samples[ring.next] = sample;
      ring.next = (ring.next + 1) % kKeptSamples;
    }
  }
}

}  // namespace internal

CounterTotal counter_total(Counter counter, int slot) {
  const auto c = static_cast<size_t>(counter);
  CounterRegistry& registry = counter_registry();
  std::lock_guard<std::mutex> lock(registry.mu);
  CounterTotal total;
  for (const auto& [at, block] : registry.live) {
    if (slot < 0 || at == slot) total.value += block->values[c].load(std::memory_order_relaxed);
  }
  for (const auto& [at, totals] : registry.totals) {
    if (slot < 0 || at == slot) total.value += totals.exited[c] - totals.cleared[c];
  }
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
  CounterRegistry& registry = counter_registry();
  std::lock_guard<std::mutex> lock(registry.mu);
  for (auto& [slot, totals] : registry.totals) totals.cleared = totals.exited;
  for (const auto& [slot, block] : registry.live) {
    CounterValues& cleared = registry.totals[slot].cleared;
    for (int c = 0; c < kCounterCount; ++c) {
      cleared[static_cast<size_t>(c)] += block->values[static_cast<size_t>(c)].load(std::memory_order_relaxed);
    }
  }
}

void clear_metrics() {
  for_each_slot(-1, [](Slot& s) {
    std::lock_guard<SpinLock> lock(s.metrics.lock);
    for (Ring& ring : s.metrics.rings) ring = Ring{};
  });
}

}  // namespace ordo::metrics
