// ordo's own control plane beside MPI: a TCP stream between every pair of
// processes of the job, watched by one thread per process. Open MPI 4.1
// never reports a dead peer (no ULFM) and mpirun SIGTERMs the survivors
// about 1 s after a death; the mesh sees the death first (the kernel closes
// a dead process's sockets, even after SIGKILL), says who died and why, and
// carries news about devices from process to process.
//
//   ProcessMesh& mesh = ProcessMesh::join(world);        // every process, at one point
//   mesh.set_handlers({[&](int process, const std::string& reason) { fail_devices_of(process, reason); },
//                      [&](const DeviceNews& news) { mark(news); }});
//   mesh.announce({DeviceNews::Kind::kFailed, 3, "device 3 raised ..."});
//   mesh.say_last_words("raised RuntimeError: boom");     // before exiting on an error
//
// What each process learns of a peer q:
// - q's goodbye (sent at q's exit by an atexit hook): q finished its
//   program, process_finished(q, "process q (host h, pid N) finished its
//   program"); its connection then ends, which is no news;
// - q's last words, then anything: process_died(q, "process q (host h, pid
//   N) raised RuntimeError: boom") as soon as the words arrive;
// - q's connection closes without a goodbye: process_died(q, "process q
//   (host h, pid N) died: its connection closed without a goodbye"); it
//   fails (reset, keepalive timeout after ~10 s of a silent host): "process
//   q (...) is lost: its connection failed (<error>): it died, or its host
//   or the network to it failed" (the mesh cannot tell which);
// - q sends what is not a frame of the mesh, or takes nothing from this
//   process for announce's whole wait: process_died(q, "process q (...) is
//   taken for dead: <why>"), and its stream is shut.
// Every death is also recorded with MpiWorld::record_peer_failure (the
// process then never calls MPI_Finalize, whose fence would hang) and for
// the SIGTERM handler below.
//
// Process-wide hooks installed by join():
// - SIGTERM, only if it is still SIG_DFL (Python leaves it so): writes
//   "ordo: process p (host h): stopped by SIGTERM, as mpirun ends a job;
//   ordo saw: <the deaths and peers' device failures seen>" (or "ordo saw
//   no failure of its peers (mpirun itself was signalled, or ...)": mpirun
//   ends every process when it is signalled too)
//   with write(2) from a buffer the mesh thread keeps, then _exit(143).
// - std::terminate: says the exception's type and what() as last words,
//   then calls the previous terminate handler.
// - atexit: the goodbye, then a wait for every peer's goodbye (or death)
//   while the mesh thread still listens, then the thread stops. MPI_Finalize
//   (next, mpi_world.cc) fences with every process, so it is called only
//   once every peer said goodbye: the wait is unbounded in a process that
//   saw no failure (a peer still working is waited for, as MPI_Finalize
//   would), ends at once when a peer dies, and lasts at most 2 s in a
//   process that gave up on a collective (gave_up): a process that gives
//   up ends whatever its peers do, without MPI_Finalize if one of them has
//   not finished.
// The processes of an MPI job must not fork while the mesh runs: a child
// would share the streams.
//
// Threads and locking:
// - Handlers run on the mesh thread, one call at a time, in the order the
//   news arrived (per sender, the order it was sent); set_handlers also
//   replays the deaths already seen, and the device news that came while
//   nobody listened, on its caller's thread before it returns.
// - State::delivery_mu (recursive) is held around every handler call and by
//   set_handlers: once set_handlers returns, the old handlers are not running
//   and never run again. A handler may call every method (set_handlers
//   included, on the same thread; an announce from a handler holds up the
//   mesh thread for as long as announce may wait); a caller of set_handlers
//   must not hold a lock that a handler takes.
// - State::mu guards the handlers, the deaths and the peers' liveness; it
//   is never held while a handler runs or while a socket is written.
//   Order: delivery_mu, then mu; MpiWorld's failure record is taken under
//   neither.
// - Each peer's sending gate serializes the frames written to its stream;
//   it is entered with the sender's deadline, so announce never waits long
//   on a slow or dead peer.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "comm/mpi/mesh_frames.h"
#include "comm/mpi/mpi_world.h"

namespace ordo::comm {

class ProcessMesh {
 public:
  // The mesh of this process, made once per process on the first call: a
  // collective over world.comm() like MpiWorld::join (every process calls
  // it at the same point, serialized with the process's other MPI calls).
  // Lives until exit. Throws CollectiveError, on every process, when one
  // cannot listen or a pair cannot connect within 20 s.
  static ProcessMesh& join(const MpiWorld& world);
  // The mesh if this process made one, else nullptr.
  static ProcessMesh* joined();

  using Handlers = NewsHandlers;  // protocol/transport.h
  // Replaces the handlers (empty functions: nobody listens; deaths and
  // goodbyes are still recorded, and replayed to the next handlers, and
  // device news kept for the next device_news handler).
  void set_handlers(Handlers handlers);

  // To every other live process, in order; waits at most ~2 s in all for
  // peers that take nothing.
  void announce(const DeviceNews& news);

  // Before this process exits because of an error: its peers are told why
  // ("raised RuntimeError: boom"; they prefix who), so that their messages
  // name the cause rather than only the death. No goodbye follows, and this
  // process will not call MPI_Finalize (its peers stop taking part).
  void say_last_words(const std::string& why);

  // A collective or exchange of this process failed (why): at exit it
  // waits for its peers' goodbyes for 2 s at most (see above).
  void gave_up(const std::string& why);

  // The deaths seen so far: process -> reason.
  std::map<int, std::string> dead_processes() const;

  ~ProcessMesh() = delete;  // lives until exit: the hooks above reach it
  ProcessMesh(const ProcessMesh&) = delete;
  ProcessMesh& operator=(const ProcessMesh&) = delete;

 private:
  struct State;
  explicit ProcessMesh(std::unique_ptr<State> state);
  friend void say_goodbye_at_exit();

  std::unique_ptr<State> state_;
};

}  // namespace ordo::comm
