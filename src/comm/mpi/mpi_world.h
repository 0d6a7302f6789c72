// The MPI process layer: this process's place in a job started by mpirun,
// made once per process. MPI moves bytes only; every process drives its own
// devices (threads) and the world is every device of every process.
//
//   const MpiWorld& world = MpiWorld::join(/*local_devices=*/2);  // every process calls it
//   world.topology().world_size();          // processes x 2
//   world.topology().global_ordinal(1);     // rank x 2 + 1
//   world.host_name(3);                     // "vm", for messages only
//
// MPI's life in the process:
// - join() initializes MPI (MPI_THREAD_SERIALIZED: any thread may call MPI,
//   one at a time under the backend's process lock) unless someone else did,
//   first promoting libmpi to RTLD_GLOBAL: Python loads ordo with
//   RTLD_LOCAL, and some of Debian's Open MPI plugins need libmpi's symbols
//   without naming the library. MPI_Init_thread waits for every process of
//   the job: it runs on a thread of its own, and join waits for it, and for
//   the other processes after it, as a collective waits (start_waits.h).
// - MPI_Finalize runs once, at process exit (an atexit handler, on the thread
//   that calls exit, normally the main one), and only if ordo initialized MPI
//   and no peer failure was recorded. The runtime may start and stop many
//   times in between; MPI cannot be initialized twice.
// - After a peer failure (record_peer_failure: a peer died, this process
//   ends on an error, or it gave up on a collective while a peer had not
//   finished: process_mesh.h) the process never finalizes: MPI_Finalize
//   fences with every process and would hang on one that never comes. It
//   exits without, saying why on stderr, and mpirun ends the job.
//
// Locking: join() is serialized by a mutex of its own and makes the world
// once; the world is immutable afterwards. The peer-failure record is a
// mutex-guarded string read at exit.
#pragma once

#include <mpi.h>

#include <mutex>
#include <string>
#include <vector>

#include "comm/protocol/transport.h"
#include "comm/topology.h"

namespace ordo::comm {

class MpiWorld {
 public:
  // This process's world, made by the first call on every process of the
  // job (a collective over MPI_COMM_WORLD; later calls return it). Throws
  // InvalidArgument, naming every process's count, when the processes
  // disagree on local_devices, or when a later call asks for another
  // count; CollectiveTimeoutError when a process has not come by the
  // collective timeout (then every later call throws CollectiveError);
  // CollectiveError when MPI fails.
  static const MpiWorld& join(int local_devices);

  // This process will exit without MPI_Finalize, printing reason (the
  // first one recorded): see above.
  static void record_peer_failure(const std::string& reason);

  // The job's processes, as the protocol sees them (protocol/transport.h).
  const Processes& processes() const { return processes_; }
  const Topology& topology() const { return processes_.topology(); }
  int rank() const { return processes_.rank(); }
  int size() const { return processes_.size(); }
  // Where process p runs, for messages: the host name and the pid.
  const std::string& host_name(int process) const { return host_names_[static_cast<size_t>(process)]; }
  int pid(int process) const { return pids_[static_cast<size_t>(process)]; }
  // "process 1 (host vm, pid 4242)": made once, as every message
  // received is decoded with it.
  const std::string& describe_process(int process) const { return processes_.describe_process(process); }
  // ordo's own communicator (a duplicate of MPI_COMM_WORLD, errors
  // returned rather than fatal), so that no other user of MPI in the
  // process matches ordo's messages.
  MPI_Comm comm() const { return comm_; }

  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

 private:
  MpiWorld(MPI_Comm comm, Topology topology, std::vector<std::string> host_names, std::vector<int> pids);

  MPI_Comm comm_;
  Processes processes_;
  std::vector<std::string> host_names_;  // by process
  std::vector<int> pids_;                // by process
};

// The MPI lock: ordo calls MPI holding it (MPI_THREAD_SERIALIZED), after
// join. Once MPI is finalized at exit the calls are closed
// (mpi_calls_closed, read holding the lock): a thread still polling then
// fails instead of calling a finalized MPI.
std::mutex& mpi_call_lock();
bool mpi_calls_closed();

// Throws CollectiveError "<what> failed: <MPI's message>" unless rc is
// MPI_SUCCESS.
void check_mpi(int rc, const char* what);

}  // namespace ordo::comm
