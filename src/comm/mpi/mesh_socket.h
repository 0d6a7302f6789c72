// The TCP sockets of ordo's process mesh (process_mesh.h): where a process
// listens, connecting and accepting with deadlines, and sending with a
// bounded wait. IPv4 only.
//
//   const std::string ip = mesh_listen_address(/*single_host=*/false);
//   MeshListener listener = listen_on(ip);            // port 0: the kernel picks
//   int fd = connect_to(peer_ip, peer_port, deadline); // TCP keepalive on, non-blocking
//   send_all(fd, bytes, deadline);                    // "" or why it could not
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ordo::comm {

using MeshClock = std::chrono::steady_clock;

// The address a process of this job listens on, so that every other
// process reaches it, also on another host (a network namespace behind a
// veth pair, where loopback reaches nothing of the other host), in order:
// - $ORDO_MESH_ADDRESS;
// - the address of this host that Open MPI's daemon listens on
//   ($OMPI_MCA_orte_local_daemon_uri), if it is one of this host's;
// - this host's address in $OMPI_MCA_oob_tcp_if_include's subnets;
// - 127.0.0.1 when every process is on this host;
// - this host's address that routes to mpirun ($OMPI_MCA_orte_hnp_uri);
// - this host's first IPv4 address other than loopback.
// Throws InvalidArgument for an ORDO_MESH_ADDRESS that is no IPv4 address.
std::string mesh_listen_address(bool single_host);

// Parts of the above, for tests.
// The first IPv4 address of an Open MPI URI such as
// "1777467392.0;tcp://192.0.2.2:47725;tcp6://[fd00::2]:47027".
std::optional<std::string> ipv4_of_uri(std::string_view uri);
// Whether ip lies in cidr ("10.213.77.0/24"); a malformed cidr holds none.
bool ipv4_in_cidr(const std::string& ip, std::string_view cidr);

struct MeshListener {
  int fd = -1;
  uint16_t port = 0;
};
// Throws CollectiveError naming the address when it cannot listen.
MeshListener listen_on(const std::string& ip);

// A connected stream to ip:port, non-blocking, with TCP keepalive that
// finds a silent peer within ~10 s. Throws CollectiveError after the
// deadline or when the peer refuses.
int connect_to(const std::string& ip, uint16_t port, MeshClock::time_point deadline);
// The next connection on listener, set up like connect_to's; -1 once the
// deadline passed.
int accept_until(int listener_fd, MeshClock::time_point deadline);

// Makes a connected socket the mesh's: non-blocking, no Nagle delay,
// keepalive (5 s idle, then 5 probes 1 s apart) and a 10 s limit on
// unacknowledged data.
void set_mesh_options(int fd);

// Sends all of bytes, waiting at most until the deadline when the peer's
// window is full. "" when sent; otherwise why not (part may have gone:
// the stream is then unusable). Never raises SIGPIPE.
std::string send_all(int fd, std::string_view bytes, MeshClock::time_point deadline);

// Appends to out what fd has now. False at the end of the stream, with
// error saying why when it failed ("" for an orderly end).
bool read_available(int fd, std::string& out, std::string& error);

}  // namespace ordo::comm
