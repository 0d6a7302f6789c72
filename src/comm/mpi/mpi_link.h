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
// Data of any size: MPI counts in int, so send, receive and the regions go
// as several messages of at most piece_bytes() each (1 GiB), cut alike by
// sender and receiver. Sends whose buffers a caller cannot keep (a header,
// a notice) are handed to the link (send_owned), which keeps them until MPI
// is done with them; such a message, taken whole by try_take, may be
// followed by a body of any size on another tag (the exchange's payloads).
//
// Locking: the MPI lock is one for the process (every link shares it), a
// leaf (nothing else is taken while it is held), held only for the MPI
// call itself; it also guards owned_.
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "comm/protocol/pacing.h"
#include "comm/protocol/transport.h"

namespace ordo::comm {

// The longest message send, receive and a region go as (MPI counts in int).
inline constexpr size_t kMessagePieceBytes = size_t{1} << 30;

class MpiLink {
 public:
  // piece_bytes: at most INT_MAX; smaller only in tests of the cutting.
  explicit MpiLink(MPI_Comm comm, size_t piece_bytes = kMessagePieceBytes);
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
  size_t piece_bytes() const { return piece_bytes_; }
  // A send the link owns until it completes (one message: at most INT_MAX
  // bytes), and then, when body is given, body on body_tag (cut as send
  // cuts), in the same hold of the MPI lock, so that a process's bodies
  // come in the order of their messages.
  void send_owned(std::string message, int process, int tag, std::shared_ptr<const std::string> body = nullptr,
                  int body_tag = 0);
  // Waits (up to `within`) until MPI is done with every owned send: what a
  // device sent has left this process before news of it goes out on the
  // mesh, which could overtake it.
  void flush_owned(std::chrono::milliseconds within);

  // True once every request is complete (and then empty).
  bool test(Requests& requests);
  // The next message from process (MPI_ANY_SOURCE: anyone) with tag, if
  // one has come; *source says who sent it.
  std::optional<std::string> try_take(int process, int tag, int* source = nullptr);
  // The same, and the receives of the body that follows the message, which
  // followers_of(message, source) places (called holding the MPI lock: it
  // must neither call the link nor take a lock), posted in the same hold,
  // so that bodies are matched in the order their messages were taken.
  std::optional<std::string> try_take(int process, int tag, int* source, const FollowersOf& followers_of);
  // Gives up on requests that cannot complete (a peer failed): receives
  // are cancelled, and the buffers of sends must stay alive (the caller
  // keeps them); the requests themselves are never waited for.
  void abandon(Requests& requests);
  // Marks comm for freeing once its pending messages are done (MPI keeps
  // it until then).
  void free_communicator(MPI_Comm& comm);

 private:
  enum class Way { kSend, kReceive };
  // The caller holds mu_ for these. reap_owned_locked completes what it
  // can of the owned sends.
  void reap_owned_locked();
  void post_locked(Way way, const std::byte* at, int count, MPI_Datatype type, int process, int tag,
                   Requests& into);
  // bytes from `at` on as pieces of at most piece_bytes_ (one message when empty).
  void post_bytes_locked(Way way, const std::byte* at, size_t bytes, int process, int tag, Requests& into);
  void post_region_locked(Way way, const std::byte* base, const Region& region, int process, int tag,
                          Requests& into);

  MPI_Comm comm_;
  const size_t piece_bytes_;
  std::mutex& mu_;  // the MPI lock
  struct Owned {
    std::string message;
    std::shared_ptr<const std::string> body;  // shared by the sends of one body to several processes
    Requests requests;
  };
  std::list<Owned> owned_;  // guarded by mu_
};

}  // namespace ordo::comm
