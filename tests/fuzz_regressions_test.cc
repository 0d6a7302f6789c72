// Bugs that the differential fuzzer (tests/python/fuzz) found, each kept as
// a focused test. (NaN bits under fusion: nan_bits_test.cc.)
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "ordo/ordo.h"
#include "test_util.h"

namespace ordo {
namespace {

using FuzzRegressionTest = testing::OneDeviceTest;

// A failed graph failed its results before it recorded the failure in the
// device, so a reader woken by a failed result could call mark_step before
// the failure was there: that mark_step did not raise, and a later one,
// unrelated, did. A graph of many results keeps the worker failing them
// for a while after the first.
TEST_F(FuzzRegressionTest, TheMarkStepAfterReadingAFailedValueRaises) {
  using namespace std::chrono_literals;
  for (int round = 0; round < 50; ++round) {
    SCOPED_TRACE(round);
    Tensor table = from_vector<float>({10, 20, 30}, {3});
    Tensor bad = index_select(table, 0, from_vector<int64_t>({0, 7}, {2}));
    std::vector<Tensor> results;
    for (int i = 0; i < 2000; ++i) results.push_back(table * static_cast<double>(i));
    mark_step();
    // Let the worker take the graph: a reader that ran it itself would
    // see the failure recorded in order.
    std::this_thread::sleep_for(2ms);
    EXPECT_THROW(bad.to_vector<float>(), ExecutionError);
    ASSERT_THROW(mark_step(), ExecutionError);
    mark_step();  // reported once
  }
}

}  // namespace
}  // namespace ordo
