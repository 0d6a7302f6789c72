#include "comm/mpi/mesh_join.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <random>

#include "comm/mpi/mesh_socket.h"
#include "comm/mpi/start_waits.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

constexpr auto kConnectWait = std::chrono::seconds(20);
constexpr auto kHelloWait = std::chrono::seconds(5);

// What each process tells the others: one MPI_Allgather of bytes.
struct MeshAddress {
  uint32_t ip;     // network order
  uint16_t port;   // 0: this process could not listen
  uint16_t unused;
  uint64_t nonce;  // what a hello to this process must carry
};

uint64_t draw_nonce() {
  std::random_device device;
  return (uint64_t{device()} << 32) ^ device() ^ static_cast<uint64_t>(getpid());
}

std::string ip_text(uint32_t ip) {
  char text[INET_ADDRSTRLEN] = {};
  in_addr address{};
  address.s_addr = ip;
  inet_ntop(AF_INET, &address, text, sizeof(text));
  return text;
}

// The first frame of an accepted connection, if it is a hello to this
// process (nonce) from a lower rank not yet connected. The reader keeps
// whatever followed it.
std::optional<int> read_hello(int fd, FrameReader& reader, uint64_t nonce, int rank,
                              const std::vector<MeshConnection>& connections, MeshClock::time_point deadline) {
  const MeshClock::time_point until = std::min(deadline, MeshClock::now() + kHelloWait);
  while (MeshClock::now() < until) {
    std::string bytes, error;
    const bool open = read_available(fd, bytes, error);
    reader.append(bytes.data(), bytes.size());
    std::optional<MeshFrame> frame;
    try {
      frame = reader.next();
    } catch (const CollectiveError&) {
      return std::nullopt;  // not one of this job's processes
    }
    if (frame) {
      const bool ours = frame->kind == FrameKind::kHello && frame->nonce == nonce && frame->rank >= 0 &&
                        frame->rank < rank && connections[static_cast<size_t>(frame->rank)].fd < 0;
      return ours ? std::optional<int>(frame->rank) : std::nullopt;
    }
    if (!open) return std::nullopt;
    usleep(1000);
  }
  return std::nullopt;
}

// Connects to every higher rank and accepts every lower one; "" or why not.
std::string connect_pairs(const MpiWorld& world, int listener_fd, const std::vector<MeshAddress>& addresses,
                          std::vector<MeshConnection>& connections) {
  const int rank = world.rank();
  const MeshClock::time_point deadline = MeshClock::now() + kConnectWait;
  try {
    for (int q = rank + 1; q < world.size(); ++q) {
      const MeshAddress& to = addresses[static_cast<size_t>(q)];
      const int fd = connect_to(ip_text(to.ip), to.port, deadline);
      connections[static_cast<size_t>(q)].fd = fd;
      const std::string failure = send_all(fd, encode_frame(MeshFrame::hello(rank, to.nonce)), deadline);
      if (!failure.empty()) return str_cat("its hello to ", world.describe_process(q), " failed: ", failure);
    }
  } catch (const CollectiveError& e) {
    return e.what();
  }
  for (int accepted = 0; accepted < rank;) {
    const int fd = accept_until(listener_fd, deadline);
    if (fd < 0) {
      std::string missing;
      for (int q = 0; q < rank; ++q) {
        if (connections[static_cast<size_t>(q)].fd < 0) missing += str_cat(missing.empty() ? "" : ", ", q);
      }
      return str_cat("processes ", missing, " did not connect to it within ",
                     std::chrono::seconds(kConnectWait).count(), " s");
    }
    FrameReader reader("a process connecting to ordo's process mesh");
    const std::optional<int> from = read_hello(fd, reader, addresses[static_cast<size_t>(rank)].nonce, rank,
                                               connections, deadline);
    if (!from) {
      close(fd);  // a stray: not a process of this job
      continue;
    }
    MeshConnection& connection = connections[static_cast<size_t>(*from)];
    connection.fd = fd;
    connection.reader = std::move(reader);
    ++accepted;
  }
  return "";
}

}  // namespace

std::vector<MeshConnection> connect_mesh(const MpiWorld& world) {
  std::vector<MeshConnection> connections;
  for (int q = 0; q < world.size(); ++q) {
    connections.push_back({-1, world.describe_process(q), FrameReader(world.describe_process(q))});
  }
  std::string failure;
  MeshListener listener;
  std::string ip = "?";
  try {
    ip = mesh_listen_address(world.topology().host_count() == 1);
    listener = listen_on(ip);
  } catch (const Error& e) {
    failure = e.what();
  }
  MeshAddress mine{};
  in_addr address{};
  inet_pton(AF_INET, ip.c_str(), &address);
  mine.ip = address.s_addr;
  mine.port = listener.port;
  mine.nonce = draw_nonce();
  const StartPlace place{world.describe_process(world.rank()), "the join of ordo's process mesh"};
  const auto describe = [&world](int q) { return world.describe_process(q); };
  const std::vector<MeshAddress> addresses = meet_records_at_start(world.comm(), mine, place, describe);
  bool every_one_listens = true;
  for (const MeshAddress& a : addresses) every_one_listens = every_one_listens && a.port != 0;
  if (every_one_listens) failure = connect_pairs(world, listener.fd, addresses, connections);
  if (listener.fd >= 0) close(listener.fd);

  // Every process learns who failed, so that all of them throw together.
  const std::vector<int32_t> failed =
      meet_records_at_start(world.comm(), static_cast<int32_t>(failure.empty() ? 0 : 1), place, describe);
  std::string who;
  for (int q = 0; q < world.size(); ++q) {
    if (failed[static_cast<size_t>(q)]) who += str_cat(who.empty() ? "" : ", ", world.describe_process(q));
  }
  if (who.empty()) return connections;
  for (const MeshConnection& c : connections) {
    if (c.fd >= 0) close(c.fd);
  }
  throw_error<CollectiveError>("ordo's process mesh could not connect the processes of this job: ", who,
                               " failed", failure.empty() ? "" : str_cat("; this one: ", failure));
}

}  // namespace ordo::comm
