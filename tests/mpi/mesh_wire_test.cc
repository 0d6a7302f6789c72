// ordo's process mesh without MPI: its frames, where it listens, and its
// sockets over loopback.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "comm/mpi/mesh_frames.h"
#include "comm/mpi/mesh_socket.h"
#include "core/config.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

std::vector<MeshFrame> read_all(const std::string& stream, size_t piece) {
  FrameReader reader("process 1 (host vm, pid 42)");
  std::vector<MeshFrame> frames;
  for (size_t at = 0; at < stream.size(); at += piece) {
    reader.append(stream.data() + at, std::min(piece, stream.size() - at));
    while (std::optional<MeshFrame> frame = reader.next()) frames.push_back(*frame);
  }
  EXPECT_EQ(reader.pending_bytes(), 0u);
  return frames;
}

TEST(MeshFrames, ReadBackInOrderHoweverTheStreamIsCut) {
  using Kind = DeviceNews::Kind;
  const std::string stream = encode_frame(MeshFrame::hello(3, 0x0123456789abcdefULL)) +
                             encode_frame(MeshFrame::device_news({Kind::kFailed, GlobalOrdinal(7), "raised: boom", 9})) +
                             encode_frame(MeshFrame::device_news({Kind::kAbsent, GlobalOrdinal(0), "returned"})) +
                             encode_frame(MeshFrame::device_news({Kind::kPresent, GlobalOrdinal(1 << 20), ""})) +
                             encode_frame(MeshFrame::last_words("raised RuntimeError: boom")) +
                             encode_frame(MeshFrame::goodbye());
  for (size_t piece : {size_t{1}, size_t{3}, size_t{7}, stream.size()}) {
    const std::vector<MeshFrame> frames = read_all(stream, piece);
    ASSERT_EQ(frames.size(), 6u) << piece;
    EXPECT_EQ(frames[0].kind, FrameKind::kHello);
    EXPECT_EQ(frames[0].rank, 3);
    EXPECT_EQ(frames[0].nonce, 0x0123456789abcdefULL);
    EXPECT_EQ(frames[1].kind, FrameKind::kDeviceNews);
    EXPECT_EQ(frames[1].news.kind, DeviceNews::Kind::kFailed);
    EXPECT_EQ(frames[1].news.device, GlobalOrdinal(7));
    EXPECT_EQ(frames[1].news.reason, "raised: boom");
    EXPECT_EQ(frames[1].news.runtime, 9u);
    EXPECT_EQ(frames[2].news.kind, DeviceNews::Kind::kAbsent);
    EXPECT_EQ(frames[2].news.device, GlobalOrdinal(0));
    EXPECT_EQ(frames[3].news.kind, DeviceNews::Kind::kPresent);
    EXPECT_EQ(frames[3].news.device, GlobalOrdinal(1 << 20));
    EXPECT_EQ(frames[3].news.reason, "");
    EXPECT_EQ(frames[4].kind, FrameKind::kLastWords);
    EXPECT_EQ(frames[4].words, "raised RuntimeError: boom");
    EXPECT_EQ(frames[5].kind, FrameKind::kGoodbye);
  }
}

TEST(MeshFrames, AReasonOverTheLimitIsCutNotRefused) {
  const std::string reason(kMaxFrameBody + 10, 'r');
  const std::vector<MeshFrame> frames =
      read_all(encode_frame(MeshFrame::device_news({DeviceNews::Kind::kFailed, GlobalOrdinal(2), reason})), 4096);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].news.device, GlobalOrdinal(2));
  EXPECT_EQ(frames[0].news.reason, reason.substr(0, kMaxFrameBody - 13));
}

// A frame with the given kind byte and body, as a peer might send it.
std::string raw_frame(uint8_t kind, const std::string& body) {
  const uint32_t size = static_cast<uint32_t>(body.size());
  return std::string(reinterpret_cast<const char*>(&size), 4) + std::string(1, static_cast<char>(kind)) + body;
}

void expect_malformed(const std::string& stream, const std::string& why) {
  FrameReader reader("process 2 (host vm, pid 7)");
  reader.append(stream.data(), stream.size());
  try {
    while (reader.next()) {
    }
    ADD_FAILURE() << "read a stream that is not the mesh's (" << why << ")";
  } catch (const CollectiveError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("a message from process 2 (host vm, pid 7) on ordo's process mesh is malformed (" + why),
              std::string::npos)
        << text;
  }
}

TEST(MeshFrames, AStreamThatIsNotTheMeshsIsAnErrorNamingItsSender) {
  const std::string hello = encode_frame(MeshFrame::hello(1, 2));
  expect_malformed("GET / HTTP/1.1\r\n\r\n", "a frame of ");
  expect_malformed(std::string("\xff\xff\xff\xff\x01", 5), "a frame of 4294967295 bytes, over the limit");
  expect_malformed(raw_frame(9, ""), "a frame of unknown kind 9");
  expect_malformed(raw_frame(1, "short"), "a hello of 5 bytes instead of 20");
  std::string not_ours = hello;
  not_ours[5] = 'x';
  expect_malformed(not_ours, "a hello that is not ordo's");
  std::string other_version = hello;
  other_version[9] = 7;
  expect_malformed(other_version, "a hello of version 7 where 1 is spoken");
  expect_malformed(raw_frame(2, "x"), "a goodbye with 1 bytes in it");
  expect_malformed(raw_frame(4, "ab"), "device news of 2 bytes, shorter than 13");
  expect_malformed(raw_frame(4, std::string("\x05\0\0\0\0\0\0\0\0\0\0\0\0", 13)), "device news of unknown kind 5");
  expect_malformed(raw_frame(4, std::string("\x00\xff\xff\xff\xff\0\0\0\0\0\0\0\0", 13)), "device news about device -1");
  // Good frames before a bad one are read; the bad one still fails.
  expect_malformed(hello + raw_frame(9, ""), "a frame of unknown kind 9");
}

TEST(MeshFrames, AnIncompleteFrameWaitsForTheRest) {
  const std::string frame = encode_frame(MeshFrame::last_words("raised X: y"));
  FrameReader reader("process 1");
  reader.append(frame.data(), frame.size() - 1);
  EXPECT_FALSE(reader.next().has_value());
  EXPECT_EQ(reader.pending_bytes(), frame.size() - 1);
  reader.append(frame.data() + frame.size() - 1, 1);
  const std::optional<MeshFrame> read = reader.next();
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->words, "raised X: y");
}

TEST(MeshAddress, TheIpv4OfAnOpenMpiUri) {
  EXPECT_EQ(ipv4_of_uri("1777467392.0;tcp://192.0.2.2:47725;tcp6://[fd00::2]:47027"), "192.0.2.2");
  EXPECT_EQ(ipv4_of_uri("1777467392.0;tcp4://127.0.0.1:60465"), "127.0.0.1");
  EXPECT_EQ(ipv4_of_uri("807927808.0;tcp://10.213.77.1,10.0.0.1:55031"), std::nullopt);
  EXPECT_EQ(ipv4_of_uri("1.0;tcp6://[fd00::2]:47027"), std::nullopt);
  EXPECT_EQ(ipv4_of_uri(""), std::nullopt);
  EXPECT_EQ(ipv4_of_uri("tcp://no-port"), std::nullopt);
}

TEST(MeshAddress, CidrMembership) {
  EXPECT_TRUE(ipv4_in_cidr("10.213.77.2", "10.213.77.0/24"));
  EXPECT_FALSE(ipv4_in_cidr("10.213.78.2", "10.213.77.0/24"));
  EXPECT_TRUE(ipv4_in_cidr("192.0.2.2", "0.0.0.0/0"));
  EXPECT_TRUE(ipv4_in_cidr("192.0.2.2", "192.0.2.2/32"));
  EXPECT_FALSE(ipv4_in_cidr("192.0.2.3", "192.0.2.2/32"));
  for (const char* bad : {"10.213.77.0", "10.213.77.0/33", "10.213.77.0/", "eth0", "10.213.77.0/2x", "x/24"}) {
    EXPECT_FALSE(ipv4_in_cidr("10.213.77.2", bad)) << bad;
  }
  EXPECT_FALSE(ipv4_in_cidr("not an ip", "10.0.0.0/8"));
}

TEST(MeshAddress, OrdoMeshAddressWinsAndMustBeAnAddress) {
  setenv("ORDO_MESH_ADDRESS", "10.1.2.3", 1);
  load_config();
  EXPECT_EQ(mesh_listen_address(false), "10.1.2.3");
  setenv("ORDO_MESH_ADDRESS", "hosta", 1);
  EXPECT_THROW(load_config(), InvalidArgument);  // when a runtime starts
  unsetenv("ORDO_MESH_ADDRESS");
  load_config();
  unsetenv("OMPI_MCA_orte_local_daemon_uri");
  unsetenv("OMPI_MCA_oob_tcp_if_include");
  EXPECT_EQ(mesh_listen_address(true), "127.0.0.1");
  setenv("OMPI_MCA_oob_tcp_if_include", "127.0.0.0/8", 1);  // loopback is never chosen from interfaces
  EXPECT_EQ(mesh_listen_address(true), "127.0.0.1");
  unsetenv("OMPI_MCA_oob_tcp_if_include");
}

int socket_option(int fd, int level, int name) {
  int value = -1;
  socklen_t size = sizeof(value);
  getsockopt(fd, level, name, &value, &size);
  return value;
}

TEST(MeshSocket, ConnectsSendsAndSeesTheEnd) {
  const MeshListener listener = listen_on("127.0.0.1");
  ASSERT_GT(listener.port, 0);
  const auto deadline = MeshClock::now() + std::chrono::seconds(5);
  const int client = connect_to("127.0.0.1", listener.port, deadline);
  const int server = accept_until(listener.fd, deadline);
  ASSERT_GE(server, 0);
  const std::string frame = encode_frame(MeshFrame::last_words("raised X: y"));
  EXPECT_EQ(send_all(client, frame, deadline), "");
  std::string got, error;
  while (got.size() < frame.size() && MeshClock::now() < deadline) {
    ASSERT_TRUE(read_available(server, got, error)) << error;
  }
  EXPECT_EQ(got, frame);
  // A silent host is found by keepalive: ~5 s idle, then 5 probes 1 s apart.
  for (int fd : {client, server}) {
    EXPECT_EQ(socket_option(fd, SOL_SOCKET, SO_KEEPALIVE), 1);
    EXPECT_EQ(socket_option(fd, IPPROTO_TCP, TCP_KEEPIDLE), 5);
    EXPECT_EQ(socket_option(fd, IPPROTO_TCP, TCP_KEEPINTVL), 1);
    EXPECT_EQ(socket_option(fd, IPPROTO_TCP, TCP_KEEPCNT), 5);
    EXPECT_EQ(socket_option(fd, IPPROTO_TCP, TCP_USER_TIMEOUT), 10000);
  }
  shutdown(client, SHUT_WR);
  bool open = true;
  while (open && MeshClock::now() < deadline) open = read_available(server, got, error);
  EXPECT_FALSE(open);
  EXPECT_EQ(error, "");  // an orderly end
  for (int fd : {client, server, listener.fd}) close(fd);
}

TEST(MeshSocket, WaitsBoundedlyOnAPeerThatTakesNothing) {
  const MeshListener listener = listen_on("127.0.0.1");
  const int client = connect_to("127.0.0.1", listener.port, MeshClock::now() + std::chrono::seconds(5));
  const int server = accept_until(listener.fd, MeshClock::now() + std::chrono::seconds(5));
  ASSERT_GE(server, 0);
  const std::string big(64 << 20, 'x');  // more than the kernel's buffers hold
  const auto start = MeshClock::now();
  EXPECT_EQ(send_all(client, big, start + std::chrono::milliseconds(300)),
            "it took nothing more within the wait allowed");
  EXPECT_LT(MeshClock::now() - start, std::chrono::seconds(3));
  close(server);
  EXPECT_NE(send_all(client, big, MeshClock::now() + std::chrono::seconds(3)), "");  // reset, not a hang
  for (int fd : {client, listener.fd}) close(fd);
}

TEST(MeshSocket, NoConnectionBeforeTheDeadlineAndARefusal) {
  const MeshListener listener = listen_on("127.0.0.1");
  EXPECT_EQ(accept_until(listener.fd, MeshClock::now() + std::chrono::milliseconds(100)), -1);
  const uint16_t port = listener.port;
  close(listener.fd);
  EXPECT_THROW(connect_to("127.0.0.1", port, MeshClock::now() + std::chrono::seconds(2)), CollectiveError);
  EXPECT_THROW(listen_on("192.0.2.250"), CollectiveError);  // not this host's
}

}  // namespace
}  // namespace ordo::comm
