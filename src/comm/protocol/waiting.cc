#include "comm/protocol/waiting.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>
#include <utility>

#include "comm/deadlines.h"
#include "comm/describe.h"
#include "comm/protocol/missing_members.h"
#include "comm/protocol/pacing.h"
#include "core/interrupt.h"
#include "ordo/collective_types.h"

namespace ordo::comm {
namespace {

using Clock = Deadlines::Clock;

// Holds the channel's mutex and counts itself among the sleepers, so that
// every change of a slot's state from now on notifies it.
class Sleep {
 public:
  explicit Sleep(Channel& channel) : channel_(channel), lock_(channel.mu) {
    channel_.sleepers.fetch_add(1, std::memory_order_seq_cst);
  }
  ~Sleep() { channel_.sleepers.fetch_sub(1, std::memory_order_seq_cst); }
  Sleep(const Sleep&) = delete;
  Sleep& operator=(const Sleep&) = delete;

  // On a thread that waits interruptibly (core/interrupt.h), wakes in time
  // to run its check, without mu: the check may take other locks.
  void until(Clock::time_point deadline) { block_until(channel_.cv, lock_, deadline); }

 private:
  Channel& channel_;
  std::unique_lock<std::mutex> lock_;
};

// What p waits in, for messages.
std::string where(const Participant& p) { return describe_at(p.call, p.sequence, p.group); }

// A failure if p's wait is interrupted: its device's waits are
// (Communicator::interrupt), or the waiting thread's (core/interrupt.h).
std::optional<device::Failure> interruption(const Participant& p) {
  std::optional<std::string> reason;
  if (p.status.any_interrupted()) reason = p.status.interrupt_reason(p.call.device);
  if (!reason && !interrupted()) return std::nullopt;
  return interrupted_failure(where(p), p.call.device, reason, missing_members(p));
}

// With mu held: messages read the channel.
void warn_if_due(const Participant& p, Deadlines& deadlines) {
  if (!deadlines.warning_due()) return;
  report_warning(slow_wait_warning(p.call.device, deadlines.warn_seconds(), where(p), missing_members(p)));
}

device::Failure participant_timeout(const Participant& p, const Deadlines& deadlines) {
  return timeout_failure(p.call.device, deadlines.timeout_seconds(),
                         str_cat(where(p), " (its collective #", p.number, ")"), missing_members(p));
}

}  // namespace

void take_seat(const Participant& p, int64_t arrived_ns) {
  p.slot.set_arrival(p.rank, arrived_ns);
  // Written only when it changes: the kernel's call is usually at the same
  // address every time, and peers then read it from their own caches.
  Seat& seat = p.slot.seats[p.rank];
  if (seat.call != &p.call) seat.call = &p.call;
  p.channel.member(p.rank).joined.store(p.sequence, std::memory_order_relaxed);
}

std::optional<device::Failure> wait_until_open(const Participant& p) {
  const int64_t done_through = p.channel.member(p.rank).done_through;
  auto open = [&p, done_through] { return p.channel.open(p.slot, p.sequence, done_through); };
  if (spin_until(open)) return std::nullopt;
  Deadlines deadlines;
  LookAgain look_again;
  Sleep sleep(p.channel);
  auto join_failed = [&p](device::Failure failure) {
    p.channel.member(p.rank).joined.store(p.sequence, std::memory_order_relaxed);
    p.channel.join_failed_locked(p.sequence, p.rank, failure);
    return failure;
  };
  while (!p.channel.open(p.slot, p.sequence, done_through, /*locked=*/true)) {
    if (std::optional<device::Failure> failure = missing_member_failure(p)) {
      // Nobody can have joined yet: a gone member never will. A member
      // that went elsewhere might, and must then fail too.
      if (failure->code == ErrorCode::kCollectiveMismatch) return join_failed(std::move(*failure));
      return failure;
    }
    if (std::optional<device::Failure> failure = interruption(p)) return join_failed(std::move(*failure));
    warn_if_due(p, deadlines);
    if (deadlines.timed_out()) return join_failed(participant_timeout(p, deadlines));
    sleep.until(std::min(deadlines.next(), look_again.next()));
  }
  return std::nullopt;
}

bool wait_for_arrivals(const Participant& p) {
  const size_t members = p.channel.size();
  auto done = [&p, members] {
    const uint64_t state = p.slot.state.load(std::memory_order_seq_cst);
    return SlotState::failed(state) || SlotState::arrived(state) == members;
  };
  if (!spin_until(done)) {
    Deadlines deadlines;
    LookAgain look_again;
    Sleep sleep(p.channel);
    while (!done()) {
      if (p.channel.has_pending()) p.channel.apply_pending_locked(p.slot);
      if (std::optional<device::Failure> failure = missing_member_failure(p)) {
        p.channel.fail_locked(p.slot, std::move(*failure));
        continue;
      }
      if (std::optional<device::Failure> stop = interruption(p)) {
        p.channel.fail_locked(p.slot, std::move(*stop));
        continue;
      }
      warn_if_due(p, deadlines);
      if (deadlines.timed_out()) {
        p.channel.fail_locked(p.slot, participant_timeout(p, deadlines));
        continue;
      }
      sleep.until(std::min(deadlines.next(), look_again.next()));
    }
  }
  return !SlotState::failed(p.slot.state.load(std::memory_order_acquire));
}

void sleep_in_channel(Channel& channel, const std::function<bool()>& done) {
  Sleep sleep(channel);
  while (!done()) sleep.until(Clock::now() + std::chrono::seconds(1));
}

void wait_until_all_done(const Participant& p) {
  wait_in_channel(p.channel, [&p] { return p.channel.all_done(p.sequence); });
}

void wait_until_done(const Participant& p, size_t rank) {
  wait_in_channel(p.channel,
                  [&p, rank] { return p.channel.member(rank).done.load(std::memory_order_seq_cst) >= p.sequence; });
}

void fail_if_member_gone_or_elsewhere(const Participant& p) {
  std::lock_guard<std::mutex> lock(p.channel.mu);
  if (p.channel.has_pending()) p.channel.apply_pending_locked(p.slot);
  if (std::optional<device::Failure> failure = missing_member_failure(p)) {
    p.channel.fail_locked(p.slot, std::move(*failure));
  }
}

}  // namespace ordo::comm
