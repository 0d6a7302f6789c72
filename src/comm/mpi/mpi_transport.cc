#include "comm/mpi/mpi_transport.h"

#include <atomic>

#include "comm/mpi/posted_inbox.h"
#include "comm/mpi/process_mesh.h"
#include "comm/mpi/start_waits.h"
#include "comm/protocol/processes_communicator.h"

namespace ordo::comm {
namespace {

// How long news of a device waits for what the process sent before it
// (the news travel on the mesh, beside MPI, and could overtake it).
constexpr auto kNewsAfterSends = std::chrono::milliseconds(1000);

int tag_upper_bound_of(MPI_Comm comm) {
  int* value = nullptr;
  int found = 0;
  check_mpi(MPI_Comm_get_attr(comm, MPI_TAG_UB, &value, &found), "MPI_Comm_get_attr(MPI_TAG_UB)");
  return found && value != nullptr ? *value : 32767;
}

// The runtime's own communicator, once every process has come to this
// start: a process held between two runtimes (in Python, say) is named
// at the collective timeout, as one held before MPI is (start_waits.h).
MPI_Comm open_runtime_comm(const MpiWorld& world) {
  const StartPlace place{world.describe_process(world.rank()), "the start of a runtime"};
  const auto describe = [&world](int q) { return world.describe_process(q); };
  meet_at_start(world.comm(), "", place, describe);
  // Every process has come: the duplicate waits only for one that ended
  // since, and is bounded all the same.
  return duplicate_at_start(world.comm(), place, [&world] { return any_other_process(world.rank(), world.size()); });
}

// This process's runtime starts so far: every process counts them alike,
// since every start meets every process (open_runtime_comm).
std::atomic<uint64_t> g_runtime_starts{0};

}  // namespace

MpiTransport::MpiTransport(const MpiWorld& world, size_t piece_bytes)
    : world_(world),
      comm_(open_runtime_comm(world)),
      tag_upper_bound_(tag_upper_bound_of(comm_)),
      link_(comm_, piece_bytes),
      rings_(HostRings::open(comm_, world.topology())),
      mesh_(ProcessMesh::join(world)),
      runtime_(g_runtime_starts.fetch_add(1) + 1) {}

MpiTransport::~MpiTransport() {
  mesh_.set_handlers({});
  link_.free_communicator(comm_);
}

std::unique_ptr<Inbox> MpiTransport::open_inbox(int process, PostedTags tags) {
  return std::make_unique<PostedInbox>(link_, rings_.get(), process, tags);
}

void MpiTransport::send_small(std::string_view message, int process, PostedTags tags) {
  PostedInbox::send(link_, rings_.get(), message, process, tags);
}

void MpiTransport::flush_sends() {
  if (rings_) rings_->flush();  // what waited for room in a ring, as far as it fits now
  link_.flush_owned(kNewsAfterSends);
}

void MpiTransport::upkeep() {
  if (rings_) rings_->flush();
}

void MpiTransport::listen(NewsHandlers handlers) {
  if (handlers.device_news) {
    // News of an earlier runtime (announced before this start, heard
    // after) is stale: its devices failed in a runtime that is gone.
    handlers.device_news = [runtime = runtime_, hear = std::move(handlers.device_news)](const DeviceNews& news) {
      if (news.runtime == runtime) hear(news);
    };
  }
  mesh_.set_handlers(std::move(handlers));
}

void MpiTransport::announce(const DeviceNews& news) {
  DeviceNews ours = news;
  ours.runtime = runtime_;
  mesh_.announce(ours);
}

void MpiTransport::gave_up(const std::string& why) { mesh_.gave_up(why); }

std::unique_ptr<Communicator> make_mpi_communicator(const MpiWorld& world, size_t piece_bytes) {
  return std::make_unique<ProcessesCommunicator>(std::make_unique<MpiTransport>(world, piece_bytes));
}

}  // namespace ordo::comm
