#include "comm/protocol/local_meeting.h"

#include <algorithm>
#include <optional>

#include "core/steady_clock.h"

namespace ordo::comm {
namespace {

std::vector<int> local_members(const GroupPlan& plan) {
  std::vector<int> members;
  for (const size_t rank : plan.local_ranks) members.push_back(plan.group[rank]);
  return members;
}

}  // namespace

LocalMeeting::LocalMeeting(GroupPlan plan)
    : plan_(std::move(plan)),
      leader_(plan_.me % std::max<size_t>(1, plan_.local_ranks.size())),
      channel_(local_members(plan_)) {
  for (size_t i = 0; i < claimed_.size(); ++i) {
    claimed_[i].store(-1, std::memory_order_relaxed);
    told_[i].store(-1, std::memory_order_relaxed);
  }
}

LocalMeeting::Arrival LocalMeeting::arrive(const Participant& p, int64_t arrived_ns, Teller& teller) {
  DoneMark done(p);
  if (std::optional<device::Failure> failure = gather(p, arrived_ns)) {
    tell_once(p.sequence, *failure, teller);
    return {false, std::move(failure), {}};
  }
  if (p.rank == leader_) {
    done.hand_over();  // to finish, once the outcome is there
    return {true, std::nullopt, lead(p)};
  }
  wait_until_done(p, leader_);
  return {false, outcomes_[slot_index(p.sequence)], {}};
}

std::optional<device::Failure> LocalMeeting::gather(const Participant& p, int64_t arrived_ns) {
  Member& member = channel_.member(p.rank);
  std::optional<uint64_t> arrived;
  if (p.sequence - Channel::kSlots <= member.done_through) {
    take_seat(p, arrived_ns);
    arrived = channel_.arrive(p.slot, p.sequence, member.done_through);
  }
  if (!arrived) {
    if (std::optional<device::Failure> failure = wait_until_open(p)) return failure;
    take_seat(p, arrived_ns);
    arrived = channel_.arrive(p.slot);
  }
  if (p.status.any_gone() && !SlotState::failed(*arrived)) fail_if_member_gone_or_elsewhere(p);
  if (SlotState::failed(*arrived) || !wait_for_arrivals(p)) return channel_.failure_of(p.slot);
  // Everyone arrived here, so everyone is done with every earlier collective.
  member.done_through = p.sequence - 1;
  return std::nullopt;
}

LocalMeeting::LastArrival LocalMeeting::lead(const Participant& p) {
  std::vector<const CollectiveCall*>& calls = channel_.member(leader_).calls;
  for (size_t q = 0; q < calls.size(); ++q) calls[q] = p.slot.seats[q].call;
  const size_t last = p.slot.last_arrival();
  const int64_t steady_ns = p.slot.arrival(last);
  return {GlobalOrdinal(channel_.group()[last]), steady_ns, wall_ns_at(steady_ns)};
}

void LocalMeeting::tell_once(int64_t sequence, const device::Failure& failure, Teller& teller) {
  std::atomic<int64_t>& claimed = claimed_[slot_index(sequence)];
  std::atomic<int64_t>& told = told_[slot_index(sequence)];
  int64_t seen = claimed.load(std::memory_order_acquire);
  while (seen < sequence) {
    if (!claimed.compare_exchange_weak(seen, sequence, std::memory_order_acq_rel)) continue;
    const auto out = [&] {  // the others go on even if the send threw: the failure is this member's
      told.store(sequence, std::memory_order_seq_cst);
      channel_.wake();
    };
    try {
      teller.tell_failure(sequence, failure);
    } catch (...) {
      out();
      throw;
    }
    out();
    return;
  }
  // Claimed by another member, whose message is on its way (a send).
  wait_in_channel(channel_, [&] { return told.load(std::memory_order_seq_cst) >= sequence; });
}

void LocalMeeting::finish(const Participant& p, std::optional<device::Failure> outcome) {
  outcomes_[slot_index(p.sequence)] = std::move(outcome);
  channel_.mark_done(p.rank, p.sequence);
}

void LocalMeeting::abandon(size_t index, int64_t sequence, const device::Failure& failure, Teller& teller) {
  channel_.abandon(index, sequence, failure);
  tell_once(sequence, failure, teller);
  channel_.mark_done(index, sequence);
}

}  // namespace ordo::comm
