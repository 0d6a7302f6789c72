// Replica groups that differ between devices: every device that can see the
// disagreement raises CollectiveMismatchError naming both partitions, the
// same partition written in another order is the same partition, and a
// device that waits too long is told what the missing device does instead.
// collective_permute takes each source and each target at most once.
#include <gtest/gtest.h>

#include <chrono>
#include <array>
#include <future>
#include <thread>
#include <tuple>

#include "spmd.h"
#include "test_util.h"

namespace ordo {
namespace {

using testing::DeviceOutcome;
using testing::error_of;
using testing::run_on_devices;
using Clock = std::chrono::steady_clock;
using Values = std::vector<float>;

// Fixture names start with "Collective" so that scripts/sanitize.sh thread runs them.
class CollectiveGroupMismatchTest : public testing::FourDeviceTest {
 protected:
  // Detection must be prompt: long before this timeout.
  static constexpr double kTimeoutSeconds = 5.0;

  void SetUp() override {
    testing::FourDeviceTest::SetUp();
    set_collective_timeouts({kTimeoutSeconds, kTimeoutSeconds});
  }
  void TearDown() override {
    set_collective_timeouts({});
    testing::FourDeviceTest::TearDown();
  }
};

const ReplicaGroups kPairs{{0, 1}, {2, 3}};
const ReplicaGroups kCrossed{{0, 2}, {1, 3}};
const ReplicaGroups kReversedFirst{{1, 0}, {2, 3}};
const ReplicaGroups kSingletons{{0}, {1}, {2}, {3}};

Values all_reduce_of_ones(const ReplicaGroups& groups) {
  return all_reduce(ReduceType::kSum, ones({2}), 1.0, groups).to_vector<float>();
}

// Runs fn on the 4 devices and checks that it took less than the timeout:
// a mismatch is found by looking, not by waiting.
std::vector<DeviceOutcome<Values>> run_promptly(const std::function<Values(int)>& fn) {
  const Clock::time_point start = Clock::now();
  auto outcomes = run_on_devices<Values>(4, fn);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 4.0);
  return outcomes;
}

// A one-time signal between device threads. Waiting gives up after a while:
// a test that goes wrong fails instead of hanging.
class Signal {
 public:
  void raise() { promise_.set_value(); }
  void wait() const {
    if (future_.wait_for(std::chrono::seconds(20)) != std::future_status::ready) ADD_FAILURE() << "no signal";
  }

 private:
  std::promise<void> promise_;
  std::shared_future<void> future_ = promise_.get_future().share();
};

#define EXPECT_HAS(text, fragment) EXPECT_NE((text).find(fragment), std::string::npos) << (text)

// ---- The issue's first example: groups that cross. ----

TEST_F(CollectiveGroupMismatchTest, DevicesWhosePeerTookAnotherPartitionRaiseAMismatchNamingBoth) {
  auto outcomes = run_promptly([](int d) { return all_reduce_of_ones(d < 2 ? kPairs : kCrossed); });
  // Devices 0 and 1 met each other with the same partition: only a barrier
  // with devices 2 and 3 could tell them, so they succeed.
  for (int d : {0, 1}) EXPECT_EQ(outcomes[d].get(), (Values{2, 2})) << d;
  // Device 2 waits for device 0 in group [0, 2] and finds it at the same
  // collective in group [0, 1] of the other partition; device 3 likewise.
  for (auto [d, peer, group] : {std::tuple{2, 0, "[0, 2]"}, std::tuple{3, 1, "[1, 3]"}}) {
    const std::string message = error_of<CollectiveMismatchError>(outcomes[d]);
    EXPECT_HAS(message, str_cat("collective mismatch at collective #0 of devices ", d, " and ", peer, ": device ",
                                d, " runs all_reduce(sum, scale 1, groups [[0, 2], [1, 3]]) of float32[2] #0 on group ",
                                group, ", but device ", peer, " runs all_reduce #0 on group [0, 1]"));
    EXPECT_HAS(message, "replica groups [[0, 2], [1, 3]] against [[0, 1], [2, 3]]");
  }
}

// The peers ran on before the late devices looked: their records still show
// what their collective #0 was, or, beyond the history kept, that they went
// past it on the other partition.
class CollectiveGroupMismatchAfterPeersRanOn : public CollectiveGroupMismatchTest,
                                              public ::testing::WithParamInterface<int> {};

TEST_P(CollectiveGroupMismatchAfterPeersRanOn, IsStillAMismatch) {
  const int collectives = GetParam();
  std::array<Signal, 2> peer_done;
  auto outcomes = run_promptly([&](int d) {
    if (d >= 2) {
      for (const Signal& done : peer_done) done.wait();
      return all_reduce_of_ones(kCrossed);
    }
    Values last;
    for (int i = 0; i < collectives; ++i) last = all_reduce_of_ones(kPairs);
    peer_done[d].raise();
    return last;
  });
  for (int d : {0, 1}) EXPECT_EQ(outcomes[d].get(), (Values{2, 2})) << d;
  for (int d : {2, 3}) {
    const std::string message = error_of<CollectiveMismatchError>(outcomes[d]);
    EXPECT_HAS(message, "replica groups [[0, 2], [1, 3]] against [[0, 1], [2, 3]]");
    if (collectives <= 16) {
      EXPECT_HAS(message, "runs all_reduce #0 on group [0, 1]");
    } else {
      EXPECT_HAS(message, str_cat("runs past its collective #0 without joining it: it is at its collective #",
                                  collectives - 1, ", all_reduce #", collectives - 1, " on group [0, 1]"));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Collectives, CollectiveGroupMismatchAfterPeersRanOn, ::testing::Values(3, 20));

// ---- The issue's second example: a group in another rank order. ----

TEST_F(CollectiveGroupMismatchTest, AGroupInAnotherRankOrderIsAnotherPartition) {
  auto outcomes = run_promptly([](int d) { return all_reduce_of_ones(d == 0 ? kPairs : kReversedFirst); });
  // Device 0 waits in [0, 1] for device 1, which waits in [1, 0] for device
  // 0: each finds the other at its collective #0 on another partition.
  const std::string zero = error_of<CollectiveMismatchError>(outcomes[0]);
  EXPECT_HAS(zero, "device 1 runs all_reduce #0 on group [1, 0]");
  EXPECT_HAS(zero, "replica groups [[0, 1], [2, 3]] against [[1, 0], [2, 3]]");
  const std::string one = error_of<CollectiveMismatchError>(outcomes[1]);
  EXPECT_HAS(one, "device 0 runs all_reduce #0 on group [0, 1]");
  EXPECT_HAS(one, "replica groups [[1, 0], [2, 3]] against [[0, 1], [2, 3]]");
  for (const std::string& message : {zero, one}) EXPECT_EQ(message.find("never arrived"), std::string::npos);
  // Devices 2 and 3 agree with each other and meet nobody else.
  for (int d : {2, 3}) EXPECT_EQ(outcomes[d].get(), (Values{2, 2})) << d;
}

TEST_F(CollectiveGroupMismatchTest, PartitionsThatDifferInsideAGroupAreAMismatchThatReadsDifferently) {
  // Devices 2 and 3 meet in [2, 3] with different partitions; so do 0 and 1.
  auto outcomes = run_promptly([](int d) { return all_reduce_of_ones(d % 2 == 0 ? kPairs : kReversedFirst); });
  for (int d : {2, 3}) {
    const std::string message = error_of<CollectiveMismatchError>(outcomes[d]);
    EXPECT_HAS(message, "collective mismatch at #0 on group [2, 3]: device 2 runs all_reduce(sum, scale 1, "
                        "groups [[0, 1], [2, 3]]) of float32[2] but device 3 runs all_reduce(sum, scale 1, "
                        "groups [[1, 0], [2, 3]]) of float32[2]");
  }
  for (int d : {0, 1}) {
    EXPECT_HAS(error_of<CollectiveMismatchError>(outcomes[d]), "replica groups");
  }
}

TEST_F(CollectiveGroupMismatchTest, NoGroupsAgainstGroupsNamesTheWorldAsAPartition) {
  auto outcomes = run_promptly([](int d) { return all_reduce_of_ones(d == 0 ? ReplicaGroups{} : kPairs); });
  EXPECT_HAS(error_of<CollectiveMismatchError>(outcomes[0]),
             "replica groups [[0, 1, 2, 3]] against [[0, 1], [2, 3]]");
  EXPECT_HAS(error_of<CollectiveMismatchError>(outcomes[1]),
             "replica groups [[0, 1], [2, 3]] against [[0, 1, 2, 3]]");
  for (int d : {2, 3}) EXPECT_EQ(outcomes[d].get(), (Values{2, 2})) << d;
}

// ---- The same partition written in another order. ----

// The graph of one collective traced on a chain of its own (so that only
// its attributes differ), left out of the device's next step.
std::string graph_of(const std::function<Tensor()>& collective) {
  reset_cc_token(current_device());
  std::string graph = dump_graph({collective()});
  reset_cc_token(current_device());
  return graph;
}

std::string graph_of_all_reduce(const ReplicaGroups& groups) {
  return graph_of([&] { return all_reduce(ReduceType::kSum, ones({2}), 1.0, groups); });
}

TEST_F(CollectiveGroupMismatchTest, TheSamePartitionInAnotherOrderIsTheSameGraph) {
  EXPECT_EQ(graph_of_all_reduce({{2, 3}, {0, 1}}), graph_of_all_reduce(kPairs));
  EXPECT_EQ(graph_of_all_reduce({{3}, {1}, {0}, {2}}), graph_of_all_reduce(kSingletons));
  EXPECT_EQ(graph_of_all_reduce({{0, 1, 2, 3}}), graph_of_all_reduce({}));
  // Rank order is part of the partition.
  EXPECT_NE(graph_of_all_reduce({{1, 0}, {2, 3}}), graph_of_all_reduce(kPairs));
  EXPECT_NE(graph_of_all_reduce({{3, 2, 1, 0}}), graph_of_all_reduce({}));
}

TEST_F(CollectiveGroupMismatchTest, TheSamePartitionInAnotherOrderMeetsAndReusesThePlan) {
  auto first = run_promptly([](int) { return all_reduce_of_ones(kPairs); });
  for (int d = 0; d < 4; ++d) EXPECT_EQ(first[d].get(), (Values{2, 2})) << d;
  const CompileCacheStats before = compile_cache_stats();
  // Every group now meets both writings (before, a mismatch whose two
  // descriptions read the same).
  const ReplicaGroups pairs_written_backwards{{2, 3}, {0, 1}};
  auto second = run_promptly([&](int d) { return all_reduce_of_ones(d % 2 == 0 ? kPairs : pairs_written_backwards); });
  for (int d = 0; d < 4; ++d) EXPECT_EQ(second[d].get(), (Values{2, 2})) << d;
  const CompileCacheStats after = compile_cache_stats();
  EXPECT_EQ(after.misses, before.misses);
  EXPECT_EQ(after.hits, before.hits + 4);
}

// ---- collective_permute: each source and each target at most once. ----

template <typename F>
std::string invalid_argument_of(F&& call) {
  try {
    call();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "no InvalidArgument";
}

TEST_F(CollectiveGroupMismatchTest, APermuteWithARepeatedSourceOrTargetIsAnErrorThatLeavesTheTokenAlone) {
  Tensor x = ones({2});
  Tensor chained = all_reduce(ReduceType::kSum, x);  // a chain that bad calls must not extend
  const std::string before = dump_pending_graph();  // the token slot's chain included
  EXPECT_EQ(invalid_argument_of([&] { collective_permute(x, {{0, 1}, {0, 2}}); }),
            "collective_permute: device 0 is the source of more than one pair: [0, 1] and [0, 2]");
  EXPECT_EQ(invalid_argument_of([&] { collective_permute(x, {{0, 1}, {2, 1}}); }),
            "collective_permute: device 1 is the target of more than one pair: [0, 1] and [2, 1]");
  EXPECT_EQ(invalid_argument_of([&] { collective_permute(x, {{3, 3}, {1, 2}, {3, 0}}); }),
            "collective_permute: device 3 is the source of more than one pair: [3, 3] and [3, 0]");
  EXPECT_EQ(dump_pending_graph(), before);
}

TEST_F(CollectiveGroupMismatchTest, PermutePairsInAnotherOrderAreTheSamePermutation) {
  auto graph_of_permute = [](const std::vector<std::pair<int, int>>& pairs) {
    return graph_of([&] { return collective_permute(ones({2}), pairs); });
  };
  EXPECT_EQ(graph_of_permute({{2, 0}, {0, 1}}), graph_of_permute({{0, 1}, {2, 0}}));
  auto outcomes = run_promptly([](int d) {
    using Pairs = std::vector<std::pair<int, int>>;
    const Pairs pairs = d % 2 == 0 ? Pairs{{0, 1}, {1, 2}} : Pairs{{1, 2}, {0, 1}};
    return collective_permute(full({2}, d + 1.0, DType::kFloat32), pairs).to_vector<float>();
  });
  const std::vector<Values> expected{{0, 0}, {1, 1}, {2, 2}, {0, 0}};
  for (int d = 0; d < 4; ++d) EXPECT_EQ(outcomes[d].get(), expected[d]) << d;
}

// ---- What a timeout and a gone peer say about the missing device. ----

TEST_F(CollectiveGroupMismatchTest, ATimeoutSaysTheMissingDeviceWaitsInAnotherGroup) {
  set_collective_timeouts({2.0, 2.0});
  const ReplicaGroups first{{0}, {1, 2}, {3}};
  const ReplicaGroups second{{0, 1}, {2}, {3}};
  Signal zero_waits, zero_failed;
  auto outcomes = run_on_devices<Values>(4, [&](int d) {
    if (d == 1) {
      zero_waits.wait();
      // Device 1 starts waiting for device 2 well after device 0 started
      // waiting for it, so that it still waits when device 0 times out.
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    if (d == 2) zero_failed.wait();  // then device 1 meets it
    all_reduce_of_ones(first);
    if (d != 0) return all_reduce_of_ones(second);
    Tensor late = all_reduce(ReduceType::kSum, ones({2}), 1.0, second);
    zero_waits.raise();
    try {
      return late.to_vector<float>();
    } catch (...) {
      zero_failed.raise();
      throw;
    }
  });
  const std::string message = error_of<CollectiveTimeoutError>(outcomes[0]);
  EXPECT_HAS(message, "device 0 waited 2 s in all_reduce(sum, scale 1, groups [[0, 1], [2], [3]]) of float32[2] "
                      "#0 on group [0, 1] (its collective #1); missing devices: 1 (is waiting in all_reduce #0 on "
                      "group [1, 2], its collective #0)");
  EXPECT_EQ(message.find("never arrived"), std::string::npos) << message;
  EXPECT_HAS(error_of<CollectiveError>(outcomes[1]), "device 0 waited 2 s");
  for (int d : {2, 3}) EXPECT_EQ(outcomes[d].get(), (Values{1, 1})) << d;
}

TEST_F(CollectiveGroupMismatchTest, ATimeoutSaysSinceWhichCollectiveTheMissingDeviceIsAway) {
  set_collective_timeouts({0.5, 0.5});
  const ReplicaGroups second{{0, 1}, {2}, {3}};
  Signal zero_failed;
  auto outcomes = run_on_devices<Values>(4, [&](int d) {
    all_reduce_of_ones(kSingletons);
    if (d == 1) zero_failed.wait();  // busy with something else
    try {
      return all_reduce_of_ones(second);
    } catch (...) {
      if (d == 0) zero_failed.raise();
      throw;
    }
  });
  EXPECT_HAS(error_of<CollectiveTimeoutError>(outcomes[0]),
             "missing devices: 1 (has not reached a collective since its collective #0 (all_reduce #0 on group [1]))");
  EXPECT_HAS(error_of<CollectiveError>(outcomes[1]), "device 0 waited 0.5 s");
  for (int d : {2, 3}) EXPECT_EQ(outcomes[d].get(), (Values{1, 1})) << d;
}

TEST_F(CollectiveGroupMismatchTest, APeerGoneAfterACollectiveIsNamedWithIt) {
  auto outcomes = run_promptly([](int d) {
    all_reduce_of_ones(kSingletons);
    if (d == 3) throw std::runtime_error("user code failed");
    return all_reduce_of_ones({});
  });
  for (int d = 0; d < 3; ++d) {
    EXPECT_HAS(error_of<CollectiveError>(outcomes[d]),
               "cannot complete: device 3 is gone (its thread raised: user code failed), after its collective #0 "
               "(all_reduce #0 on group [3])");
  }
}

}  // namespace
}  // namespace ordo
