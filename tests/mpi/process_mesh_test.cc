// ordo's process mesh under mpirun (tests/mpi/mpi_tests.cmake): device news
// between processes, and what survivors learn of a process that dies. The
// death cases end with the survivors printing "ordo-mesh-test PASS ..." and
// leaving with _exit(0); tests/mpi/mesh_expect.sh counts those lines
// (mpirun itself fails the job, a process died). mpi_tests.cmake runs them
// with mpirun's SIGTERM of survivors off, which would race with the check
// on a loaded machine.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "comm/mpi/mpi_world.h"
#include "comm/mpi/process_mesh.h"

namespace ordo::comm {
namespace {

using Clock = std::chrono::steady_clock;

const MpiWorld& world() { return MpiWorld::join(1); }
ProcessMesh& mesh() { return ProcessMesh::join(world()); }

// What the mesh's handlers heard while this lives (it registers them, and
// unregisters them before it goes), waited for with a deadline.
struct Heard {
  Heard() { mesh().set_handlers(handlers()); }
  ~Heard() { mesh().set_handlers({}); }  // never with mu held: a handler may be waiting for it

  std::mutex mu;
  std::condition_variable changed;
  std::vector<DeviceNews> news;
  std::vector<std::pair<int, std::string>> deaths;
  std::vector<std::pair<int, std::string>> finishes;

  ProcessMesh::Handlers handlers() {
    const auto record = [this](std::vector<std::pair<int, std::string>>& into) {
      return [this, &into](int process, const std::string& reason) {
        std::lock_guard<std::mutex> lock(mu);
        into.emplace_back(process, reason);
        changed.notify_all();
      };
    };
    return {record(deaths), record(finishes),
            [this](const DeviceNews& n) {
              std::lock_guard<std::mutex> lock(mu);
              news.push_back(n);
              changed.notify_all();
            }};
  }
  template <typename Done>
  bool wait(Done done, std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mu);
    return changed.wait_for(lock, limit, done);
  }
};

bool is_victim() { return world().rank() == world().size() - 1; }

void barrier() { ASSERT_EQ(MPI_Barrier(world().comm()), MPI_SUCCESS); }

std::vector<DeviceNews> news_of(int process) {
  const GlobalOrdinal device(process);  // the process's first, when it has one device
  return {{DeviceNews::Kind::kFailed, device, "device " + std::to_string(process) + " raised: boom"},
          {DeviceNews::Kind::kAbsent, device, "its spawn thread returned"},
          {DeviceNews::Kind::kPresent, device, ""}};
}

TEST(ProcessMesh, EveryProcessHearsEveryOthersNewsInOrder) {
  Heard heard;
  barrier();  // every process listens before anyone speaks
  for (const DeviceNews& n : news_of(world().rank())) mesh().announce(n);
  const size_t expected = 3 * static_cast<size_t>(world().size() - 1);
  ASSERT_TRUE(heard.wait([&] { return heard.news.size() >= expected; }, std::chrono::seconds(10)))
      << "heard " << heard.news.size() << " of " << expected << " news";
  std::lock_guard<std::mutex> lock(heard.mu);
  EXPECT_EQ(heard.news.size(), expected);
  for (int sender = 0; sender < world().size(); ++sender) {
    std::vector<DeviceNews> from;
    for (const DeviceNews& n : heard.news) {
      if (n.device == GlobalOrdinal(sender)) from.push_back(n);
    }
    const std::vector<DeviceNews> sent = sender == world().rank() ? std::vector<DeviceNews>{} : news_of(sender);
    ASSERT_EQ(from.size(), sent.size()) << "from process " << sender;
    for (size_t i = 0; i < sent.size(); ++i) {
      EXPECT_EQ(from[i].kind, sent[i].kind) << sender << " #" << i;
      EXPECT_EQ(from[i].reason, sent[i].reason) << sender << " #" << i;
    }
  }
  EXPECT_TRUE(heard.deaths.empty());
}

// News sent while nobody listened reach the next device_news handler.
TEST(ProcessMesh, NewsThatCameWhileNobodyListenedReachTheNextHandler) {
  mesh().set_handlers({});
  barrier();
  if (world().rank() == 0) mesh().announce({DeviceNews::Kind::kAbsent, GlobalOrdinal(0), "early"});
  barrier();
  if (world().rank() == 0) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the mesh thread read it
  Heard heard;
  ASSERT_TRUE(heard.wait([&] { return !heard.news.empty(); }, std::chrono::seconds(10)));
  std::lock_guard<std::mutex> lock(heard.mu);
  EXPECT_EQ(heard.news[0].reason, "early");
}

// Every process ends cleanly, the victim first (std::exit: its goodbye,
// then the wait for the others' before MPI_Finalize): every other process
// hears that it finished, and no death.
TEST(ProcessMeshCleanExit, AGoodbyeIsNoDeath) {
  Heard heard;
  barrier();
  const int victim = world().size() - 1;
  if (is_victim()) std::exit(0);
  EXPECT_TRUE(heard.wait([&] { return !heard.finishes.empty(); }, std::chrono::seconds(5)));
  // The end of its stream comes within this wait.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_TRUE(mesh().dead_processes().empty());
  std::lock_guard<std::mutex> lock(heard.mu);
  EXPECT_TRUE(heard.deaths.empty()) << heard.deaths[0].second;
  // The other survivors may have finished too by now.
  bool victim_heard = false;
  for (const auto& [process, reason] : heard.finishes) {
    victim_heard = victim_heard || process == victim;
    EXPECT_EQ(reason, world().describe_process(process) + " finished its program");
  }
  EXPECT_TRUE(victim_heard);
}

// The socket inodes a process holds ("socket:[inode]" in /proc/<pid>/fd).
std::set<std::string> socket_inodes(int pid) {
  std::set<std::string> inodes;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* fds = opendir(dir.c_str());
  if (fds == nullptr) return inodes;
  while (dirent* entry = readdir(fds)) {
    char target[64] = {};
    const std::string link = dir + "/" + entry->d_name;
    if (readlink(link.c_str(), target, sizeof(target) - 1) > 0 && std::string(target).rfind("socket:[", 0) == 0) {
      inodes.insert(std::string(target).substr(8, std::string(target).size() - 9));
    }
  }
  closedir(fds);
  return inodes;
}

// The local ports of the IPv4 TCP sockets of the other processes of the job.
std::set<int> peers_tcp_ports() {
  std::set<std::string> inodes;
  for (int q = 0; q < world().size(); ++q) {
    if (q != world().rank()) inodes.merge(socket_inodes(world().pid(q)));
  }
  std::set<int> ports;
  std::ifstream table("/proc/net/tcp");
  std::string line;
  std::getline(table, line);  // the header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
    if (inodes.count(inode)) ports.insert(std::stoi(local.substr(local.find(':') + 1), nullptr, 16));
  }
  return ports;
}

// Resets this process's mesh streams, as a failed link would: a stream is
// a TCP socket whose other end another process of the job holds (MPI's
// own traffic on one host goes by shared memory, Open MPI's to its daemon).
void reset_mesh_streams() {
  const std::set<int> peer_ports = peers_tcp_ports();
  for (int fd = 3; fd < 1024; ++fd) {
    sockaddr_in peer{};
    socklen_t size = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &size) != 0 || peer.sin_family != AF_INET) continue;
    if (!peer_ports.count(ntohs(peer.sin_port))) continue;
    const linger reset{1, 0};  // close sends a reset, not an end
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    close(fd);
  }
}

// What each case does to the victim, after the mesh is up.
void end_victim(const std::string& how) {
  if (how == "sigkill") raise(SIGKILL);
  if (how == "reset") {
    reset_mesh_streams();
    std::this_thread::sleep_for(std::chrono::seconds(60));  // mpirun ends it once a survivor leaves
  }
  if (how == "uncaught") {
    // Out of gtest's reach: std::terminate, whose hook says the last words.
    std::thread([] { throw std::runtime_error("boom"); }).join();
  }
  mesh().say_last_words("raised RuntimeError: boom");
  _exit(1);
}

std::string expected_words(const std::string& how) {
  if (how == "sigkill") return " died: its connection closed without a goodbye";
  if (how == "reset") {
    return " is lost: its connection failed (Connection reset by peer): it died, or its host or the network to it "
           "failed";
  }
  if (how == "uncaught") return " raised std::runtime_error: boom";
  return " raised RuntimeError: boom";
}

// ORDO_TEST_MESH_DEATH=sigkill|last_words|uncaught|reset: the last process ends that way
// (reset: its streams are reset, as by a failed link, and it sleeps);
// every other one must hear it within 5 s, with its reason, then leaves,
// or (ORDO_TEST_MESH_AFTER=sigterm) gets the SIGTERM mpirun would send.
TEST(ProcessMeshDeath, EverySurvivorHearsWhoDiedAndWhy) {
  const char* how = std::getenv("ORDO_TEST_MESH_DEATH");
  if (how == nullptr) GTEST_SKIP() << "run by mpi_tests.cmake";
  Heard heard;
  barrier();
  if (is_victim()) end_victim(how);
  const int victim = world().size() - 1;
  const auto start = Clock::now();
  // Other survivors may leave (and be heard of) before the victim's death
  // is: the streams of different peers are read in no particular order.
  std::string reason;
  auto victim_heard = [&] {
    for (const auto& [process, why] : heard.deaths) {
      if (process == victim) reason = why;
    }
    return !reason.empty();
  };
  ASSERT_TRUE(heard.wait(victim_heard, std::chrono::seconds(5))) << "no death of process " << victim << " within 5 s";
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const std::string expected = world().describe_process(victim) + expected_words(how);
  EXPECT_EQ(reason, expected);
  EXPECT_EQ(mesh().dead_processes().at(victim), expected);
  // A handler set later hears it at once.
  Heard later;
  {
    std::lock_guard<std::mutex> lock(later.mu);  // other survivors' ends may come meanwhile
    EXPECT_NE(std::find(later.deaths.begin(), later.deaths.end(), std::make_pair(victim, expected)),
              later.deaths.end());
  }
  if (::testing::Test::HasFailure()) return;
  std::printf("ordo-mesh-test PASS: process %d heard in %.2f s: %s\n", world().rank(), seconds, reason.c_str());
  std::fflush(stdout);
  const char* after = std::getenv("ORDO_TEST_MESH_AFTER");
  if (after != nullptr && std::string(after) == "sigterm") {
    raise(SIGTERM);  // what mpirun sends ~1 s after a death
    std::printf("ordo-mesh-test FAIL: process %d was not stopped by SIGTERM\n", world().rank());
    std::fflush(stdout);
  }
  // mpirun stops every process once one exits without MPI_Finalize: the
  // other survivors get time to hear the death and say so first (each hears
  // within 5 s of the barrier, or fails above).
  std::this_thread::sleep_for(std::chrono::seconds(2));
  _exit(0);  // without MPI_Finalize: a peer is dead
}

// With no failure seen, a SIGTERM says so.
TEST(ProcessMeshSigterm, WithNoFailureSeenItSaysSo) {
  if (std::getenv("ORDO_TEST_MESH_SIGTERM") == nullptr) GTEST_SKIP() << "run by mpi_tests.cmake";
  mesh();
  barrier();
  if (world().rank() == 0) raise(SIGTERM);
  Heard heard;
  ASSERT_TRUE(heard.wait([&] { return !heard.deaths.empty(); }, std::chrono::seconds(5)));
  std::printf("ordo-mesh-test PASS: process %d heard process 0 end\n", world().rank());
  std::fflush(stdout);
  _exit(0);
}

// A peer's device failure is a failure seen: the SIGTERM line names it,
// where it said "ordo saw no failure" right after the process had named it.
TEST(ProcessMeshSigterm, AfterAPeersDeviceFailedItNamesIt) {
  if (std::getenv("ORDO_TEST_MESH_SIGTERM") == nullptr) GTEST_SKIP() << "run by mpi_tests.cmake";
  Heard heard;
  barrier();
  if (world().rank() == 1) {
    mesh().announce({DeviceNews::Kind::kFailed, GlobalOrdinal(1), "device 1 raised RuntimeError: boom"});
    ASSERT_TRUE(heard.wait([&] { return !heard.deaths.empty(); }, std::chrono::seconds(10)));
    std::printf("ordo-mesh-test PASS: process 1 heard process 0 end\n");
    std::fflush(stdout);
    _exit(0);
  }
  ASSERT_TRUE(heard.wait([&] { return !heard.news.empty(); }, std::chrono::seconds(10)));
  raise(SIGTERM);
}

}  // namespace
}  // namespace ordo::comm

// A run whose filter matched nothing, or whose tests all skipped, is a
// failure: mpi_tests.cmake picks the tests of each run by filter.
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS();
  if (failed == 0 && ::testing::UnitTest::GetInstance()->successful_test_count() == 0) {
    std::fprintf(stderr, "process_mesh_test: no test ran to success (filter or environment wrong)\n");
    return 1;
  }
  return failed;
}
