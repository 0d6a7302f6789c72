// How the MPI backend calls MPI: under one process-wide lock (MPI runs at
// MPI_THREAD_SERIALIZED: any thread may call it, one at a time), from the
// threads that wait. Open MPI has no progress thread: a message moves only
// while some thread of the process is inside MPI, so every waiter polls
// (MpiLink::test), and each poll moves every pending message of the
// process, its own and its neighbours' (flat combining: no handoff to
// another thread, whose wake-up alone costs more than a small collective).
//
//   MpiLink& link = ...;
//   Requests requests;
//   link.send(data, bytes, process, tag, requests);
//   link.receive(out, bytes, process, tag, requests);
//   Backoff backoff;  // comm/protocol/pacing.h
//   while (!link.test(requests)) { check_failures(); backoff.pause(); }
//
// Messages of any size: MPI counts in int, so longer ones go as several.
// Sends whose buffers a caller cannot keep (a header, a notice) are handed
// to the link (send_owned), which keeps them until MPI is done with them.
//
// Locking: the MPI lock is one for the process (every link shares it), a
// leaf (nothing else is taken while it is held), held only for the MPI
// call itself; it also guards owned_.
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "comm/protocol/pacing.h"

namespace ordo::comm {

using Requests = std::vector<MPI_Request>;

// A strided region of a buffer, in bytes: `count` blocks of `block` bytes,
// `stride` apart, from `offset` on (what one member needs of another's
// tensor in reduce_scatter and all_to_all).
struct Region {
  size_t offset = 0;
  size_t count = 1;
  size_t block = 0;
  size_t stride = 0;
  size_t bytes() const { return count * block; }
};

class MpiLink {
 public:
  explicit MpiLink(MPI_Comm comm);
  ~MpiLink();
  MpiLink(const MpiLink&) = delete;
  MpiLink& operator=(const MpiLink&) = delete;

  void send(const void* data, size_t bytes, int process, int tag, Requests& into);
  void receive(void* data, size_t bytes, int process, int tag, Requests& into);
  void send_region(const std::byte* base, const Region& region, int process, int tag, Requests& into);
  void receive_region(std::byte* base, const Region& region, int process, int tag, Requests& into);
  // One receive into data, posted now and completed by test_receive:
  // Some(bytes received) once it is done, and then request is null.
  void post_receive(void* data, size_t bytes, int process, int tag, MPI_Request& request);
  std::optional<size_t> test_receive(MPI_Request& request);
  // Cancels a posted receive; false if MPI may still write its buffer
  // (then the caller must keep the buffer alive).
  bool cancel_receive(MPI_Request& request);
  // A send the link owns until it completes.
  void send_owned(std::string message, int process, int tag);
  // Waits (up to `within`) until MPI is done with every owned send: what a
  // device sent has left this process before news of it goes out on the
  // mesh, which could overtake it.
  void flush_owned(std::chrono::milliseconds within);

  // True once every request is complete (and then empty).
  bool test(Requests& requests);
  // The next message from process (MPI_ANY_SOURCE: anyone) with tag, if
  // one has come; *source says who sent it.
  std::optional<std::string> try_take(int process, int tag, int* source = nullptr);
  // Gives up on requests that cannot complete (a peer failed): receives
  // are cancelled, and the buffers of sends must stay alive (the caller
  // keeps them); the requests themselves are never waited for.
  void abandon(Requests& requests);
  // Marks comm for freeing once its pending messages are done (MPI keeps
  // it until then).
  void free_communicator(MPI_Comm& comm);

 private:
  // Caller holds mu_: completes what it can of the owned sends.
  void reap_owned_locked();

  MPI_Comm comm_;
  std::mutex& mu_;  // the MPI lock
  struct Owned {
    std::string message;
    MPI_Request request;
  };
  std::list<Owned> owned_;  // guarded by mu_
};

}  // namespace ordo::comm
