// One collective of a group that spans processes, run by the group's
// leader in this process (local_meeting.h) for every local member:
//
// 1. Headers: the leader sends every other process of the group one
//    header with its members' fingerprints (message_header.h), or the
//    failure of the collective in this process, and receives theirs. A
//    small all_reduce's inputs travel in the header: one message each
//    way, like MPI's own small all_reduce.
// 2. Every process checks every member's fingerprint against the first
//    member's, so all find the same first mismatch; they then swap
//    descriptions of their calls, and every member of every process
//    raises the same CollectiveMismatchError, naming both devices with
//    their process and host.
// 3. The data moves (cross_data.h).
//
// Headers come in order per (process, group) because the transport never lets two
// messages of one source and tag overtake each other; a header of an
// earlier collective (one that failed here before this process sent
// anything) is dropped. While it waits the leader fails the collective
// when a member of another process is gone (its process died, or it
// failed: news from the process mesh), when a local member is
// interrupted, when one runs this collective's number on other replica
// groups (progress_board.h), or past the timeout, after the warning. A process that
// fails after its header went out sends a retraction, so that peers that
// took its header stop waiting for its data.
//
// Locking: none. A CrossCollective is used by whoever runs the tasks of the
// meeting's leader, and by tell_failure, which touches only the transport
// (local_meeting.h says who calls it, and when).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/fingerprint.h"
#include "comm/device_status.h"
#include "comm/protocol/cross_data.h"
#include "comm/protocol/transport.h"
#include "comm/protocol/local_meeting.h"
#include "comm/protocol/message_header.h"
#include "comm/protocol/progress_board.h"

namespace ordo::comm {

// What the communicator shares with its leaders.
struct Peers {
  const Processes& world;
  Transport& transport;
  const DeviceStatus& status;
  ProgressBoard& board;
};

// Which collective a leader runs: the group's #sequence, the leader's
// device's #number, on the partition (replica groups) its call named; and
// the leader (the last local member to arrive), with when it arrived by
// the steady and the system clock.
struct CollectiveAt {
  int64_t sequence;
  int64_t number;
  const std::string& partition;
  LocalMeeting::LastArrival arrived;  // the local member that came last, and when
};

class CrossCollective final : public LocalMeeting::Teller {
 public:
  CrossCollective(const Peers& peers, LocalMeeting& meeting);

  // The collective for every local member (meeting.calls()).
  std::optional<device::Failure> lead(const CollectiveAt& at);
  // #sequence failed here before a leader ran it: the other processes
  // of the group fail it too. Any local member may call it (local_meeting.h).
  void tell_failure(int64_t sequence, const device::Failure& failure) override;

  // "device 2 on process 1 (host vm, pid 42)"
  std::string who(GlobalOrdinal device) const;
  // " on process 1 (host vm, pid 42)"
  std::string on(GlobalOrdinal device) const;

 private:
  // Where a small all_reduce's inputs sit in a header: `slot` bytes a
  // member from `payload` on (eager: they travel there at all).
  struct HeaderLayout {
    bool eager = false;
    size_t slot = 0;
    size_t payload = 0;
  };
  // Fingerprints every local member and sends this process's header (with
  // a small all_reduce's inputs) to every other process of the group.
  HeaderLayout send_header(const CollectiveAt& at, const CollectiveCall& like);
  // Every member's fingerprint and staged inputs into words_ and staged_,
  // by rank, from this process's header and the others'; a failure one
  // of them carries.
  std::optional<device::Failure> read_headers(const HeaderLayout& layout);
  // The first rank whose fingerprint differs from rank 0's.
  std::optional<size_t> first_mismatch() const;
  // A small all_reduce, from the inputs in the headers.
  void reduce_eager(const HeaderLayout& layout);
  // The data movement (cross_data.h), waiting as long as data is on its way.
  std::optional<device::Failure> move_data(const CollectiveAt& at, const CollectiveCall& like);
  // The data of #sequence failed to move: the transport may still use every buffer,
  // so they are kept until exit, and the group runs no collective any more.
  void break_group(int64_t sequence, const device::Failure& failure);
  // The headers of every other process, into their_headers_ and raw_, or
  // a failure.
  std::optional<device::Failure> receive_headers(const CollectiveAt& at, const CollectiveCall& like);
  // After a mismatch: the descriptions of every member, by rank.
  device::Failure mismatch(const CollectiveAt& at, size_t rank, const CollectiveCall& like);
  // A retraction of #sequence from any process of the group, if one came.
  std::optional<device::Failure> retraction(int64_t sequence);
  void send_to_others(const std::string& message, PostedTags tags);
  // Every header is in: tells each local member when the group's last
  // member arrived and who it was.
  void record_timing(const CollectiveAt& at) const;
  // This process takes back its header of #sequence.
  void retract(int64_t sequence, const device::Failure& failure);
  // The failure of a collective that waits for the processes at the
  // positions not yet heard_from (every other when empty), if it cannot
  // complete.
  class Watch;

  Peers peers_;
  LocalMeeting& meeting_;
  const GroupPlan& plan_;
  std::vector<Fingerprint> fingerprints_;  // by local member
  // By process position (none for this one).
  std::vector<std::unique_ptr<Inbox>> headers_, retractions_;
  Scratch scratch_;
  // The leader's header and what it hears, kept from one collective to the
  // next so that a small one allocates nothing: by process position
  // (their_headers_, raw_: the message each came in, heard_), and by rank
  // (words_: fingerprints, staged_: a small all_reduce's inputs).
  std::vector<MemberEntry> entries_;
  std::string mine_;
  std::vector<DecodedMessage> their_headers_;
  std::vector<std::string_view> raw_;
  std::vector<bool> heard_;
  std::vector<std::span<const int64_t>> words_;
  std::vector<const std::byte*> staged_;
  std::map<int64_t, device::Failure> early_retractions_;
  std::optional<std::string> broken_;  // why the group's collectives cannot run any more
};

}  // namespace ordo::comm
