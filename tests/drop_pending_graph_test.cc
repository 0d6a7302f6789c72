// drop_pending_graph: a device's pending graph is thrown away instead of run;
// its tensors say so when read, its token slot starts afresh and peers of its
// collectives fail at once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "spmd.h"
#include "test_util.h"

namespace ordo {
namespace {

using testing::run_on_devices;

class DropPendingGraphTest : public testing::FourDeviceTest {
 protected:
  void TearDown() override {
    set_collective_timeouts({});
    testing::FourDeviceTest::TearDown();
  }
};

template <typename E>
std::string error_reading(const Tensor& t) {
  try {
    t.to_vector<float>();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception: ") + e.what();
  }
  return "no exception";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST_F(DropPendingGraphTest, PendingTensorsLoseTheirValuesAndDataStays) {
  Tensor kept = ones({3}) * 2.0;
  mark_step();
  Tensor pending = kept + 1.0;
  Tensor also_pending = exp(pending);
  drop_pending_graph();
  EXPECT_PRED2(contains, error_reading<ExecutionError>(pending), "dropped with drop_pending_graph(0)");
  EXPECT_PRED2(contains, error_reading<ExecutionError>(also_pending), "before it was computed");
  EXPECT_EQ(kept.to_vector<float>(), (std::vector<float>{2, 2, 2}));
  // Computing with a dropped tensor is refused when traced, naming why...
  try {
    Tensor derived = pending * 3.0;
    ADD_FAILURE() << "tracing with a dropped tensor must throw";
  } catch (const ExecutionError& e) {
    EXPECT_PRED2(contains, e.what(), "dropped with drop_pending_graph(0)");
  }
  // ...and costs nothing else: the device goes on, its next step runs and
  // reports no failure.
  Tensor squared = kept * kept;
  EXPECT_NO_THROW(mark_step());
  EXPECT_EQ(squared.to_vector<float>(), (std::vector<float>{4, 4, 4}));
  EXPECT_NO_THROW(mark_step());
  EXPECT_EQ(dump_pending_graph().find("%"), std::string::npos) << dump_pending_graph();
}

TEST_F(DropPendingGraphTest, OnlyTheGivenDeviceIsDropped) {
  Tensor on_one = full({2}, 5.0, DType::kFloat32, 1) + 1.0;
  Tensor on_zero = ones({2}) + 1.0;
  drop_pending_graph(1);
  EXPECT_EQ(on_zero.to_vector<float>(), (std::vector<float>{2, 2}));
  EXPECT_PRED2(contains, error_reading<ExecutionError>(on_one), "drop_pending_graph(1)");
  drop_pending_graph(2);  // nothing pending: nothing to do
  EXPECT_THROW(drop_pending_graph(4), InvalidArgument);
  EXPECT_THROW(drop_pending_graph(-2), InvalidArgument);
}

TEST_F(DropPendingGraphTest, TheTokenSlotStartsAfresh) {
  Tensor reduced = all_reduce(ReduceType::kSum, ones({2}));
  const CcToken before = get_cc_token(0);
  ASSERT_TRUE(before.defined());
  drop_pending_graph();
  EXPECT_FALSE(get_cc_token(0).defined());
  // A token of the dropped graph counts as fresh.
  set_cc_token(0, before);
  EXPECT_FALSE(get_cc_token(0).defined());
}

TEST_F(DropPendingGraphTest, PeersOfDroppedCollectivesFailAtOnceAndLaterOnesStayAligned) {
  // Far longer than the test takes: peers must fail because device 3
  // abandoned the collective, not because they timed out.
  set_collective_timeouts({60.0, 120.0});
  auto outcomes = run_on_devices<float>(4, [](int d) {
    Tensor first = all_reduce(ReduceType::kSum, full({2}, d + 1.0, DType::kFloat32));
    if (d == 3) {
      drop_pending_graph();
    } else {
      EXPECT_PRED2(contains, error_reading<CollectiveError>(first), "device 3 will not join");
      EXPECT_PRED2(contains, error_reading<CollectiveError>(first), "dropped");
    }
    // The next collective meets as usual on every device.
    return all_reduce(ReduceType::kSum, full({2}, d + 1.0, DType::kFloat32)).to_vector<float>()[0];
  });
  for (int d = 0; d < 4; ++d) EXPECT_EQ(outcomes[d].get(), 10.0f) << d;
}

TEST_F(DropPendingGraphTest, ChainedCollectivesAreAbandonedInOrder) {
  set_collective_timeouts({60.0, 120.0});
  auto outcomes = run_on_devices<std::vector<float>>(4, [](int d) {
    Tensor x = full({4}, d + 1.0, DType::kFloat32);
    mark_step();  // x holds data: the drop leaves it alone
    Tensor summed = all_reduce(ReduceType::kSum, x);
    Tensor gathered = all_gather(summed, 0);
    Tensor maxed = all_reduce(ReduceType::kMax, gathered);
    if (d == 0) {
      drop_pending_graph();
    } else {
      EXPECT_PRED2(contains, error_reading<CollectiveError>(maxed), "device 0 will not join");
    }
    return all_reduce(ReduceType::kMin, x).to_vector<float>();
  });
  for (int d = 0; d < 4; ++d) EXPECT_EQ(outcomes[d].get(), std::vector<float>(4, 1.0f)) << d;
}

TEST_F(DropPendingGraphTest, PeersLearnWhichCollectiveEachAbandonedOneWas) {
  set_collective_timeouts({60.0, 120.0});
  auto outcomes = run_on_devices<std::vector<std::string>>(4, [](int d) {
    Tensor x = full({4}, d + 1.0, DType::kFloat32);
    mark_step();
    if (d == 0) {
      // One graph: an all_reduce whose result nobody keeps (only the token
      // reaches it), then an all_gather.
      all_reduce(ReduceType::kSum, x);
      Tensor gathered = all_gather(x, 0);
      drop_pending_graph();
      return std::vector<std::string>{};
    }
    // The peers run the same two collectives as two graphs.
    const std::string first = error_reading<CollectiveError>(all_reduce(ReduceType::kSum, x));
    const std::string second = error_reading<CollectiveError>(all_gather(x, 0));
    return std::vector<std::string>{first, second};
  });
  for (int d = 1; d < 4; ++d) {
    const std::vector<std::string>& errors = outcomes[d].get();
    EXPECT_PRED2(contains, errors[0], "device 0 will not join all_reduce #0");
    EXPECT_PRED2(contains, errors[1], "device 0 will not join all_gather #1");
  }
}

TEST_F(DropPendingGraphTest, CollectivesAreAbandonedAfterTheGraphsSubmittedBefore) {
  set_collective_timeouts({60.0, 120.0});
  auto outcomes = run_on_devices<std::vector<std::string>>(4, [](int d) {
    Tensor x = full({4}, d + 1.0, DType::kFloat32);
    mark_step();
    if (d == 0) {
      // The first graph's collective waits on the worker for the late peers
      // while the second graph is dropped.
      Tensor sum = all_reduce(ReduceType::kSum, x);
      mark_step();
      Tensor dropped = all_reduce(ReduceType::kMax, x);
      drop_pending_graph();
      return std::vector<std::string>{std::to_string(sum.to_vector<float>()[0])};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    Tensor sum = all_reduce(ReduceType::kSum, x);
    const std::string total = std::to_string(sum.to_vector<float>()[0]);
    return std::vector<std::string>{total, error_reading<CollectiveError>(all_reduce(ReduceType::kMax, x))};
  });
  EXPECT_EQ(outcomes[0].get()[0], std::to_string(10.0f));
  for (int d = 1; d < 4; ++d) {
    EXPECT_EQ(outcomes[d].get()[0], std::to_string(10.0f)) << d;
    EXPECT_PRED2(contains, outcomes[d].get()[1], "device 0 will not join all_reduce #1");
  }
}

TEST_F(DropPendingGraphTest, DropsRaceSafelyWithTracingAndReadingOnTheDevice) {
  std::atomic<bool> tracing{true};
  int computed = 0, dropped = 0;
  std::thread reader([&] {
    for (int i = 0; i < 300; ++i) {
      try {
        // A drop between the two ops refuses the second; one after them
        // fails the read.
        Tensor t = (ones({8}) + static_cast<double>(i)) * 2.0;
        EXPECT_EQ(t.to_vector<float>()[0], 2.0f * (i + 1));
        ++computed;
      } catch (const ExecutionError& e) {
        EXPECT_PRED2(contains, e.what(), "dropped with drop_pending_graph(0)");
        ++dropped;
      }
    }
    tracing = false;
  });
  while (tracing) drop_pending_graph(0);
  reader.join();
  EXPECT_EQ(computed + dropped, 300);
}

}  // namespace
}  // namespace ordo
