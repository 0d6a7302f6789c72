#include "comm/mpi/mesh_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/config.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

std::optional<in_addr> parse_ipv4(const std::string& ip) {
  in_addr address{};
  if (inet_pton(AF_INET, ip.c_str(), &address) != 1) return std::nullopt;
  return address;
}

std::string format_ipv4(in_addr address) {
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &address, text, sizeof(text));
  return text;
}

sockaddr_in socket_address(const std::string& ip, uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr = parse_ipv4(ip).value_or(in_addr{});
  return address;
}

// This host's IPv4 addresses other than loopback, in getifaddrs's order.
std::vector<std::string> host_addresses() {
  std::vector<std::string> addresses;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return addresses;
  for (const ifaddrs* at = list; at != nullptr; at = at->ifa_next) {
    if (at->ifa_addr == nullptr || at->ifa_addr->sa_family != AF_INET) continue;
    const in_addr address = reinterpret_cast<const sockaddr_in*>(at->ifa_addr)->sin_addr;
    if ((ntohl(address.s_addr) >> 24) == 127) continue;
    addresses.push_back(format_ipv4(address));
  }
  freeifaddrs(list);
  return addresses;
}

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

// The local address the kernel would send from to reach ip: a UDP
// "connect" sends nothing.
std::optional<std::string> route_source_to(const std::string& ip) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  const sockaddr_in target = socket_address(ip, 9);
  sockaddr_in source{};
  socklen_t length = sizeof(source);
  const bool found = connect(fd, reinterpret_cast<const sockaddr*>(&target), sizeof(target)) == 0 &&
                     getsockname(fd, reinterpret_cast<sockaddr*>(&source), &length) == 0;
  close(fd);
  if (!found) return std::nullopt;
  return format_ipv4(source.sin_addr);
}

bool wait_for(int fd, short events, MeshClock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - MeshClock::now()).count();
    if (left <= 0) return false;
    pollfd entry{fd, events, 0};
    const int ready = poll(&entry, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return false;
  }
}

void set_option(int fd, int level, int name, int value) { setsockopt(fd, level, name, &value, sizeof(value)); }

}  // namespace

std::optional<std::string> ipv4_of_uri(std::string_view uri) {
  for (const std::string_view scheme : {"tcp://", "tcp4://"}) {
    const size_t at = uri.find(scheme);
    if (at == std::string_view::npos) continue;
    const size_t start = at + scheme.size();
    const size_t end = uri.find(':', start);
    if (end == std::string_view::npos) continue;
    const std::string ip(uri.substr(start, end - start));
    if (parse_ipv4(ip)) return ip;
  }
  return std::nullopt;
}

bool ipv4_in_cidr(const std::string& ip, std::string_view cidr) {
  const size_t slash = cidr.find('/');
  if (slash == std::string_view::npos) return false;
  const std::optional<in_addr> address = parse_ipv4(ip);
  const std::optional<in_addr> network = parse_ipv4(std::string(cidr.substr(0, slash)));
  const std::string bits_text(cidr.substr(slash + 1));
  char* end = nullptr;
  const long bits = std::strtol(bits_text.c_str(), &end, 10);
  if (!address || !network || bits_text.empty() || *end != '\0' || bits < 0 || bits > 32) return false;
  const uint32_t mask = bits == 0 ? 0 : ~uint32_t{0} << (32 - bits);
  return (ntohl(address->s_addr) & mask) == (ntohl(network->s_addr) & mask);
}

std::string mesh_listen_address(bool single_host) {
  const std::string& chosen = config().mesh_address;
  if (!chosen.empty()) {
    ORDO_ARG_CHECK(parse_ipv4(chosen).has_value(), "ORDO_MESH_ADDRESS='", chosen,
                   "' is not an IPv4 address such as 10.0.0.2");
    return chosen;
  }
  const std::vector<std::string> mine = host_addresses();
  auto is_mine = [&](const std::string& ip) { return std::find(mine.begin(), mine.end(), ip) != mine.end(); };
  if (const auto daemon = ipv4_of_uri(env("OMPI_MCA_orte_local_daemon_uri")); daemon && is_mine(*daemon)) {
    return *daemon;
  }
  const std::string subnets = env("OMPI_MCA_oob_tcp_if_include");
  for (size_t start = 0; start < subnets.size();) {
    const size_t end = std::min(subnets.find(',', start), subnets.size());
    const std::string_view cidr = std::string_view(subnets).substr(start, end - start);
    for (const std::string& ip : mine) {
      if (ipv4_in_cidr(ip, cidr)) return ip;
    }
    start = end + 1;
  }
  if (single_host) return "127.0.0.1";
  if (const auto hnp = ipv4_of_uri(env("OMPI_MCA_orte_hnp_uri"))) {
    if (const auto source = route_source_to(*hnp); source && *source != "127.0.0.1") return *source;
  }
  return mine.empty() ? "127.0.0.1" : mine.front();
}

void set_mesh_options(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  set_option(fd, IPPROTO_TCP, TCP_NODELAY, 1);
  set_option(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
  set_option(fd, IPPROTO_TCP, TCP_KEEPIDLE, 5);
  set_option(fd, IPPROTO_TCP, TCP_KEEPINTVL, 1);
  set_option(fd, IPPROTO_TCP, TCP_KEEPCNT, 5);
  set_option(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, 10000);
}

MeshListener listen_on(const std::string& ip) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) throw_error<CollectiveError>("ordo's process mesh cannot make a socket: ", std::strerror(errno));
  const sockaddr_in address = socket_address(ip, 0);
  sockaddr_in bound{};
  socklen_t length = sizeof(bound);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 || listen(fd, 128) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
    const int error = errno;
    close(fd);
    throw_error<CollectiveError>("ordo's process mesh cannot listen on ", ip, ": ", std::strerror(error),
                                 " (set ORDO_MESH_ADDRESS to an address of this host that the others reach)");
  }
  return {fd, ntohs(bound.sin_port)};
}

int connect_to(const std::string& ip, uint16_t port, MeshClock::time_point deadline) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) throw_error<CollectiveError>("ordo's process mesh cannot make a socket: ", std::strerror(errno));
  const sockaddr_in address = socket_address(ip, port);
  int error = 0;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    error = errno;
    if (error == EINPROGRESS) {
      error = ETIMEDOUT;
      if (wait_for(fd, POLLOUT, deadline)) {
        socklen_t length = sizeof(error);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      }
    }
  }
  if (error != 0) {
    close(fd);
    throw_error<CollectiveError>("ordo's process mesh cannot connect to ", ip, ":", port, ": ",
                                 std::strerror(error));
  }
  set_mesh_options(fd);
  return fd;
}

int accept_until(int listener_fd, MeshClock::time_point deadline) {
  while (wait_for(listener_fd, POLLIN, deadline)) {
    const int fd = accept4(listener_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      set_mesh_options(fd);
      return fd;
    }
  }
  return -1;
}

std::string send_all(int fd, std::string_view bytes, MeshClock::time_point deadline) {
  while (!bytes.empty()) {
    const ssize_t sent = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent > 0) {
      bytes.remove_prefix(static_cast<size_t>(sent));
    } else if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_for(fd, POLLOUT, deadline)) return "it took nothing more within the wait allowed";
    } else if (sent < 0 && errno != EINTR) {
      return std::strerror(errno);
    }
  }
  return "";
}

bool read_available(int fd, std::string& out, std::string& error) {
  char chunk[4096];
  // Bounded, so that one flooding peer cannot starve the others: the
  // caller polls level-triggered and comes back.
  for (int round = 0; round < 64; ++round) {
    const ssize_t got = recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
    if (got > 0) {
      out.append(chunk, static_cast<size_t>(got));
    } else if (got == 0) {
      return false;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return true;
    } else if (errno != EINTR) {
      error = std::strerror(errno);
      return false;
    }
  }
  return true;
}

}  // namespace ordo::comm
