#include "core/trace_events.h"

#include <pthread.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <mutex>

#include "core/metrics.h"
#include "core/spin_lock.h"
#include "core/steady_clock.h"

namespace ordo::trace_events {
namespace internal {
std::atomic<bool> g_on{false};
}  // namespace internal

namespace {

struct alignas(64) LaneBuffer {
  SpinLock lock;  // Locking: guards the fields below; a leaf
  std::vector<Event> events;
  int64_t dropped = 0;
  int64_t last_cut_end_ns = 0;  // host lane: the end of the device's previous cut in this trace

  void clear() {
    events = {};
    dropped = 0;
    last_cut_end_ns = 0;
  }
};

struct Slot {
  std::array<LaneBuffer, 2> lanes;  // by Lane
};

// As metrics' slots: made on first use, never freed, so that a recorder
// never meets one being freed.
std::array<std::atomic<Slot*>, metrics::kMaxSlots> g_slots{};
std::atomic<int64_t> g_origin_ns{0};
// Serializes start() and stop() (not recording).
std::mutex g_session_mu;

LaneBuffer& lane_at(int slot, Lane lane) {
  std::atomic<Slot*>& entry = g_slots[static_cast<size_t>(slot)];
  Slot* made = entry.load(std::memory_order_acquire);
  if (made == nullptr) {
    auto fresh = std::make_unique<Slot>();
    if (entry.compare_exchange_strong(made, fresh.get(), std::memory_order_acq_rel)) made = fresh.release();
  }
  return made->lanes[static_cast<size_t>(lane)];
}

template <typename Fn>
void for_each_lane(Fn&& fn) {
  for (std::atomic<Slot*>& entry : g_slots) {
    if (Slot* slot = entry.load(std::memory_order_acquire)) {
      for (LaneBuffer& lane : slot->lanes) fn(lane);
    }
  }
}

void push(LaneBuffer& lane, const Event& event) {
  if (lane.events.size() >= kMaxEventsPerLane) {
    ++lane.dropped;
    return;
  }
  lane.events.push_back(event);
}

// As metrics' slot locks: taken around fork() so that a forked child finds
// every lane whole; the child records nothing of the parent's trace.
void lock_lanes_for_fork() {
  for_each_lane([](LaneBuffer& lane) { lane.lock.lock(); });
}
void unlock_lanes_after_fork() {
  for_each_lane([](LaneBuffer& lane) { lane.lock.unlock(); });
}
void unlock_lanes_in_child() {
  internal::g_on.store(false, std::memory_order_relaxed);
  unlock_lanes_after_fork();
}

[[maybe_unused]] const bool g_fork_handlers_registered =
    pthread_atfork(&lock_lanes_for_fork, &unlock_lanes_after_fork, &unlock_lanes_in_child) == 0;

bool valid_slot(int slot) { return slot >= 0 && slot < metrics::kMaxSlots; }

}  // namespace

int64_t now_ns() noexcept { return steady_now_ns(); }

void record(int slot, const Event& event) noexcept {
  if (!on() || !valid_slot(slot)) return;
  try {
    LaneBuffer& lane = lane_at(slot, event.lane);
    std::lock_guard<SpinLock> lock(lane.lock);
    push(lane, event);
  } catch (...) {
    // Out of memory: the timeline misses an event, the program goes on.
  }
}

void start() {
  std::lock_guard<std::mutex> session(g_session_mu);
  internal::g_on.store(false, std::memory_order_relaxed);
  for_each_lane([](LaneBuffer& lane) {
    std::lock_guard<SpinLock> lock(lane.lock);
    lane.clear();
  });
  g_origin_ns.store(now_ns(), std::memory_order_relaxed);
  internal::g_on.store(true, std::memory_order_release);
}

Recording stop() {
  std::lock_guard<std::mutex> session(g_session_mu);
  internal::g_on.store(false, std::memory_order_relaxed);
  Recording recording;
  recording.origin_ns = g_origin_ns.load(std::memory_order_relaxed);
  for_each_lane([&](LaneBuffer& lane) {
    std::lock_guard<SpinLock> lock(lane.lock);
    recording.events.insert(recording.events.end(), lane.events.begin(), lane.events.end());
    recording.dropped += lane.dropped;
    lane.clear();
  });
  return recording;
}

void ScopedCut::record_cut() noexcept {
  if (!valid_slot(slot_)) return;
  const int64_t end_ns = now_ns();
  const int64_t origin = g_origin_ns.load(std::memory_order_relaxed);
  try {
    LaneBuffer& lane = lane_at(slot_, Lane::kHost);
    std::lock_guard<SpinLock> lock(lane.lock);
    const int64_t traced_from = std::max(lane.last_cut_end_ns, origin);
    if (traced_from < start_ns_) {
      push(lane, Event{"trace", "trace", traced_from, start_ns_ - traced_from, device_, Lane::kHost});
    }
    push(lane, Event{"mark_step", "step", start_ns_, end_ns - start_ns_, device_, Lane::kHost});
    lane.last_cut_end_ns = end_ns;
  } catch (...) {
  }
}

}  // namespace ordo::trace_events
