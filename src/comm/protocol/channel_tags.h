// The tag of a group's messages. A transport matches a receive by (source,
// tag, communicator) and never lets two messages of one (source, tag)
// overtake each other; the collectives of one group come in the same order
// on every member (the token chain orders them), so a tag per group is all
// the ordering the backend needs: no global order of operations across
// groups or processes.
//
//   int tag = channel_tag(group, tag_upper_bound);  // the same on every process
//
// Tags come from a hash of the group's members in group order (the order
// of the reduction). Two groups that hash alike share a tag; the message
// header (message_header.h) then tells them apart as a mismatch, never as
// wrong data. Tags below kFirstChannelTag are kept for other traffic (the
// exchange, control messages).
#pragma once

#include <span>

namespace ordo::comm {

inline constexpr int kFirstChannelTag = 16;

// A tag in [kFirstChannelTag, tag_upper_bound] (MPI_TAG_UB, at least 32767
// by the standard).
int channel_tag(std::span<const int> group, int tag_upper_bound);

}  // namespace ordo::comm
