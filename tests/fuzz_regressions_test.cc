// Bugs that the differential fuzzer (tests/python/fuzz) found, each kept as
// a focused test. (NaN bits under fusion: nan_bits_test.cc.)
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
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

// all_reduce scaled an integer sum in double and converted it back with
// static_cast, undefined where the product leaves the integer's range
// (int32 2^30 * 4 came back 0). It saturates now, as a cast does.
TEST_F(FuzzRegressionTest, AnIntegerAllReduceScaledPastItsRangeSaturates) {
  const Tensor small = from_vector<int32_t>({1 << 30, -(1 << 30), 7, -7}, {4});
  EXPECT_EQ(all_reduce(ReduceType::kSum, small, 4.0).to_vector<int32_t>(),
            (std::vector<int32_t>{INT32_MAX, INT32_MIN, 28, -28}));
  EXPECT_EQ(all_reduce(ReduceType::kMax, small, -2.5).to_vector<int32_t>(),
            (std::vector<int32_t>{INT32_MIN, INT32_MAX, -17, 17}));
  const Tensor wide = from_vector<int64_t>({int64_t{1} << 62, 3}, {2});
  EXPECT_EQ(all_reduce(ReduceType::kSum, wide, 2.0).to_vector<int64_t>(), (std::vector<int64_t>{INT64_MAX, 6}));
  EXPECT_EQ(reduce_scatter(ReduceType::kSum, wide, -4.0, 0, 1).to_vector<int64_t>(),
            (std::vector<int64_t>{INT64_MIN, -12}));
}

}  // namespace
}  // namespace ordo
