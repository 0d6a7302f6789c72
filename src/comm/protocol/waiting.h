// Waiting in a channel: a short spin (peers usually arrive within
// microseconds), then a sleep on the channel, with the warning and the
// timeout (comm/deadlines.h) and the checks for gone devices and
// interrupts (comm/device_status.h).
#pragma once

#include <optional>
#include <span>

#include "comm/device_status.h"
#include "comm/protocol/channel.h"
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
  const DeviceStatus& status;
  int64_t number;  // the collective's number in its device's program
  const Partition& partition;
  std::span<const DeviceProgress> progress;  // by device
};

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
// Until every member is done with p's collective. They are all present and
// doing bounded work, so this needs no timeout.
void wait_until_all_done(const Participant& p);
// Fails p's collective if a member that has not joined it is gone or its
// collective of p's number is elsewhere.
void fail_if_member_gone_or_elsewhere(const Participant& p);

}  // namespace ordo::comm
