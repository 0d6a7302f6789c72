// The timeline recorder behind ordo/trace.h: complete events (a name, a
// start, a duration, the device they ran for) kept per device while a
// trace is on, one line at the place measured:
//
//   trace_events::ScopedEvent event("compile", "compile", slot, ordinal, trace_events::Lane::kHost);
//
// Off, a place pays one relaxed atomic load (`on()`). On, each device's
// two lanes (its host thread's steps, its worker's execution) have their
// own buffer and lock on their own cache lines, so devices never contend;
// a lane's lock is a leaf (taken by one thread at a time but for
// start/stop). Times are steady-clock ns, comparable across the processes
// of one host; core/trace_json.h writes them as Chrome trace events.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>
#include <vector>

namespace ordo::trace_events {

// The host lane holds what the thread that drives a device does for it
// (tracing between steps, mark_step, compile); the device lane what its
// worker runs (execute, collectives and their waits).
enum class Lane : uint8_t { kHost, kDevice };

struct Event {
  std::string_view name;      // static storage
  std::string_view category;  // static storage: "trace", "step", "compile", "execute", "collective", "wait"
  int64_t start_ns = 0;       // steady clock
  int64_t duration_ns = 0;
  int32_t device = -1;        // global ordinal: the row
  Lane lane = Lane::kDevice;
  // Arguments, each absent when negative (graph_hash: when 0).
  int64_t wait_ns = -1;     // with wait_from_ns: a collective's wait, written as a nested "wait" event
  int64_t wait_from_ns = 0;
  int32_t last_device = -1;
  int64_t bytes = -1;
  uint64_t graph_hash = 0;
};

// A lane keeps at most this many events per trace; the rest are counted.
constexpr size_t kMaxEventsPerLane = size_t{1} << 22;

namespace internal {
extern std::atomic<bool> g_on;
}  // namespace internal

inline bool on() noexcept { return internal::g_on.load(std::memory_order_relaxed); }

int64_t now_ns() noexcept;

// slot: the device's index in its process (metrics' slots). Nothing
// happens when tracing is off or the slot is out of range.
void record(int slot, const Event& event) noexcept;

// Clears every lane and turns recording on; the trace's origin is now.
void start();
struct Recording {
  int64_t origin_ns = 0;  // when start() ran
  std::vector<Event> events;  // by lane, in each lane's order of recording
  int64_t dropped = 0;        // past kMaxEventsPerLane
};
// Turns recording off and returns what was recorded since start().
Recording stop();

// Times a step from construction to destruction, if tracing was on at
// construction.
class ScopedEvent {
 public:
  ScopedEvent(std::string_view name, std::string_view category, int slot, int device, Lane lane,
              uint64_t graph_hash = 0) noexcept
      : on_(on()) {
    if (on_) {
      slot_ = slot;
      event_ = Event{name, category, now_ns(), 0, device, lane};
      event_.graph_hash = graph_hash;
    }
  }
  ~ScopedEvent() {
    if (on_) {
      event_.duration_ns = now_ns() - event_.start_ns;
      record(slot_, event_);
    }
  }
  ScopedEvent(const ScopedEvent&) = delete;
  ScopedEvent& operator=(const ScopedEvent&) = delete;

 private:
  bool on_;
  int slot_ = -1;
  Event event_;
};

// A cut of a device's graph (mark_step): records "mark_step" for its
// time, and "trace" for the time since the device's previous cut in this
// trace (or since start()), which is when the program traced the graph.
class ScopedCut {
 public:
  ScopedCut(int slot, int device) noexcept : on_(on() && slot >= 0), slot_(slot), device_(device) {
    if (on_) start_ns_ = now_ns();
  }
  ~ScopedCut() {
    if (on_) record_cut();
  }
  ScopedCut(const ScopedCut&) = delete;
  ScopedCut& operator=(const ScopedCut&) = delete;

 private:
  void record_cut() noexcept;

  bool on_;
  int slot_;
  int device_;
  int64_t start_ns_ = 0;
};

}  // namespace ordo::trace_events
