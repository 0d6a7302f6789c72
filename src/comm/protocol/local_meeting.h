// Where the members of a cross-process group that live in this process
// meet: a channel of their own (channel.h), where they arrive, wait and
// fail as the members of a group within the process do (waiting.h), and
// where one of them, the leader, runs the collective with the other
// processes for all of them once every one has come (cross_collective.h).
// The others wait for the leader's outcome: nobody but the leader calls the
// transport for a collective that runs. One that fails here before every
// member came (a member gone, elsewhere, interrupted, late past the
// timeout, or abandoning it) is told to the other processes once, by the
// first member to leave it; the others leave it only once the telling is
// out, so that nothing this process sends of a later collective of the
// group overtakes it (the transport keeps one sender's order per tag).
//
// The leader is local member (position of the process in the group) mod
// (local members): fixed, and a different one in neighbouring processes.
// The last to arrive would save the leader's wake-up when it comes first,
// but with more device threads than CPUs (2 processes x 2 devices on 2
// CPUs, devices pinned 0, 1 / 0, 1) both processes' leaders then sat on
// one CPU in about half the collectives and took turns on it: a 1 KiB
// all_reduce took 130 us against MPI's 13.
//
//   Participant p{meeting.channel(), slot, sequence, index, call, plan.group, ...};
//   LocalMeeting::Arrival a = meeting.arrive(p, arrived_ns, teller);
//   if (!a.leads) { if (a.failure) a.failure->raise(); return; }  // done with it
//   std::optional<device::Failure> outcome = ... lead with meeting.calls() ...;
//   meeting.finish(p, outcome);
//
// Locking: the channel's. outcomes_[s % kSlots] is written by the leader
// before its done mark of collective #s and read by the others once they
// saw that mark, before their own; the slot serves #s + kSlots only once
// every member is done with #s. claimed_ and told_ (by slot too) are
// atomics: the member whose compare-and-swap claims #s tells, then
// stores told_, which the others wait for.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "comm/communicator.h"
#include "comm/protocol/channel.h"
#include "comm/protocol/group_plan.h"
#include "comm/protocol/waiting.h"
#include "device/device_data.h"

namespace ordo::comm {

class LocalMeeting {
 public:
  explicit LocalMeeting(GroupPlan plan);

  const GroupPlan& plan() const { return plan_; }
  // Its members are this process's members of the group, in plan order.
  Channel& channel() { return channel_; }

  // When the last local member came, and which (its clocks: steady for
  // this process, the system's for other hosts), for the leader.
  struct LastArrival {
    GlobalOrdinal device{-1};
    int64_t steady_ns = 0;
    int64_t wall_ns = 0;
  };
  struct Arrival {
    bool leads = false;  // every member came, and this is the leader
    // How the collective ended, for a member that does not lead: it is done.
    std::optional<device::Failure> failure;
    LastArrival last;  // for the leader
  };
  // Tells the other processes of the group that a collective failed here.
  class Teller {
   public:
    virtual void tell_failure(int64_t sequence, const device::Failure& failure) = 0;

   protected:
    ~Teller() = default;
  };
  // p (in channel()) arrives at its collective at arrived_ns on the steady
  // clock, and waits as its role says.
  Arrival arrive(const Participant& p, int64_t arrived_ns, Teller& teller);
  // The leader's calls, by local member, once it was told to lead.
  const std::vector<const CollectiveCall*>& calls() const { return channel_.member(leader_).calls; }
  // The leader is done with p's collective, which ended with outcome.
  void finish(const Participant& p, std::optional<device::Failure> outcome);
  // Member index will not run collective #sequence, its next: it fails
  // for every local member.
  void abandon(size_t index, int64_t sequence, const device::Failure& failure, Teller& teller);

 private:
  // Until every member came (nullopt), or how p's collective failed here.
  std::optional<device::Failure> gather(const Participant& p, int64_t arrived_ns);
  // Fills the leader's view of the calls and finds the last arrival.
  LastArrival lead(const Participant& p);
  // The first member to leave a collective that failed here tells the
  // other processes; the others wait until it did.
  void tell_once(int64_t sequence, const device::Failure& failure, Teller& teller);
  static size_t slot_index(int64_t sequence) { return static_cast<size_t>(sequence % Channel::kSlots); }

  const GroupPlan plan_;
  const size_t leader_;  // the local member that leads
  Channel channel_;
  std::array<std::optional<device::Failure>, Channel::kSlots> outcomes_;
  std::array<std::atomic<int64_t>, Channel::kSlots> claimed_, told_;
};

}  // namespace ordo::comm
