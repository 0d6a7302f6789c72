// Small messages between the processes of one host, through shared memory
// instead of MPI: a group's headers and retractions (posted_inbox.h), which
// carry a small all_reduce's inputs, so that a 1 KiB all_reduce across two
// processes is one write and one read of a shared ring each way. Through
// MPI the same exchange was an MPI_Isend, a posted receive and polls of
// MPI's progress engine: 2.75x MPI_Allreduce's own time.
//
//   std::unique_ptr<HostRings> rings = HostRings::open(comm, topology);  // every process; may be null
//   if (rings && rings->reaches(3)) rings->send(3, tag, bytes);
//   std::string into;
//   if (rings->try_take(3, tag, into)) decode_message(into, ...);
//
// Every ordered pair of the host's processes has one ring (a single
// producer, a single consumer: the two cursors are the only shared
// state), written as records of (tag, length, bytes). A reader drains the
// whole ring into per-tag queues of its process, so messages keep their
// order per (process, tag), as MPI keeps it, and groups do not wait for
// each other. A send never blocks: a record that does not fit waits in its
// process and moves at a later send, take or flush() (the communicator's
// answering thread flushes every few milliseconds), as MPI's own pending
// sends move only while the process calls MPI. A dead peer's ring is
// simply never read again: the mesh (process_mesh.h) says who died.
//
// Locking: per peer process, one mutex for what this process sends it
// (the pending records and the ring's write cursor) and one for what it
// receives from it (the queues and the read cursor). Each is held alone
// (a take flushes after it lets go of its own), and both are leaves for
// the rest of the backend. A take that finds the ring empty and nothing
// queued (the count of queued messages, the two cursors: all atomic)
// returns without the mutex.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comm/topology.h"

namespace ordo::comm {

class HostRings {
 public:
  // One segment per host, mapped by each of the host's processes: a
  // collective over every process of comm (each calls it in step, as
  // runtimes start; its waits are bounded as a collective's,
  // start_waits.h). Null when the process is alone on its host, when
  // ORDO_MPI_SHM=off, or when some process of the host could not map the
  // segment (no room, or the maker's /proc/<pid>/fd hidden): then every
  // message goes by MPI. The segment never has a name (memfd_create): the
  // others open it through its maker's descriptor while the maker keeps it
  // open, so nothing is left behind however the job ends, even by SIGKILL.
  // before_mapping, for tests only, runs in each process but the maker,
  // just before it maps the segment the maker has made.
  static std::unique_ptr<HostRings> open(MPI_Comm comm, const Topology& topology,
                                         const std::function<void()>& before_mapping = {});

  // Over `memory` (rings_bytes(processes.size(), capacity) zeroed bytes,
  // shared by every process of the host, released by `release`), as the
  // process at position `me` of `processes` (the host's processes by
  // world rank).
  HostRings(std::vector<int> processes, size_t me, std::byte* memory, size_t capacity,
            std::function<void()> release);
  ~HostRings();
  HostRings(const HostRings&) = delete;
  HostRings& operator=(const HostRings&) = delete;

  // The bytes of a segment for `processes` processes, rings of `capacity`
  // bytes (a power of two).
  static size_t rings_bytes(size_t processes, size_t capacity);
  // The ring capacity for a host of `processes` processes: large enough
  // for a 64 KiB all_reduce's header, the whole segment within 32 MiB.
  static size_t capacity_for(size_t processes);

  // Whether `process` is another process of this host.
  bool reaches(int process) const;
  // The longest message a ring takes; a longer one goes by MPI.
  size_t max_message() const { return capacity_ / 2 - kRecordHeader; }
  // Sends message to process (which reaches() must hold of) with tag.
  void send(int process, int tag, std::string_view message);
  // The next message from process with tag, if it has come: copied into
  // `into` (an empty message is a message too).
  bool try_take(int process, int tag, std::string& into);
  // Moves the records that waited for room into their rings, as far as
  // they fit.
  void flush();

 private:
  static constexpr size_t kRecordHeader = 8;  // the tag and the length, as uint32
  struct Ring;
  struct Outbox {
    std::mutex mu;
    std::deque<std::pair<int, std::string>> pending;  // (tag, message), waiting for room
    uint64_t free_from = 0;  // the reader's cursor as last read: room up to it + capacity
  };
  struct Inbox {
    std::mutex mu;
    std::map<int, std::deque<std::string>> queued;  // by tag, read from the ring before they were asked for
    // How many messages `queued` holds, changed under mu and read without
    // it: a poll that finds it 0 and the ring empty returns at once.
    std::atomic<size_t> queued_count{0};
  };

  // The position of another process of this host in processes_, if it is one.
  std::optional<size_t> other_position(int process) const;
  size_t position_of(int process) const;  // of one that reaches() holds of
  Ring ring(size_t from, size_t to) const;
  // Caller holds the outbox's mutex: writes what fits of its pending records.
  void flush_locked(size_t to, Outbox& out);

  const std::vector<int> processes_;
  const size_t me_;
  std::byte* const memory_;
  const size_t capacity_;
  const std::function<void()> release_;
  std::vector<std::unique_ptr<Outbox>> outboxes_;  // by position of the receiver
  std::vector<std::unique_ptr<Inbox>> inboxes_;    // by position of the sender
  std::atomic<bool> any_pending_{false};
};

}  // namespace ordo::comm
