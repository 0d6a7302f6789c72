// The MPI backend: the protocol among processes (protocol/
// processes_communicator.h) over MPI, for a job started by mpirun.
// - Data and messages go by MPI point to point (mpi_link.h), on a
//   communicator of MPI's own for each runtime start, so that messages
//   left by a collective that failed under an earlier runtime are never
//   taken for this one's (every process makes them in step: runtime starts
//   are).
// - A group's small messages to another process of this host go through
//   shared memory (host_rings.h), to the others by posted receives
//   (posted_inbox.h).
// - News of devices and of processes that die or finish travel on the
//   process mesh (process_mesh.h), beside MPI, which reports neither. Each
//   device news carries the number of the runtime start it was announced
//   in; a communicator hears only its own start's (a peer's news of the
//   last runtime can reach the mesh after this process started the next).
//
//   const MpiWorld& world = MpiWorld::join(/*local_devices=*/2);
//   std::unique_ptr<Communicator> comm = make_mpi_communicator(world);
//
// Locking: the link's MPI lock, the rings' own, the mesh's (their headers
// say); the transport adds none.
#pragma once

#include <mpi.h>

#include <memory>

#include "comm/communicator.h"
#include "comm/mpi/host_rings.h"
#include "comm/mpi/mpi_link.h"
#include "comm/mpi/mpi_world.h"
#include "comm/protocol/transport.h"

namespace ordo::comm {

class ProcessMesh;

class MpiTransport final : public Transport {
 public:
  // A collective over every process of the world (each calls it as its
  // runtime starts). piece_bytes: the longest MPI message (mpi_link.h);
  // smaller only in tests of the cutting.
  explicit MpiTransport(const MpiWorld& world, size_t piece_bytes = kMessagePieceBytes);
  ~MpiTransport() override;

  const Processes& processes() const override { return world_.processes(); }
  int tag_upper_bound() const override { return tag_upper_bound_; }
  void send(const void* data, size_t bytes, int process, int tag, Requests& into) override {
    link_.send(data, bytes, process, tag, into);
  }
  void receive(void* data, size_t bytes, int process, int tag, Requests& into) override {
    link_.receive(data, bytes, process, tag, into);
  }
  void send_region(const std::byte* base, const Region& region, int process, int tag, Requests& into) override {
    link_.send_region(base, region, process, tag, into);
  }
  void receive_region(std::byte* base, const Region& region, int process, int tag, Requests& into) override {
    link_.receive_region(base, region, process, tag, into);
  }
  bool test(Requests& requests) override { return link_.test(requests); }
  void abandon(Requests& requests) override { link_.abandon(requests); }
  size_t piece_bytes() const override { return link_.piece_bytes(); }
  void send_owned(std::string message, int process, int tag, std::shared_ptr<const std::string> body,
                  int body_tag) override {
    link_.send_owned(std::move(message), process, tag, std::move(body), body_tag);
  }
  std::optional<std::string> try_take(int process, int tag, int* source, const FollowersOf& followers_of) override {
    return link_.try_take(process, tag, source, followers_of);
  }
  std::unique_ptr<Inbox> open_inbox(int process, PostedTags tags) override;
  void send_small(std::string_view message, int process, PostedTags tags) override;
  void flush_sends() override;
  void upkeep() override;
  void listen(NewsHandlers handlers) override;
  void announce(const DeviceNews& news) override;
  void gave_up(const std::string& why) override;

 private:
  const MpiWorld& world_;
  MPI_Comm comm_;
  const int tag_upper_bound_;
  MpiLink link_;
  std::unique_ptr<HostRings> rings_;  // null: every message by MPI
  ProcessMesh& mesh_;
  const uint64_t runtime_;  // this start's number (DeviceNews::runtime)
};

std::unique_ptr<Communicator> make_mpi_communicator(const MpiWorld& world,
                                                    size_t piece_bytes = kMessagePieceBytes);

}  // namespace ordo::comm
