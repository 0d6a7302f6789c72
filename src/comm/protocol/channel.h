// Where the members of one replica group meet, collective after collective.
// A channel lives as long as its communicator and each member finds it
// through its own route cache, so a collective in the steady state takes no
// lock and allocates nothing.
//
// Collective #s of a group uses slot s % kSlots. A member fills its seat
// (call, fingerprint, maybe a copy of its inputs), then arrives: one atomic
// change of the slot's state word (the first member there reopens the slot
// in the same compare-and-swap). Once the word counts every member, every
// seat may be read. When a member reads nothing of the slot any more it
// marks itself done with #s, on its own cache line. The first member to
// come to #s + kSlots reopens the slot for it, once every member is done
// with #s: a member that saw everyone arrive at #t knows that everyone is
// done with #t - 1, so in the steady state nobody reads the done marks and
// nobody waits. A member that runs ahead of a slow peer by kSlots
// collectives waits for it.
//
// Locking:
// - Slot::state holds what members decide on: the arrivals, the failed bit
//   and the generation (which collective the slot serves). One word, so
//   "every member arrived" and "failed" are decided once, by whichever
//   change comes first. Arrivals are lock-free seq_cst adds; the failed bit
//   is set only with mu held and only while some member has not arrived;
//   a new generation is set by compare-and-swap once every member is done
//   with the old one, after which nobody else changes the old state.
// - A Seat is written only by its member, before it arrives (published by
//   the arrival) and only once every member is done with the slot's
//   earlier collective (known from done_through, else waited for). Peers
//   read it after seeing every arrival (acquire) and before they mark
//   themselves done (release). Unchanged words are not rewritten, so in the
//   steady state peers read them from their own caches. A member's arrival
//   time in Slot::arrivals is written and read as its seat is (rewritten
//   at every collective, though: it changes every time).
// - mu guards Slot::failure (written before the failed bit is set, read
//   after it is seen) and pending_; pending_count_ mirrors pending_.size()
//   so that the fast path checks it without the lock. A join recorded in
//   pending_ and a reopening of its slot each look at the other's change
//   after their own (seq_cst), so one of them applies the join.
// - A waiter about to sleep counts itself in sleepers (mu held) before its
//   last look; whoever changes a state or a done mark looks at sleepers
//   after the change (all seq_cst), and if someone sleeps takes mu before
//   notifying cv. So one of the two always sees the other: no lost
//   wake-up. Nobody calls wake() with mu held.
// - Member::next_sequence, done_through, calls and staged are used only by
//   the thread that runs the member's device's tasks, one at a time (the
//   worker thread or a waiting thread, ordered by the worker's mutex: see
//   worker.h); Member::joined and Member::done are written by it and read
//   by peers (and, to say what the member does, by waiters elsewhere).
// - Order: LocalGroups::channels_mu_, then mu, then DeviceStatus.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <vector>

#include "comm/communicator.h"
#include "comm/fingerprint.h"
#include "device/device_data.h"

namespace ordo::comm {

// The fields of Slot::state.
struct SlotState {
  static constexpr uint64_t kArrival = 1;
  static constexpr uint64_t kFailed = uint64_t{1} << 32;
  static constexpr int kGenerationShift = 33;
  static constexpr uint64_t kGenerationMask = (uint64_t{1} << 31) - 1;
  static constexpr size_t kMaxMembers = 0xffffffff;

  static size_t arrived(uint64_t s) { return s & 0xffffffff; }
  static bool failed(uint64_t s) { return (s & kFailed) != 0; }
  static uint64_t generation(uint64_t s) { return s >> kGenerationShift; }
};

// A grow-only, cache-line aligned byte buffer.
class StagingArea {
 public:
  std::byte* reserve(size_t bytes);
  const std::byte* data() const { return bytes_.get(); }
  // Asks for the first `bytes` for writing ahead of time: peers read them
  // at the last collective here, and the next writes would otherwise wait
  // for those copies to be invalidated, on the critical path of the next
  // collective. Only a hint; does nothing where the CPU cannot.
  void prefetch_for_write(size_t bytes) const;

 private:
  struct Free {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  std::unique_ptr<std::byte[], Free> bytes_;
  size_t capacity_ = 0;
};

// A member's part in one collective. One cache line (or a few) per member,
// so members filling their seats do not contend.
struct alignas(64) Seat {
  // Read by peers only to describe a mismatch; all then wait for each
  // other to finish, so the call is still alive.
  const CollectiveCall* call = nullptr;
  StagingArea staged;  // a copy of the inputs, for a small all_reduce
  Fingerprint fingerprint;
  // When a member past Slot::kArrivalsBesideState reached the collective.
  // Written at every collective, so on a line of its own: beside the
  // staging area's pointer, it made every peer fetch that line from this
  // member's core before it could read the inputs behind the pointer.
  alignas(64) int64_t arrived_ns = 0;
};

struct Slot {
  static constexpr size_t kArrivalsBesideState = 7;

  alignas(64) std::atomic<uint64_t> state{0};
  // When the first members reached the collective (steady clock), on the
  // state's line: a member that sees every arrival in the state has their
  // times too, with no cross-core trip of their own (one per collective
  // when they were in the seats). Written before the member arrives.
  std::array<std::atomic<int64_t>, kArrivalsBesideState> arrivals{};
  alignas(64) device::Failure failure;  // see Locking
  std::vector<Seat> seats;  // by rank

  void set_arrival(size_t rank, int64_t ns) {
    if (rank < kArrivalsBesideState) {
      arrivals[rank].store(ns, std::memory_order_relaxed);  // published by the arrival's change of state
    } else {
      seats[rank].arrived_ns = ns;
    }
  }
  // Once every member arrived.
  int64_t arrival(size_t rank) const {
    return rank < kArrivalsBesideState ? arrivals[rank].load(std::memory_order_relaxed) : seats[rank].arrived_ns;
  }
  // Once every member arrived: the rank that arrived last (the lowest
  // among equal times, so that every member names the same).
  size_t last_arrival() const {
    size_t last = 0;
    for (size_t q = 1; q < seats.size(); ++q) {
      if (arrival(q) > arrival(last)) last = q;
    }
    return last;
  }
};

struct alignas(64) Member {
  int64_t next_sequence = 0;
  // Every member is known to be done with every collective up to this one.
  int64_t done_through = -1;
  std::atomic<int64_t> joined{-1};  // the last collective it arrived at or abandoned
  std::atomic<int64_t> done{-1};    // the last collective whose slot it left
  // Views of the seats for data movement, sized once.
  std::vector<const CollectiveCall*> calls;
  std::vector<const std::byte*> staged;
};

class Channel {
 public:
  // A power of two: how far one member may run ahead of another.
  static constexpr int64_t kSlots = 8;

  explicit Channel(std::vector<int> group);

  const std::vector<int>& group() const { return group_; }
  size_t size() const { return group_.size(); }
  Member& member(size_t rank) { return members_[rank]; }
  const Member& member(size_t rank) const { return members_[rank]; }
  Slot& slot_of(int64_t sequence) { return slots_[static_cast<size_t>(sequence % kSlots)]; }
  // Whether a slot in this state serves collective #sequence.
  static bool serves(uint64_t state, int64_t sequence) {
    return SlotState::generation(state) ==
           (static_cast<uint64_t>(sequence / kSlots) & SlotState::kGenerationMask);
  }

  // Makes the slot serve collective #sequence if every member is done with
  // its earlier collective there; returns whether it serves #sequence now.
  // done_through is what the caller knows (Member::done_through); the done
  // marks are read only beyond it. With mu held, pass locked.
  bool open(Slot& slot, int64_t sequence, int64_t done_through, bool locked = false);
  // The fast path: opens the slot for #sequence if need be (as open) and
  // arrives; returns the state its change made, or nothing when the slot
  // cannot serve #sequence yet (then wait, open and arrive(slot)).
  std::optional<uint64_t> arrive(Slot& slot, int64_t sequence, int64_t done_through);
  // Arrives at a slot that serves the caller's collective.
  uint64_t arrive(Slot& slot);
  // The member of rank will read nothing of its slot of #sequence any more.
  void mark_done(size_t rank, int64_t sequence);
  // Whether every member is done with #sequence.
  bool all_done(int64_t sequence) const;

  // The slow path.
  // The failure of a slot whose failed bit is set.
  device::Failure failure_of(Slot& slot);
  // Fails the slot unless it failed already or every member arrived (mu
  // held); returns whether it did.
  bool fail_locked(Slot& slot, device::Failure failure);
  // The member of rank joins collective #sequence only to fail it (mu
  // held): it will not run it. If the slot cannot serve #sequence yet, the
  // join waits in pending_ and is applied when the slot is opened for it,
  // so this never blocks. The caller marks itself done afterwards.
  void join_failed_locked(int64_t sequence, size_t rank, device::Failure failure);
  // Applies the pending joins for the collective the slot now serves (mu held).
  void apply_pending_locked(Slot& slot);
  // The member of rank will not run collective #sequence, its next: it
  // joins it only to fail it (join_failed_locked, mu taken here). The
  // caller marks itself done afterwards.
  void abandon(size_t rank, int64_t sequence, device::Failure failure);
  bool has_pending() const { return pending_count_.load(std::memory_order_acquire) > 0; }
  // Wakes sleepers, if any, after a change of a state or a done mark.
  void wake();

  std::mutex mu;
  std::condition_variable cv;
  alignas(64) std::atomic<int> sleepers{0};

 private:
  struct PendingJoin {
    int64_t sequence;
    device::Failure failure;
  };

  bool may_open(uint64_t state, int64_t sequence, int64_t done_through) const;
  // After this thread made the slot serve a new collective.
  void opened(Slot& slot, bool locked);
  // Adds one arrival to the slot, failing it (mu held).
  void join_slot_failed_locked(Slot& slot, device::Failure failure);

  const std::vector<int> group_;
  std::vector<Member> members_;
  std::unique_ptr<Slot[]> slots_;
  std::vector<PendingJoin> pending_;
  alignas(64) std::atomic<size_t> pending_count_{0};
};

}  // namespace ordo::comm
