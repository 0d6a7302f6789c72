// What the members that a waiter waits for do instead, read from their
// progress records (progress.h) on the waiter's slow path only: why its
// collective cannot complete, and the words of its warning and timeout.
//
//   if (std::optional<device::Failure> failure = missing_member_failure(p)) ...
//   str_cat("missing devices: ", missing_members(p));
#pragma once

#include <optional>
#include <string>

#include "comm/protocol/waiting.h"

namespace ordo::comm {

// Why p's collective cannot complete, if a member that has not joined it
// shows it: the member's collective of the same number in its program is
// on another partition (a CollectiveMismatchError naming both devices and
// both partitions), or the member is gone.
std::optional<device::Failure> missing_member_failure(const Participant& p);

// The members that have not joined p's collective, each with what it does
// instead: "1 (is waiting in all_reduce #0 on group [1, 0], its collective
// #0), 3 (has not reached a collective yet)".
std::string missing_members(const Participant& p);

}  // namespace ordo::comm
