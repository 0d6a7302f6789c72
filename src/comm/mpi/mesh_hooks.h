// The process-wide hooks of ordo's process mesh (process_mesh.h): the
// SIGTERM message, last words on std::terminate, the goodbye at exit.
#pragma once

#include <string>

#include "comm/mpi/mpi_world.h"

namespace ordo::comm {

// Once per process, by ProcessMesh::join after the mesh is made: the
// SIGTERM handler (only if SIGTERM is still SIG_DFL), the terminate handler
// (chained to the previous one) and the atexit goodbye.
void install_mesh_hooks(const MpiWorld& world);

// Adds a failure (a process's death, or a device's failure a peer announced)
// to what the SIGTERM handler prints. Async-signal-safe to
// read against: the bytes already published never change. One writer at a
// time (the mesh's mu).
void record_failure_for_sigterm(const std::string& reason);

// The atexit hook (process_mesh.cc): goodbye, then the mesh thread stops.
void say_goodbye_at_exit();

}  // namespace ordo::comm
