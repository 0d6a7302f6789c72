#include "comm/protocol/channel.h"

#include <algorithm>
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include <optional>

#include "core/check.h"
#include "ordo/error.h"

namespace ordo::comm {

std::byte* StagingArea::reserve(size_t bytes) {
  if (bytes > capacity_ || !bytes_) {
    const size_t capacity = std::max<size_t>({bytes, 2 * capacity_, 64});
    bytes_.reset(static_cast<std::byte*>(::operator new[](capacity, std::align_val_t{64})));
    capacity_ = capacity;
  }
  return bytes_.get();
}

namespace {

#if defined(__x86_64__)
// PREFETCHW: CPUID 0x80000001, ECX bit 8.
bool cpu_has_prefetchw() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(0x80000001, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 8)) != 0;
  }();
  return has;
}
#endif

}  // namespace

void StagingArea::prefetch_for_write(size_t bytes) const {
#if defined(__x86_64__)
  if (!bytes_ || !cpu_has_prefetchw()) return;
  const std::byte* end = bytes_.get() + std::min(bytes, capacity_);
  for (const std::byte* line = bytes_.get(); line < end; line += 64) {
    asm volatile("prefetchw %0" : : "m"(*line));
  }
#else
  (void)bytes;
#endif
}

Channel::Channel(std::vector<int> group)
    : group_(std::move(group)), members_(group_.size()), slots_(new Slot[kSlots]) {
  ORDO_CHECK_LE(group_.size(), SlotState::kMaxMembers, ": a replica group's devices");
  for (Member& m : members_) {
    m.calls.resize(group_.size());
    m.staged.resize(group_.size());
  }
  for (int64_t i = 0; i < kSlots; ++i) slots_[i].seats.resize(group_.size());
}

namespace {

uint64_t generation_of(int64_t sequence) {
  return static_cast<uint64_t>(sequence / Channel::kSlots) & SlotState::kGenerationMask;
}

}  // namespace

bool Channel::may_open(uint64_t state, int64_t sequence, int64_t done_through) const {
  const int64_t earlier = sequence - kSlots;
  // A slot still serving an even earlier collective has a member behind.
  return serves(state, earlier) && (earlier <= done_through || all_done(earlier));
}

void Channel::opened(Slot& slot, bool locked) {
  // A join recorded while the slot served the earlier collective: see
  // join_failed_locked.
  if (locked) {
    apply_pending_locked(slot);
    cv.notify_all();
    return;
  }
  if (pending_count_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lock(mu);
    apply_pending_locked(slot);
  }
  wake();
}

bool Channel::open(Slot& slot, int64_t sequence, int64_t done_through, bool locked) {
  uint64_t state = slot.state.load(std::memory_order_acquire);
  for (;;) {
    if (serves(state, sequence)) return true;
    if (!may_open(state, sequence, done_through)) return false;
    if (slot.state.compare_exchange_weak(state, generation_of(sequence) << SlotState::kGenerationShift,
                                         std::memory_order_seq_cst, std::memory_order_acquire)) {
      break;
    }
  }
  opened(slot, locked);
  return true;
}

std::optional<uint64_t> Channel::arrive(Slot& slot, int64_t sequence, int64_t done_through) {
  // The first kSlots collectives find their slots serving them already.
  if (sequence < kSlots) return arrive(slot);
  // Guess the usual state: the earlier collective's, every member arrived.
  // Then one compare-and-swap opens the slot and arrives, or reads the
  // state as a load would have: either way the line moves here once.
  uint64_t state = (generation_of(sequence - kSlots) << SlotState::kGenerationShift) | size();
  const uint64_t opening = (generation_of(sequence) << SlotState::kGenerationShift) + SlotState::kArrival;
  bool opens = false;
  for (;;) {
    if (serves(state, sequence)) {
      state = slot.state.fetch_add(SlotState::kArrival, std::memory_order_seq_cst) + SlotState::kArrival;
      break;
    }
    if (!may_open(state, sequence, done_through)) return std::nullopt;
    if (slot.state.compare_exchange_weak(state, opening, std::memory_order_seq_cst)) {
      state = opening;
      opens = true;
      break;
    }
  }
  if (opens) opened(slot, /*locked=*/false);
  if (SlotState::arrived(state) == size()) wake();
  return state;
}

uint64_t Channel::arrive(Slot& slot) {
  const uint64_t state = slot.state.fetch_add(SlotState::kArrival, std::memory_order_seq_cst) +
                         SlotState::kArrival;
  if (SlotState::arrived(state) == size()) wake();
  return state;
}

void Channel::mark_done(size_t rank, int64_t sequence) {
  members_[rank].done.store(sequence, std::memory_order_seq_cst);
  wake();  // a peer may wait for every member to be done
}

bool Channel::all_done(int64_t sequence) const {
  for (const Member& m : members_) {
    if (m.done.load(std::memory_order_seq_cst) < sequence) return false;
  }
  return true;
}

void Channel::wake() {
  if (sleepers.load(std::memory_order_seq_cst) == 0) return;
  // Taking mu waits out a sleeper between its last look and its wait.
  { std::lock_guard<std::mutex> lock(mu); }
  cv.notify_all();
}

device::Failure Channel::failure_of(Slot& slot) {
  std::lock_guard<std::mutex> lock(mu);
  return slot.failure;
}

bool Channel::fail_locked(Slot& slot, device::Failure failure) {
  uint64_t state = slot.state.load(std::memory_order_seq_cst);
  bool written = false;
  do {
    if (SlotState::failed(state) || SlotState::arrived(state) == size()) return false;
    if (!written) slot.failure = std::move(failure);
    written = true;
  } while (!slot.state.compare_exchange_weak(state, state | SlotState::kFailed,
                                              std::memory_order_seq_cst));
  cv.notify_all();
  return true;
}

void Channel::join_slot_failed_locked(Slot& slot, device::Failure failure) {
  uint64_t state = slot.state.load(std::memory_order_seq_cst);
  // Only this thread sets the failed bit now (mu is held), and not every
  // member has arrived (this one has not), so failing cannot lose a race.
  const bool fails = !SlotState::failed(state);
  if (fails) slot.failure = std::move(failure);
  while (!slot.state.compare_exchange_weak(
      state, (state + SlotState::kArrival) | (fails ? SlotState::kFailed : 0), std::memory_order_seq_cst)) {
  }
  cv.notify_all();
}

void Channel::join_failed_locked(int64_t sequence, size_t rank, device::Failure failure) {
  Slot& slot = slot_of(sequence);
  if (open(slot, sequence, members_[rank].done_through, /*locked=*/true)) {
    join_slot_failed_locked(slot, std::move(failure));
    return;
  }
  pending_.push_back({sequence, std::move(failure)});
  pending_count_.fetch_add(1, std::memory_order_seq_cst);
  // The slot may have been opened before the count was raised: its opener
  // then missed this join, and this thread sees the opening.
  apply_pending_locked(slot);
}

void Channel::abandon(size_t rank, int64_t sequence, device::Failure failure) {
  members_[rank].joined.store(sequence, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu);
    join_failed_locked(sequence, rank, std::move(failure));
  }
}

void Channel::apply_pending_locked(Slot& slot) {
  for (;;) {
    const uint64_t state = slot.state.load(std::memory_order_seq_cst);
    auto it = std::find_if(pending_.begin(), pending_.end(), [&](const PendingJoin& join) {
      return &slot_of(join.sequence) == &slot && serves(state, join.sequence);
    });
    if (it == pending_.end()) return;
    device::Failure failure = std::move(it->failure);
    pending_.erase(it);
    pending_count_.fetch_sub(1, std::memory_order_seq_cst);
    join_slot_failed_locked(slot, std::move(failure));
  }
}

}  // namespace ordo::comm
