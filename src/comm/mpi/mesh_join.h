// How the processes of an MPI job connect ordo's process mesh
// (process_mesh.h): each listens (mesh_socket.h), a meeting of the start
// (start_waits.h: bounded by the collective timeout) tells every process
// where the others listen, the lower rank of each pair connects and
// says hello (its rank and the nonce the other drew, so that a stray
// connection is never taken for a peer), the higher rank accepts.
#pragma once

#include <string>
#include <vector>

#include "comm/mpi/mesh_frames.h"
#include "comm/mpi/mpi_world.h"

namespace ordo::comm {

struct MeshConnection {
  int fd = -1;         // -1 for this process itself
  std::string name;    // world.describe_process(q)
  FrameReader reader;  // holds what came after the hello
};

// A collective over world.comm(): one connection per process, by rank.
// Throws CollectiveError on every process, naming the process that could
// not listen or connect, when any could not (within 20 s).
std::vector<MeshConnection> connect_mesh(const MpiWorld& world);

}  // namespace ordo::comm
