// Lazy semantics, graph cuts, the compile cache, schedules and failures.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "executor/compile_cache.h"
#include "executor/compiler.h"
#include "ir/post_order.h"
#include "lazy/tensor_impl.h"
#include "lazy/graph_table.h"
#include "test_util.h"

namespace ordo {
namespace {

using ExecutorTest = testing::OneDeviceTest;

TEST_F(ExecutorTest, OpsOnlyRecordUntilMarkStep) {
  Tensor x = from_vector<float>({1, 2, 3}, {3});
  EXPECT_FALSE(x.is_pending());
  Tensor y = x * 2.0 + 1.0;
  EXPECT_TRUE(y.is_pending());
  EXPECT_EQ(compile_cache_stats().misses, 0);
  mark_step();
  EXPECT_FALSE(y.is_pending());
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(compile_cache_stats().misses, 1);
}

TEST_F(ExecutorTest, ReadingAPendingTensorRunsItsGraph) {
  Tensor y = arange(0, 4, 1, DType::kInt64) * int64_t{3};
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_FALSE(y.is_pending());
}

TEST_F(ExecutorTest, MarkStepMaterializesEveryLiveTensorInOneGraph) {
  Tensor x = from_vector<float>({1, 2}, {2});
  Tensor a = x + 1.0;
  Tensor b = a * a;
  Tensor c = sum(b);
  mark_step();
  EXPECT_FALSE(a.is_pending());
  EXPECT_FALSE(b.is_pending());
  EXPECT_FALSE(c.is_pending());
  EXPECT_EQ(compile_cache_stats().misses, 1);
  EXPECT_EQ(c.item<float>(), 13.0f);
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{4, 9}));
}

TEST_F(ExecutorTest, TensorsThatDiedBeforeMarkStepAreNotComputed) {
  Tensor x = from_vector<float>({1, 2}, {2});
  Tensor kept = x + 1.0;
  {
    Tensor dropped = exp(x);
    Tensor also_dropped = dropped * 3.0;
  }
  const std::string graph = dump_pending_graph();
  EXPECT_EQ(graph.find("exp"), std::string::npos) << graph;
  mark_step();
  EXPECT_FALSE(kept.is_pending());
  EXPECT_EQ(kept.to_vector<float>(), (std::vector<float>{2, 3}));
  // A rebound tensor is pending again, and is computed by the next cut.
  kept.assign(kept * 2.0);
  EXPECT_TRUE(kept.is_pending());
  mark_step();
  EXPECT_FALSE(kept.is_pending());
  EXPECT_EQ(kept.to_vector<float>(), (std::vector<float>{4, 6}));
}

TEST_F(ExecutorTest, TheSameStepTracedAgainIsNotCompiledAgain) {
  Tensor w = from_vector<float>({1, 1}, {2});
  for (int step = 0; step < 5; ++step) {
    Tensor x = from_vector<float>({float(step), 1}, {2});  // new data each step
    w.assign(w * 2.0 + x);
    mark_step();
  }
  // w <- 2w + x five times, from [1, 1].
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{58, 63}));
  const CompileCacheStats stats = compile_cache_stats();
  EXPECT_EQ(stats.misses, 1);
  EXPECT_EQ(stats.hits, 4);
}

TEST_F(ExecutorTest, ATensorUsedTwiceIsOneParameter) {
  Tensor x = from_vector<float>({2, 3}, {2});
  Tensor y = x * x;
  const std::string text = dump_graph({y});
  EXPECT_NE(text.find("1 parameters"), std::string::npos) << text;
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{4, 9}));
}

TEST_F(ExecutorTest, AssignRebindsAndChecksItsArgument) {
  Tensor x = zeros({2});
  Tensor alias = x;  // handles share the tensor, like Python names
  x.assign(x + 1.0);
  mark_step();
  x.assign(x + 1.0);
  EXPECT_EQ(alias.to_vector<float>(), (std::vector<float>{2, 2}));
  EXPECT_THROW(x.assign(zeros({3})), InvalidArgument);
  EXPECT_THROW(x.assign(zeros({2}, DType::kInt32)), DTypeError);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{2, 2}));
}

TEST_F(ExecutorTest, FailureReachesTheReaderAndTheNextMarkStepOnce) {
  Tensor table = from_vector<float>({10, 20, 30}, {3});
  Tensor index = from_vector<int64_t>({0, 7}, {2});
  Tensor picked = index_select(table, 0, index);
  Tensor later = picked + 1.0;
  mark_step();  // submits; the failure happens on the worker
  try {
    picked.to_vector<float>();
    FAIL() << "reading a failed value must throw";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("index_select"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
  EXPECT_THROW(later.to_vector<float>(), ExecutionError);
  Tensor next = later * 2.0;  // built on the failed value
  EXPECT_THROW(mark_step(), ExecutionError);  // reports the failure once...
  EXPECT_TRUE(next.is_pending());              // ...leaving the pending graph as it was
  mark_step();
  try {
    next.to_vector<float>();
    FAIL() << "a value computed from a failed one must fail";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("came from a graph that failed"), std::string::npos) << e.what();
  }
  EXPECT_THROW(mark_step(), ExecutionError);
  Tensor fine = table * 2.0;
  mark_step();
  EXPECT_EQ(fine.to_vector<float>(), (std::vector<float>{20, 40, 60}));
}

TEST_F(ExecutorTest, MarkStepAndWaitRunsTheGraphAndReportsAnEarlierFailure) {
  Tensor x = from_vector<float>({1, 2, 3}, {3});
  Tensor y = x * 2.0 + 1.0;
  mark_step_and_wait();
  EXPECT_FALSE(y.is_pending());
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 5, 7}));
  // A failed graph: the next cut reports it once, as mark_step does, and
  // leaves the pending graph as it was.
  Tensor bad = index_select(x, 0, from_vector<int64_t>({9}, {1}));
  mark_step();
  wait_device_ops(0);
  Tensor next = y + 1.0;
  EXPECT_THROW(mark_step_and_wait(), ExecutionError);
  EXPECT_TRUE(next.is_pending());
  mark_step_and_wait();
  EXPECT_EQ(next.to_vector<float>(), (std::vector<float>{4, 6, 8}));
  EXPECT_THROW(mark_step_and_wait(7), InvalidArgument);
}

TEST_F(ExecutorTest, CompileCacheIsBounded) {
  reset_compile_cache(2);
  Tensor x = from_vector<float>({1}, {1});
  for (int i = 0; i < 3; ++i) {
    Tensor y = full({1}, float(i), DType::kFloat32) + x;  // a new constant: a new graph
    mark_step();
  }
  const CompileCacheStats stats = compile_cache_stats();
  EXPECT_EQ(stats.misses, 3);
  EXPECT_EQ(stats.entries, 2);
  EXPECT_EQ(stats.capacity, 2);
  EXPECT_THROW(reset_compile_cache(0), InvalidArgument);
}

// Two threads that reach one graph at once: the second waits for the
// first's plan (4 devices tracing one step compile it once).
TEST(CompileCacheTest, AThreadReachingAGraphBeingCompiledWaitsForItsPlan) {
  executor::CompileCache cache(4);
  ASSERT_EQ(cache.find(7), nullptr);  // this thread compiles graph 7
  std::atomic<bool> found{false};
  std::shared_ptr<const executor::ExecutionPlan> waited;
  std::thread peer([&] {
    waited = cache.find(7);
    found = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(found.load());  // still waiting: no second compile
  auto plan = std::make_shared<const executor::ExecutionPlan>();
  cache.insert(7, plan);
  peer.join();
  EXPECT_EQ(waited, plan);
  const CompileCacheStats stats = cache.stats();
  EXPECT_EQ(stats.misses, 1);
  EXPECT_EQ(stats.hits, 1);
}

TEST(CompileCacheTest, ACompileThatFailedFallsToAWaitingThread) {
  executor::CompileCache cache(4);
  ASSERT_EQ(cache.find(7), nullptr);
  std::shared_ptr<const executor::ExecutionPlan> waited = std::make_shared<const executor::ExecutionPlan>();
  std::thread peer([&] { waited = cache.find(7); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  cache.abandon(7);  // this thread's compile threw
  peer.join();
  EXPECT_EQ(waited, nullptr);  // the peer compiles it now
  cache.insert(7, std::make_shared<const executor::ExecutionPlan>());
  EXPECT_NE(cache.find(7), nullptr);
  EXPECT_EQ(cache.stats().misses, 2);
}

// A graph with many independent branches that meet at the end.
Tensor branchy_graph(const Tensor& x) {
  std::vector<Tensor> parts;
  for (int i = 0; i < 16; ++i) parts.push_back(sum(tanh(x * double(i + 1)) - exp(x / double(i + 2)), {1}));
  return concat(parts, 0);
}

TEST_F(ExecutorTest, RandomScheduleGivesBitwiseTheSameResults) {
  Tensor x = rand_uniform({8, 32}, 7);
  const std::vector<float> expected = branchy_graph(x).to_vector<float>();
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    set_schedule(0, {ScheduleMode::kRandom, seed});
    EXPECT_EQ(branchy_graph(x).to_vector<float>(), expected) << "seed " << seed;
  }
  EXPECT_EQ(compile_cache_stats().misses, 21);  // each schedule is its own plan
}

TEST_F(ExecutorTest, RandomSchedulesHonourEveryEdgeAndDiffer) {
  Tensor y = branchy_graph(rand_uniform({4, 4}, 1));
  auto& graph = lazy::graphs().graph(LocalDevice(0));
  std::lock_guard<std::mutex> lock(graph.mu);
  ir::Value root = y.impl()->value;
  const ir::PostOrder walk = ir::post_order({&root, 1});
  std::set<std::vector<int32_t>> distinct;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    std::vector<int32_t> order = executor::schedule(walk, {ScheduleMode::kRandom, seed});
    std::vector<int32_t> ran_at(walk.nodes.size(), -1);
    for (size_t i = 0; i < order.size(); ++i) ran_at[order[i]] = static_cast<int32_t>(i);
    for (int32_t node : order) {
      for (const ir::Value& v : walk.nodes[node]->operands()) {
        const int32_t operand = walk.position(v.node.get());
        if (v.node->op() != ir::OpKind::kDeviceData) {
          EXPECT_LT(ran_at[operand], ran_at[node]);
        }
      }
    }
    distinct.insert(order);
  }
  EXPECT_GT(distinct.size(), 40u);
}

TEST_F(ExecutorTest, IntermediatesAreReleasedAfterTheirLastUse) {
  Tensor x = from_vector<float>({1, 2}, {2});
  Tensor y = exp(exp(exp(x) + 1.0));
  auto& graph = lazy::graphs().graph(LocalDevice(0));
  std::lock_guard<std::mutex> lock(graph.mu);
  ir::Value root = y.impl()->value;
  const ir::PostOrder walk = ir::post_order({&root, 1});
  auto plan = executor::compile(walk, {});
  std::vector<int> released(plan->num_slots, 0);
  for (const auto& step : plan->steps) {
    for (int32_t slot : step.release_slots) ++released[slot];
  }
  for (int32_t slot = 0; slot < plan->num_slots; ++slot) {
    const bool is_result = slot == plan->result_slots[0];
    EXPECT_EQ(released[slot], is_result ? 0 : 1) << "slot " << slot;
  }
}

TEST_F(ExecutorTest, DeepChainsRunWithoutRecursion) {
  Tensor x = from_vector<float>({0}, {1});
  for (int i = 0; i < 100'000; ++i) x = x + 1.0;
  mark_step();
  EXPECT_EQ(x.item<float>(), 100000.0f);
}

TEST_F(ExecutorTest, ZeroSizeAndScalarTensorsRun) {
  Tensor empty = zeros({0, 3}) + 1.0;
  Tensor scalar = full({}, 2.5, DType::kFloat64) * 2.0;
  mark_step();
  EXPECT_TRUE(empty.to_vector<float>().empty());
  EXPECT_EQ(scalar.item<double>(), 5.0);
  EXPECT_EQ(sum(empty).item<float>(), 0.0f);
}

TEST_F(ExecutorTest, MarkStepWithNothingPendingIsANoOp) {
  mark_step();
  mark_step();
  EXPECT_EQ(compile_cache_stats().misses, 0);
}

using RuntimeLifecycleTest = testing::FourDeviceTest;

TEST_F(RuntimeLifecycleTest, DevicesAreCheckedAndRuntimesDoNotMix) {
  EXPECT_EQ(num_devices(), 4);
  EXPECT_THROW(set_current_device(4), InvalidArgument);
  EXPECT_THROW(mark_step(7), InvalidArgument);
  EXPECT_THROW(init(2), InvalidArgument);  // running with 4
  EXPECT_THROW(init(0), InvalidArgument);
  Tensor a = ones({2}, DType::kFloat32, 1);
  Tensor b = ones({2}, DType::kFloat32, 2);
  EXPECT_THROW(a + b, InvalidArgument);
  Tensor old = ones({2});
  shutdown();
  init(2);
  EXPECT_THROW(old + old, InvalidArgument);
  EXPECT_THROW(old.to_vector<float>(), InvalidArgument);
  EXPECT_EQ(num_devices(), 2);
}

TEST_F(RuntimeLifecycleTest, EachDeviceRunsItsOwnGraphs) {
  std::vector<Tensor> results;
  for (int d = 0; d < 4; ++d) {
    DeviceGuard on(d);
    results.push_back(full({2}, d, DType::kInt32) + 10);
    EXPECT_EQ(results.back().device(), d);
    mark_step();
  }
  for (int d = 0; d < 4; ++d) EXPECT_EQ(results[d].to_vector<int32_t>(), (std::vector<int32_t>{10 + d, 10 + d}));
  wait_device_ops();
}

}  // namespace
}  // namespace ordo
