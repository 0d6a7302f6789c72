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
//   Backoff backoff;
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

// How a waiter that polls passes the time between two polls: spin first
// (peers usually answer within microseconds), then yield the core (with
// more threads than cores a peer may need this very one), then sleep,
// longer each time up to a millisecond. Yielding lasts milliseconds: on an
// oversubscribed host a peer is often off its CPU for longer than a spin,
// and a waiter that sleeps then makes its own peers wait for its wake-up
// (mpi_matches_in_process at 3x2 on 2 loaded cores: 51 s instead of 38).
//
// On a host with more device threads than CPUs, every pause yields from
// the first: a waiter that spins there holds the CPU that a peer it waits
// for (another process's leader, or a local member to be woken) needs. 2
// processes x 2 devices on 2 CPUs, 4 MiB: 1.19 -> 1.69x MPI's bus
// bandwidth, 1 KiB 96 -> 61 us. With a CPU per device thread the spin
// stays: a yield per poll made 1 KiB at 2 x 1 2.3 -> 3.3 us.
class Backoff {
 public:
  void pause();
  // Set by the communicator from the topology; read by every waiter.
  static void set_oversubscribed(bool oversubscribed) { oversubscribed_.store(oversubscribed); }
  static bool oversubscribed() { return oversubscribed_.load(std::memory_order_relaxed); }

 private:
  // A pause reads the clock once in kPausesPerClockRead (a reading costs as
  // much as a poll or two in a VM, and delays noticing the answer), from
  // the first pause on: a wait that ends at its first poll reads none.
  static constexpr unsigned kPausesPerClockRead = 16;
  unsigned pauses_ = 0;
  std::optional<std::chrono::steady_clock::time_point> started_;
  std::chrono::steady_clock::duration waited_{};  // at the last reading
  std::chrono::microseconds sleep_{20};
  static inline std::atomic<bool> oversubscribed_{false};
};

}  // namespace ordo::comm
