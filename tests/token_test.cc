// The cc token: one chain per device, program order under any schedule, and
// the get/set/reset API.
#include <gtest/gtest.h>

#include "spmd.h"
#include "test_util.h"

namespace ordo {
namespace {

using testing::run_on_devices;
using TokenTest = testing::FourDeviceTest;

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(TokenTest, CollectivesOfADeviceFormOneChain) {
  Tensor x = ones({4});
  Tensor a = all_reduce(ReduceType::kSum, x);
  Tensor b = all_gather(x);
  Tensor c = all_reduce(ReduceType::kMax, x);
  const std::string graph = dump_pending_graph();
  EXPECT_EQ(count_of(graph, "cc_token()"), 1u) << graph;  // one fresh leaf, then a chain
  EXPECT_NE(graph.find("all_gather(%0, %2.1)"), std::string::npos) << graph;
  EXPECT_TRUE(get_cc_token(0).defined());
  EXPECT_FALSE(get_cc_token(1).defined());
}

TEST_F(TokenTest, MarkStepResetsTheSlotAndRunsCollectivesNobodyKept) {
  auto outcomes = run_on_devices<float>(2 * 2, [](int d) {
    Tensor x = full({2}, float(d), DType::kFloat32);
    if (d % 2 == 0) {
      Tensor kept = all_reduce(ReduceType::kSum, x);
      mark_step();
      return kept.to_vector<float>()[0];
    }
    all_reduce(ReduceType::kSum, x);  // result dropped: must still run for the peers
    EXPECT_TRUE(get_cc_token(d).defined());
    mark_step();
    EXPECT_FALSE(get_cc_token(d).defined());
    wait_device_ops(d);
    return 0.0f;
  });
  EXPECT_EQ(outcomes[0].get(), 0 + 1 + 2 + 3);
  EXPECT_EQ(outcomes[2].get(), 0 + 1 + 2 + 3);
}

TEST_F(TokenTest, GetSetAndResetTheSlot) {
  Tensor x = ones({2});
  EXPECT_FALSE(get_cc_token(0).defined());
  all_reduce(ReduceType::kSum, x);
  const CcToken after_first = get_cc_token(0);
  ASSERT_TRUE(after_first.defined());
  EXPECT_EQ(after_first.device(), 0);
  all_reduce(ReduceType::kSum, x);
  set_cc_token(0, after_first);  // the next collective chains on the first
  Tensor third = all_reduce(ReduceType::kSum, x);
  EXPECT_NE(dump_graph({third}).find("all_reduce(%0, %2.1)"), std::string::npos) << dump_graph({third});
  EXPECT_THROW(set_cc_token(1, after_first), InvalidArgument);
  reset_cc_token(0);
  EXPECT_FALSE(get_cc_token(0).defined());
  EXPECT_THROW(get_cc_token(9), InvalidArgument);
}

TEST_F(TokenTest, ATokenWhoseGraphRanCountsAsFresh) {
  auto outcome = run_on_devices<int>(4, [](int d) {
    all_reduce(ReduceType::kSum, ones({2}));
    const CcToken stale = get_cc_token(d);
    mark_step();
    set_cc_token(d, stale);
    EXPECT_FALSE(get_cc_token(d).defined());
    wait_device_ops(d);
    return 0;
  });
  for (const auto& o : outcome) o.get();
}

// A token read before shutdown() belongs to the old runtime's graph: set in
// a new runtime it must count as fresh, not chain the new collectives on an
// old node (device 0 would then run one all_reduce more than device 1).
TEST(TokenAcrossRuntimes, ATokenOfAnEarlierRuntimeCountsAsFresh) {
  shutdown();
  init(2);
  all_reduce(ReduceType::kSum, ones({2}));
  const CcToken old = get_cc_token(0);
  ASSERT_TRUE(old.defined());
  shutdown();
  init(2);
  set_collective_timeouts({0.5, 1.0});
  set_cc_token(0, old);
  EXPECT_FALSE(get_cc_token(0).defined());
  auto outcomes = testing::run_on_devices<float>(2, [](int d) {
    Tensor total = all_reduce(ReduceType::kSum, full({2}, float(d + 1), DType::kFloat32));
    mark_step();
    return total.to_vector<float>()[0];
  });
  set_collective_timeouts({});
  for (const auto& o : outcomes) EXPECT_EQ(o.get(), 3.0f);
  shutdown();
}

TEST_F(TokenTest, TwoThreadsOnOneDeviceNeverForkTheChain) {
  std::vector<std::thread> threads;
  std::vector<Tensor> results(2 * 50);
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([t, &results] {
      DeviceGuard on(0);
      for (int i = 0; i < 50; ++i) results[t * 50 + i] = all_reduce(ReduceType::kSum, ones({1}));
    });
  }
  for (auto& t : threads) t.join();
  const std::string graph = dump_pending_graph(0);
  EXPECT_EQ(count_of(graph, "cc_token()"), 1u);
  // A chain: every collective's token is taken by exactly one other.
  EXPECT_EQ(count_of(graph, " = all_reduce("), 100u);
  EXPECT_EQ(count_of(graph, ".1)"), 99u) << graph;
}

// Many independent collectives of different shapes: only the token orders
// them, and every device schedules its graph with its own random seed.
std::vector<float> independent_collectives(int device) {
  std::vector<Tensor> results;
  for (int i = 1; i <= 12; ++i) {
    Tensor x = full({i}, float(device + i), DType::kFloat32);
    results.push_back(i % 3 == 0 ? all_gather(x) : all_reduce(ReduceType::kSum, x));
  }
  mark_step();
  std::vector<float> out;
  for (const Tensor& r : results) {
    for (float v : r.to_vector<float>()) out.push_back(v);
  }
  return out;
}

TEST_F(TokenTest, RandomSchedulesOnEveryDeviceKeepCollectivesInOrder) {
  const std::vector<float> expected = [] {
    auto o = run_on_devices<std::vector<float>>(4, independent_collectives);
    return o[0].get();
  }();
  for (uint64_t seed = 1; seed <= 15; ++seed) {
    for (int d = 0; d < 4; ++d) set_schedule(d, {ScheduleMode::kRandom, seed * 31 + d});
    auto outcomes = run_on_devices<std::vector<float>>(4, independent_collectives);
    for (int d = 0; d < 4; ++d) ASSERT_EQ(outcomes[d].get(), expected) << "seed " << seed;
  }
}

TEST_F(TokenTest, WithoutTokenEdgesTheMismatchCheckCatchesTheReordering) {
  set_collective_timeouts({1.0, 5.0});
  set_token_edges_enabled(false);
  int mismatches = 0;
  for (uint64_t seed = 1; seed <= 10 && mismatches == 0; ++seed) {
    for (int d = 0; d < 4; ++d) set_schedule(d, {ScheduleMode::kRandom, seed * 31 + d});
    auto outcomes = run_on_devices<std::vector<float>>(4, independent_collectives);
    for (const auto& o : outcomes) {
      try {
        o.get();
      } catch (const CollectiveMismatchError& e) {
        ++mismatches;
        EXPECT_NE(std::string(e.what()).find("collective mismatch"), std::string::npos) << e.what();
      } catch (const CollectiveError&) {
        // a device whose graph failed on the mismatch abandons its later collectives
      }
    }
    shutdown();  // a failed step leaves peers' later collectives mid-chain: start over
    init(4);
  }
  set_token_edges_enabled(true);
  set_collective_timeouts({});
  EXPECT_GT(mismatches, 0);
}

}  // namespace
}  // namespace ordo
