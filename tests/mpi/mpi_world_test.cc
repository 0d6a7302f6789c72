// The MPI process layer under mpirun (tests/mpi/mpi_tests.cmake starts it
// through scripts/mpirun.sh at several processes x devices): what every
// process sees of the job, checked against what mpirun told it in its
// environment and the plain rule global ordinal = rank x L + index.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "comm/mpi/host_rings.h"
#include "comm/mpi/mpi_transport.h"
#include "comm/mpi/mpi_link.h"
#include "comm/mpi/mpi_world.h"
#include "comm/mpi/posted_inbox.h"
#include "ordo/error.h"
#include "runtime/runtime.h"

namespace ordo::comm {
namespace {

int env_int(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr) ADD_FAILURE() << name << " is not set: not started by mpirun";
  return text == nullptr ? -1 : std::atoi(text);
}

std::string this_host_name() {
  char name[64] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

// The processes of these runs fill the hosts evenly in rank order
// (mpirun's mapping by slot): all on this host, or half on each of
// scripts/two-hosts.sh's two.
TEST(MpiWorld, EveryProcessSeesTheJobAsMpirunStartedIt) {
  const int devices = runtime::num_devices_from_env();
  const MpiWorld& world = MpiWorld::join(devices);
  const int processes = env_int("OMPI_COMM_WORLD_SIZE");
  const int rank = env_int("OMPI_COMM_WORLD_RANK");
  const int local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK");
  const int per_host = env_int("OMPI_COMM_WORLD_LOCAL_SIZE");
  ASSERT_EQ(processes % per_host, 0) << "the hosts should have as many processes each";
  const int hosts = processes / per_host;
  const Topology& t = world.topology();

  EXPECT_EQ(world.size(), processes);
  EXPECT_EQ(world.rank(), rank);
  EXPECT_EQ(t.world_size(), processes * devices);
  EXPECT_EQ(t.local_devices(), devices);
  EXPECT_EQ(t.host_count(), hosts);
  EXPECT_EQ(t.host(), rank / per_host);
  EXPECT_EQ(t.host_devices(), per_host * devices);
  for (int index = 0; index < devices; ++index) {
    const int ordinal = rank * devices + index;
    EXPECT_EQ(t.global_ordinal(LocalDevice(index)), GlobalOrdinal(ordinal));
    EXPECT_EQ(t.local_device(GlobalOrdinal(ordinal)), LocalDevice(index));
    EXPECT_EQ(t.host_ordinal(GlobalOrdinal(ordinal)), local_rank * devices + index);
  }
  for (int ordinal = 0; ordinal < t.world_size(); ++ordinal) {
    const DevicePlace& place = t.place(GlobalOrdinal(ordinal));
    EXPECT_EQ(place.ordinal, GlobalOrdinal(ordinal));
    EXPECT_EQ(place.process, ordinal / devices);
    EXPECT_EQ(place.local, LocalDevice(ordinal % devices));
    EXPECT_EQ(place.host, place.process / per_host);
    EXPECT_EQ(t.host_ordinal(GlobalOrdinal(ordinal)), ordinal % (per_host * devices));
    EXPECT_EQ(t.is_local(GlobalOrdinal(ordinal)), ordinal / devices == rank) << ordinal;
  }
  std::ostringstream expected;
  if (processes == 1) {
    expected << devices << " devices in one process";
  } else {
    expected << processes * devices << " devices: " << processes << " processes x " << devices
             << " devices on " << hosts << (hosts == 1 ? " host" : " hosts");
  }
  EXPECT_EQ(t.describe(), expected.str());
  for (int p = 0; p < processes; ++p) {
    EXPECT_EQ(world.host_name(p) == this_host_name(), p / per_host == rank / per_host) << p;
  }
  EXPECT_EQ(world.pid(rank), getpid());
  EXPECT_EQ(world.describe_process(rank),
            "process " + std::to_string(rank) + " (host " + this_host_name() + ", pid " + std::to_string(getpid()) +
                ")");

  int comm_size = 0;
  ASSERT_EQ(MPI_Comm_size(world.comm(), &comm_size), MPI_SUCCESS);
  EXPECT_EQ(comm_size, processes);
  EXPECT_NE(world.comm(), MPI_COMM_WORLD);  // ordo's messages stay apart
}

TEST(MpiWorld, JoinsOnceAndKeepsItsDeviceCount) {
  const int devices = runtime::num_devices_from_env();
  const MpiWorld& world = MpiWorld::join(devices);
  EXPECT_EQ(&MpiWorld::join(devices), &world);
  try {
    MpiWorld::join(devices + 1);
    ADD_FAILURE() << "joined again with another device count";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("cannot drive " + std::to_string(devices + 1)), std::string::npos)
        << e.what();
  }
}

// Messages below, at and above the posted buffer's size and a ring's
// longest, mixed, and more than a ring holds before anyone reads, reach
// every other process whole and in the order they were sent: by MPI, or
// through this host's rings where they reach (with_rings).
void expect_posted_inboxes_keep_order(bool with_rings) {
  const MpiWorld& world = MpiWorld::join(runtime::num_devices_from_env());
  MPI_Comm comm = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_dup(world.comm(), &comm), MPI_SUCCESS);
  const PostedTags tags{100, 101};
  const size_t posted = PostedInbox::kPostedBytes;
  std::vector<size_t> sizes = {1, posted, posted + 1, 5, 3 * posted, 200000, posted - 1, 64};
  for (int i = 0; i < 24; ++i) sizes.push_back(40000 + 8 * i);  // 0.9 MiB: more than a ring holds
  auto message = [](int from, size_t index, size_t bytes) {
    std::string text(bytes, '\0');
    for (size_t i = 0; i < bytes; ++i) text[i] = static_cast<char>(from * 31 + index * 7 + i % 251);
    return text;
  };
  {
    std::unique_ptr<HostRings> rings = with_rings ? HostRings::open(comm, world.topology()) : nullptr;
    if (with_rings && world.size() > 1) {
      EXPECT_NE(rings, nullptr) << "every process of this job is on one host: the rings should be there";
    }
    MpiLink link(comm);
    std::vector<std::unique_ptr<PostedInbox>> inboxes;
    for (int p = 0; p < world.size(); ++p) {
      inboxes.push_back(p == world.rank() ? nullptr : std::make_unique<PostedInbox>(link, rings.get(), p, tags));
    }
    for (int p = 0; p < world.size(); ++p) {
      if (p == world.rank()) continue;
      for (size_t i = 0; i < sizes.size(); ++i) {
        PostedInbox::send(link, rings.get(), message(world.rank(), i, sizes[i]), p, tags);
      }
    }
    for (int p = 0; p < world.size(); ++p) {
      if (p == world.rank()) continue;
      for (size_t i = 0; i < sizes.size(); ++i) {
        std::optional<std::string_view> got;
        Backoff backoff;
        while (!(got = inboxes[p]->try_take())) backoff.pause();
        ASSERT_EQ(got->size(), sizes[i]) << "message " << i << " from process " << p;
        EXPECT_TRUE(*got == message(p, i, sizes[i])) << "message " << i << " from process " << p;
      }
      EXPECT_FALSE(inboxes[p]->try_take().has_value());
    }
    // A process done reading may still hold records for a slower reader:
    // they move as long as it flushes (the communicator's answering thread
    // does), until every process has read everything.
    MPI_Request done = MPI_REQUEST_NULL;
    MPI_Ibarrier(comm, &done);
    for (int flag = 0; !flag; MPI_Test(&done, &flag, MPI_STATUS_IGNORE)) {
      if (rings) rings->flush();
    }
    link.flush_owned(std::chrono::milliseconds(5000));
    MPI_Barrier(comm);  // every message is taken before the inboxes cancel their receives
  }
  MPI_Comm_free(&comm);
}

TEST(MpiWorld, PostedInboxKeepsOrderAcrossSizes) { expect_posted_inboxes_keep_order(/*with_rings=*/false); }

TEST(MpiWorld, PostedInboxKeepsOrderAcrossSizesThroughHostRings) {
  expect_posted_inboxes_keep_order(/*with_rings=*/true);
}

// Data longer than the link's piece goes as several messages, cut alike on
// both sides: contiguous bytes, regions of blocks shorter and longer than
// a piece, and owned messages followed by bodies, which the receiver
// places as it takes each message (a piece of 1000 bytes here, 1 GiB in
// the backend).
TEST(MpiWorld, LinkCutsDataLongerThanAPieceAlikeOnBothSides) {
  const MpiWorld& world = MpiWorld::join(runtime::num_devices_from_env());
  MPI_Comm comm = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_dup(world.comm(), &comm), MPI_SUCCESS);
  constexpr size_t kPiece = 1000;
  constexpr int kDataTag = 300, kMessageTag = 301, kBodyTag = 302;
  const std::vector<Region> regions = {{0, 1, 10007, 10007}, {13, 37, 300, 450}, {5, 3, 2500, 3001},
                                       {0, 4, 1000, 1000}};
  auto fill = [](int from, int to, size_t kind, size_t bytes) {
    std::string text(bytes, '\0');
    for (size_t i = 0; i < bytes; ++i) text[i] = static_cast<char>(from * 41 + to * 17 + kind * 5 + i % 253);
    return text;
  };
  auto extent = [](const Region& r) { return r.offset + (r.count - 1) * r.stride + r.block; };
  {
    MpiLink link(comm, kPiece);
    EXPECT_EQ(link.piece_bytes(), kPiece);
    std::vector<std::string> sent, received;  // by (process, region)
    Requests requests;
    for (int p = 0; p < world.size(); ++p) {
      if (p == world.rank()) continue;
      for (size_t k = 0; k < regions.size(); ++k) {
        sent.push_back(fill(world.rank(), p, k, extent(regions[k])));
        received.push_back(std::string(extent(regions[k]), '\0'));
      }
    }
    size_t at = 0;
    for (int p = 0; p < world.size(); ++p) {
      if (p == world.rank()) continue;
      for (size_t k = 0; k < regions.size(); ++k, ++at) {
        link.send_region(reinterpret_cast<const std::byte*>(sent[at].data()), regions[k], p, kDataTag, requests);
        link.receive_region(reinterpret_cast<std::byte*>(received[at].data()), regions[k], p, kDataTag, requests);
      }
      // Two bodies from each process, each placed as its message is taken.
      for (size_t body = 0; body < 2; ++body) {
        link.send_owned(std::to_string(body), p, kMessageTag,
                        std::make_shared<const std::string>(fill(world.rank(), p, 10 + body, 5003 + body)), kBodyTag);
      }
    }
    if (world.size() > 1) {
      EXPECT_GT(requests.size(), regions.size() * 2) << "the regions should have gone as several messages each";
    }
    // By sender, in the order taken (a deque: a body stays where its receives write).
    std::map<int, std::deque<std::string>> bodies;
    Requests body_requests;
    const size_t expected = 2 * static_cast<size_t>(world.size() - 1);
    size_t taken = 0;
    Backoff backoff;
    while (!link.test(requests) || taken < expected || !link.test(body_requests)) {
      int source = -1;
      while (auto message = link.try_take(MPI_ANY_SOURCE, kMessageTag, &source, [&](const std::string& m, int from) {
        std::string& body = bodies[from].emplace_back(std::string(5003 + std::stoul(m), '\0'));
        return Followers{reinterpret_cast<std::byte*>(body.data()), body.size(), kBodyTag, &body_requests};
      })) {
        ++taken;
      }
      backoff.pause();
    }
    at = 0;
    for (int p = 0; p < world.size(); ++p) {
      if (p == world.rank()) continue;
      for (size_t k = 0; k < regions.size(); ++k, ++at) {
        const Region& r = regions[k];
        std::string want(extent(r), '\0');
        for (size_t row = 0; row < r.count; ++row) {
          const size_t from = r.offset + row * r.stride;
          want.replace(from, r.block, fill(p, world.rank(), k, extent(r)).substr(from, r.block));
        }
        EXPECT_TRUE(received[at] == want) << "region " << k << " from process " << p;
      }
      ASSERT_EQ(bodies[p].size(), 2u) << "from process " << p;
      for (size_t body = 0; body < 2; ++body) {
        EXPECT_TRUE(bodies[p][body] == fill(p, world.rank(), 10 + body, 5003 + body))
            << "body " << body << " from process " << p;
      }
    }
    link.flush_owned(std::chrono::milliseconds(5000));
    MPI_Barrier(comm);
  }
  MPI_Comm_free(&comm);
}

// Started with ORDO_NUM_DEVICES differing by process, and
// ORDO_TEST_DEVICES_BY_PROCESS ("1,2,2") saying which each has.
TEST(MpiWorldDisagreeing, EveryProcessGetsAnErrorNamingEachCount) {
  const char* counts_text = std::getenv("ORDO_TEST_DEVICES_BY_PROCESS");
  if (counts_text == nullptr) GTEST_SKIP() << "run by mpi_tests.cmake with devices differing by process";
  std::vector<int> counts;
  std::istringstream in(counts_text);
  for (std::string c; std::getline(in, c, ',');) counts.push_back(std::stoi(c));
  ASSERT_EQ(static_cast<int>(counts.size()), env_int("OMPI_COMM_WORLD_SIZE"));
  try {
    MpiWorld::join(runtime::num_devices_from_env());
    ADD_FAILURE() << "the processes disagree on their devices, and yet the world was made";
  } catch (const InvalidArgument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("disagree on how many devices each drives (ORDO_NUM_DEVICES)"), std::string::npos)
        << message;
    for (size_t p = 0; p < counts.size(); ++p) {
      const std::string process = "process " + std::to_string(p) + " (host " + this_host_name() + ", pid ";
      const size_t at = message.find(process);
      ASSERT_NE(at, std::string::npos) << process << " in " << message;
      const size_t count_at = message.find("): ", at);
      ASSERT_NE(count_at, std::string::npos) << message;
      EXPECT_EQ(std::atoi(message.c_str() + count_at + 3), counts[p]) << process << " in " << message;
    }
  }
}

// A peer failed (the backend's liveness would say so): this process must
// not finalize, whose fence would wait for the dead peer. mpi_tests.cmake
// checks that mpirun saw the processes exit without finalizing.
TEST(MpiWorldPeerFailure, ExitsWithoutFinalizing) {
  if (std::getenv("ORDO_TEST_PEER_FAILURE") == nullptr) GTEST_SKIP() << "run by mpi_tests.cmake";
  MpiWorld::join(runtime::num_devices_from_env());
  MpiWorld::record_peer_failure("test: every peer is taken for failed");
  MpiWorld::record_peer_failure("test: a later reason is not the one reported");
}

// A process held before its start (ORDO_TEST_START_HELD says where:
// before_mpi, after_mpi, between_runtimes): process 1 sleeps there for a
// minute; process 0 warns at the warning time (1 s in mpi_tests.cmake) and
// fails its start at the timeout (3 s) naming process 1, then exits,
// which ends the job (mpirun's --timeout of 20 s bounds it otherwise).
TEST(MpiStartHeld, TheOthersWarnAndFailWithinTheTimeout) {
  const char* held = std::getenv("ORDO_TEST_START_HELD");
  if (held == nullptr) GTEST_SKIP() << "run by mpi_tests.cmake";
  const std::string where = held;
  ASSERT_TRUE(where == "before_mpi" || where == "after_mpi" || where == "between_runtimes") << where;
  ASSERT_EQ(env_int("OMPI_COMM_WORLD_SIZE"), 2);
  const int rank = env_int("OMPI_COMM_WORLD_RANK");
  const auto hold = [] { std::this_thread::sleep_for(std::chrono::seconds(60)); };
  if (where == "after_mpi" && rank == 1) {
    int provided = 0;
    ASSERT_EQ(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), MPI_SUCCESS);
  }
  if (where == "between_runtimes") make_mpi_communicator(MpiWorld::join(1)).reset();
  if (rank == 1) {
    hold();
    ADD_FAILURE() << "process 1 was not ended when process 0 gave up its start";
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  const auto start_again = [&] {
    if (where == "between_runtimes") {
      make_mpi_communicator(MpiWorld::join(1));
    } else {
      MpiWorld::join(1);
    }
  };
  try {
    start_again();
    ADD_FAILURE() << "the start succeeded without process 1";
  } catch (const CollectiveTimeoutError& e) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string message = e.what();
    const std::string step = where == "before_mpi"  ? "the start of MPI (MPI_Init_thread)"
                             : where == "after_mpi" ? "the join of ordo's MPI world (MPI_Comm_idup)"
                                                    : "the start of a runtime (a message from every other process)";
    EXPECT_NE(message.find("process 0 (host " + this_host_name()), std::string::npos) << message;
    EXPECT_NE(message.find("waited 3 s for the other processes of its MPI job in " + step + "; missing: process 1"),
              std::string::npos)
        << message;
    if (where == "between_runtimes") {
      EXPECT_NE(message.find("missing: process 1 (host "), std::string::npos) << message;
    }
    EXPECT_GE(seconds, 3.0);
    EXPECT_LT(seconds, 6.0);
    // Final: a later start says why at once.
    try {
      start_again();
      ADD_FAILURE() << "started after a failed start";
    } catch (const CollectiveError& again) {
      EXPECT_NE(std::string(again.what()).find("an earlier start failed (" + message + ")"), std::string::npos)
          << again.what();
    }
    if (!HasFailure()) {
      std::printf("ordo-mesh-test PASS: process 0 failed its start in %.1f s: %s\n", seconds, e.what());
    }
  }
}

// A process of the host killed while the host's shared memory is made
// (ORDO_TEST_RINGS_VICTIM: "maker", the process that made it, killed by
// the other just before it maps it; "mapper", that other, which kills
// itself there): mpi_tests.cmake checks that /dev/shm holds no new
// ordo-rings-* afterwards. The survivor ends when mpirun ends the job.
TEST(HostRingsKilled, LeaveNothingInDevShm) {
  const char* victim_text = std::getenv("ORDO_TEST_RINGS_VICTIM");
  if (victim_text == nullptr) GTEST_SKIP() << "run by mpi_tests.cmake";
  const std::string victim = victim_text;
  ASSERT_TRUE(victim == "maker" || victim == "mapper") << victim;
  const MpiWorld& world = MpiWorld::join(1);
  ASSERT_EQ(world.size(), 2);
  MPI_Comm comm = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_dup(world.comm(), &comm), MPI_SUCCESS);
  const auto kill_in_the_window = [&] {
    const pid_t pid = victim == "maker" ? world.pid(0) : getpid();
    std::printf("ordo-mesh-test: process %d kills the %s (pid %d) between the making and the mapping\n",
                world.rank(), victim.c_str(), static_cast<int>(pid));
    std::fflush(stdout);
    kill(pid, SIGKILL);
    // Gone (mpirun's daemon reaps it) before this process goes on to map.
    for (int i = 0; i < 200 && kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  };
  // The survivor's start fails (MPI may report the death) or waits until
  // mpirun ends the job: either is right; only /dev/shm is checked.
  try {
    const bool mapped = HostRings::open(comm, world.topology(), kill_in_the_window) != nullptr;
    std::printf("ordo-mesh-test: process %d went on (%s)\n", world.rank(), mapped ? "mapped" : "by MPI");
  } catch (const CollectiveError& e) {
    std::printf("ordo-mesh-test: process %d failed its start: %s\n", world.rank(), e.what());
  }
}

}  // namespace
}  // namespace ordo::comm

// A run whose filter matched nothing, or whose tests all skipped, is a
// failure: mpi_tests.cmake picks the tests of each run by filter.
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS();
  if (failed == 0 && ::testing::UnitTest::GetInstance()->successful_test_count() == 0) {
    std::fprintf(stderr, "mpi_world_test: no test ran to success (filter or environment wrong)\n");
    return 1;
  }
  return failed;
}
