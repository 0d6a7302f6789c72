// The rings between a host's processes (comm/mpi/host_rings.h) without
// processes: two HostRings over one block of this process's memory play
// two processes of a host, each on its own thread.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "comm/mpi/host_rings.h"
#include "ordo/error.h"

namespace ordo::comm {
namespace {

// Two processes' views of one zeroed segment (world ranks 7 and 9).
std::byte* zeroed(size_t bytes) {
  auto* memory = static_cast<std::byte*>(std::aligned_alloc(64, bytes));
  std::memset(memory, 0, bytes);
  return memory;
}

struct TwoProcesses {
  explicit TwoProcesses(size_t capacity)
      : memory(zeroed(HostRings::rings_bytes(2, capacity))),
        first({7, 9}, 0, memory, capacity, [this] { std::free(memory); }),
        second({7, 9}, 1, memory, capacity, {}) {}
  std::byte* const memory;
  HostRings first, second;  // first frees the memory, after second is gone
};

std::string message_of(int tag, int index, size_t bytes) {
  std::string text(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) text[i] = static_cast<char>(tag * 13 + index * 7 + i % 241);
  return text;
}

TEST(HostRings, ReachOnlyTheOtherProcessesOfTheHost) {
  TwoProcesses host(4096);
  EXPECT_TRUE(host.first.reaches(9));
  EXPECT_FALSE(host.first.reaches(7));
  EXPECT_FALSE(host.first.reaches(8));
  EXPECT_TRUE(host.second.reaches(7));
  EXPECT_EQ(host.first.max_message(), 2048u - 8u);
}

// A ring of 4 KiB, messages of 0 to 2 KiB on three tags sent faster than
// they are read: records wrap around the ring's end and wait for room in
// the sender, and each tag's messages still come whole and in order
// whatever order the reader asks for the tags in.
TEST(HostRings, EveryTagKeepsItsOrderThroughWrapsAndWaits) {
  TwoProcesses host(4096);
  constexpr int kTags = 3, kPerTag = 400;
  std::mt19937 sizes(5);
  std::vector<std::vector<size_t>> size_of(kTags);
  for (auto& tag_sizes : size_of) {
    for (int i = 0; i < kPerTag; ++i) tag_sizes.push_back(sizes() % (host.first.max_message() + 1));
  }
  std::atomic<bool> read_all{false};
  std::thread sender([&] {
    std::mt19937 order(11);
    std::vector<int> next(kTags, 0);
    for (int sent = 0; sent < kTags * kPerTag;) {
      const int tag = static_cast<int>(order() % kTags);
      if (next[tag] == kPerTag) continue;
      host.first.send(9, 100 + tag, message_of(tag, next[tag], size_of[tag][next[tag]]));
      ++next[tag];
      ++sent;
    }
    while (!read_all.load()) host.first.flush();  // what waited for room
  });
  std::mt19937 order(3);
  std::vector<int> taken(kTags, 0);
  std::string into;
  for (int got = 0; got < kTags * kPerTag;) {
    const int tag = static_cast<int>(order() % kTags);
    if (taken[tag] == kPerTag || !host.second.try_take(7, 100 + tag, into)) continue;
    ASSERT_EQ(into.size(), size_of[tag][taken[tag]]) << "tag " << tag << ", message " << taken[tag];
    ASSERT_TRUE(into == message_of(tag, taken[tag], into.size())) << "tag " << tag << ", message " << taken[tag];
    ++taken[tag];
    ++got;
  }
  read_all = true;
  sender.join();
  EXPECT_FALSE(host.second.try_take(7, 100, into));
  EXPECT_FALSE(host.second.try_take(7, 101, into));
}

// Both processes send and read at once, several threads each.
TEST(HostRings, BothWaysFromSeveralThreads) {
  TwoProcesses host(8192);
  constexpr int kThreads = 2, kPerThread = 500;
  std::atomic<int> done{0};
  auto side = [&](HostRings& rings, int peer, int thread) {
    const int tag = 200 + thread;
    std::string into;
    int sent = 0, got = 0;
    while (sent < kPerThread || got < kPerThread) {
      if (sent < kPerThread) {
        rings.send(peer, tag, message_of(thread, sent, 64 + sent % 700));
        ++sent;
      }
      if (got < kPerThread && rings.try_take(peer, tag, into)) {
        ASSERT_TRUE(into == message_of(thread, got, 64 + got % 700)) << "thread " << thread << ", message " << got;
        ++got;
      }
    }
    ++done;
    while (done.load() < 2 * kThreads) rings.flush();
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back(side, std::ref(host.first), 9, t);
    threads.emplace_back(side, std::ref(host.second), 7, t);
  }
  for (std::thread& t : threads) t.join();
}

// Bytes that no sender wrote as a record (another program's, or a bug):
// an error naming the process, not a read past what was written.
TEST(HostRings, ARecordLongerThanWhatWasWrittenIsAnError) {
  TwoProcesses host(4096);
  host.first.send(9, 1, "abcd");
  // The record's header, made to say 3000 bytes: ring 0 -> 1 is the
  // second of four, its bytes after every ring's two cursor lines.
  const uint32_t bogus[2] = {1, 3000};
  std::memcpy(host.memory + 4 * 128 + 1 * 4096, bogus, sizeof(bogus));
  std::string into;
  try {
    host.second.try_take(7, 1, into);
    ADD_FAILURE() << "read a record of 3000 bytes from a ring holding 16";
  } catch (const CollectiveError& e) {
    EXPECT_NE(std::string(e.what()).find("the shared-memory ring from process 7 holds a record of 3000 bytes"),
              std::string::npos)
        << e.what();
  }
}

TEST(HostRings, CapacityFitsAHeaderAndTheSegmentStaysSmall) {
  for (size_t processes : {2, 3, 4, 8, 16, 32, 64}) {
    const size_t capacity = HostRings::capacity_for(processes);
    EXPECT_EQ(capacity & (capacity - 1), 0u) << processes;
    EXPECT_GE(capacity, 16u * 1024) << processes;
    EXPECT_LE(capacity, 256u * 1024) << processes;
    if (capacity > 16u * 1024) {
      EXPECT_LE(HostRings::rings_bytes(processes, capacity), 33u << 20) << processes;
    }
  }
  // Two to eight processes: a 64 KiB all_reduce's header fits a ring.
  EXPECT_GE(HostRings::capacity_for(8) / 2, 64u * 1024 + 4096);
}

}  // namespace
}  // namespace ordo::comm
