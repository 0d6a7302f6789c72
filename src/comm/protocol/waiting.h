// Waiting in a channel: a short spin (peers usually arrive within
// microseconds), then a sleep on the channel, with the warning and the
// timeout (comm/deadlines.h) and the checks for gone devices and
// interrupts (comm/device_status.h).
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "comm/device_status.h"
#include "comm/protocol/channel.h"
#include "comm/protocol/pacing.h"
#include "comm/protocol/progress.h"

namespace ordo::comm {

// One member at one collective of a channel: who waits, for messages and
// for telling what the members it waits for do instead.
struct Participant {
  Channel& channel;
  Slot& slot;
  int64_t sequence;
  size_t rank;
  const CollectiveCall& call;
  // The group as the program names it: the channel's, or one that spans
  // processes, whose members in this process meet in the channel.
  const std::vector<int>& group;
  const DeviceStatus& status;
  int64_t number;  // the collective's number in its device's program
  const Partition& partition;
  std::span<const DeviceProgress> progress;  // by device
  // Where the members are, said after each missing one where processes
  // matter (" on process 0 (host vm, pid 42)"); empty within one process.
  std::string_view place = {};
};

// Fills what every member puts in its seat before it arrives: its call and
// its arrival time (a small all_reduce adds its inputs: local_groups.cc);
// p has joined its collective.
void take_seat(const Participant& p, int64_t arrived_ns);

// Until p's slot serves p's collective: it opens it once every member is
// done with the slot's earlier collective. Returns a failure instead if it
// never will: a member is gone, a member's collective of p's number is
// elsewhere (a mismatch, missing_members.h), or the wait timed out or was
// interrupted (for the last three p has joined the collective as failed,
// so that peers arriving later fail at once).
std::optional<device::Failure> wait_until_open(const Participant& p);
// Until every member arrived (true) or the collective failed (false). p
// fails it on timeout, on an interrupt, or when a member that has not
// joined is gone or its collective of p's number is elsewhere.
bool wait_for_arrivals(const Participant& p);
// Until done(), with no deadline, for what members that are all present
// do next: a spin, then a sleep on the channel, woken by Channel::wake
// (a look every second besides).
void sleep_in_channel(Channel& channel, const std::function<bool()>& done);
template <typename Done>
void wait_in_channel(Channel& channel, const Done& done) {
  if (!spin_until(done)) sleep_in_channel(channel, done);
}
// Until every member is done with p's collective. They are all present and
// doing bounded work, so this needs no timeout.
void wait_until_all_done(const Participant& p);
// Until the member of rank is done with p's collective, which it runs
// with deadlines of its own (a leader: local_meeting.h).
void wait_until_done(const Participant& p, size_t rank);
// Fails p's collective if a member that has not joined it is gone or its
// collective of p's number is elsewhere.
void fail_if_member_gone_or_elsewhere(const Participant& p);

// Marks a member done with its collective on every way out, exceptions
// included: a slot is reused only once every member is done.
class DoneMark {
 public:
  explicit DoneMark(const Participant& p) : p_(p) {}
  ~DoneMark() { mark(); }
  DoneMark(const DoneMark&) = delete;
  DoneMark& operator=(const DoneMark&) = delete;

  void mark() {
    if (marked_) return;
    marked_ = true;
    p_.channel.mark_done(p_.rank, p_.sequence);
  }
  // Whoever holds the member's part marks it later (a leader that leads:
  // local_meeting.h).
  void hand_over() { marked_ = true; }

 private:
  const Participant& p_;
  bool marked_ = false;
};

}  // namespace ordo::comm
