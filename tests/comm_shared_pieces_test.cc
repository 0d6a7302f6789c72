// The backend-neutral pieces of src/comm/ that every backend reuses,
// driven directly: the reduce types in rank order (and the NaN rule they
// share with the kernels), the fingerprint and the mismatch message, the
// deadlines with the one warning and the timeout, and the failure, absence
// and interrupt news with their messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "comm/deadlines.h"
#include "comm/describe.h"
#include "comm/fingerprint.h"
#include "comm/device_status.h"
#include "comm/reduction.h"
#include "core/arithmetic.h"
#include "device/buffer.h"

namespace ordo::comm {
namespace {

template <typename T>
std::vector<T> reduced(const std::vector<std::vector<T>>& ranks, ReduceType reduce, double scale = 1.0) {
  std::vector<T> out(ranks[0].size());
  reduce_ranks<T>(out.data(), ranks.size(), [&](size_t q) { return ranks[q].data(); },
                  static_cast<int64_t>(out.size()), reduce, scale);
  return out;
}

uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }

TEST(CommReductionTest, CombinesRanksInRankOrder) {
  // 1e8 + 1 - 1e8 in float: the order of the adds decides the result.
  const std::vector<std::vector<float>> ranks{{1e8f}, {1.0f}, {-1e8f}};
  EXPECT_EQ(reduced(ranks, ReduceType::kSum)[0], (1e8f + 1.0f) + -1e8f);
  EXPECT_EQ(reduced(ranks, ReduceType::kSum, 0.5)[0], static_cast<float>(((1e8f + 1.0f) + -1e8f) * 0.5));
}

// A scale that a float holds multiplies float32 in float: the bits must be
// those of the product in double rounded to float, for every kind of value.
TEST(CommReductionTest, AFloatScaleGivesTheBitsOfTheProductInDouble) {
  std::vector<float> values{0.0f, -0.0f, 1.0f, -3.5f, 1e-45f, -1.2e-38f, 1.1754942e-38f, 3.4028235e38f,
                            -3.3e38f, 7.1e-39f, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::bit_cast<float>(0x7fc12345u),
                            std::bit_cast<float>(0xff812345u) /* signalling */};
  uint32_t state = 12345;
  for (int i = 0; i < 4000; ++i) {
    state = state * 1664525u + 1013904223u;
    values.push_back(std::bit_cast<float>(state));  // every exponent, subnormals and NaNs among them
  }
  for (double scale : {0.5, 0.25, -2.0, 3.0, 0.75, static_cast<double>(0.1f), 0x1p-140, 0x1p100, 1e-30, 0.1, 1.0 / 3}) {
    const std::vector<float> out = reduced<float>({values}, ReduceType::kSum, scale);
    for (size_t i = 0; i < values.size(); ++i) {
      const float expected = static_cast<float>(static_cast<double>(values[i]) * scale);
      ASSERT_EQ(bits(out[i]), bits(expected)) << "value " << values[i] << " (bits " << std::hex << bits(values[i])
                                              << ") scale " << scale;
    }
  }
}

TEST(CommReductionTest, IntegersWrapAndScaledIntegersSaturate) {
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  const std::vector<std::vector<int32_t>> ranks{{kMax, 3}, {1, 4}};
  EXPECT_EQ(reduced(ranks, ReduceType::kSum), (std::vector<int32_t>{std::numeric_limits<int32_t>::min(), 7}));
  EXPECT_EQ(reduced(ranks, ReduceType::kSum, 4.0), (std::vector<int32_t>{std::numeric_limits<int32_t>::min(), 28}));
  EXPECT_EQ(reduced(ranks, ReduceType::kSum, -4.0), (std::vector<int32_t>{kMax, -28}));
  EXPECT_EQ(reduced(ranks, ReduceType::kMul), (std::vector<int32_t>{kMax, 12}));
  EXPECT_EQ(reduced<int64_t>({{int64_t{1} << 62}, {4}}, ReduceType::kMul)[0], 0);  // 2^64 wraps to 0
  // bool: sum is or, product is and.
  const bool first[3] = {true, false, true}, second[3] = {false, false, true};
  const bool* bools[2] = {first, second};
  bool out[3];
  reduce_ranks<bool>(out, 2, [&](size_t q) { return bools[q]; }, 3, ReduceType::kSum, 1.0);
  EXPECT_TRUE(out[0] && !out[1] && out[2]);
  reduce_ranks<bool>(out, 2, [&](size_t q) { return bools[q]; }, 3, ReduceType::kMul, 1.0);
  EXPECT_TRUE(!out[0] && !out[1] && out[2]);
}

TEST(CommReductionTest, MinAndMaxPropagateNanTheLaterRanksOfTwo) {
  const float first = std::numeric_limits<float>::quiet_NaN();
  const float second = -first;
  const std::vector<std::vector<float>> ranks{{first, 1.0f, first, 2.0f}, {second, first, 3.0f, -0.0f}};
  for (ReduceType reduce : {ReduceType::kMin, ReduceType::kMax}) {
    const std::vector<float> out = reduced(ranks, reduce);
    EXPECT_EQ(bits(out[0]), bits(second));  // of two NaNs, the later rank's
    EXPECT_EQ(bits(out[1]), bits(first));
    EXPECT_EQ(bits(out[2]), bits(first));
  }
  EXPECT_EQ(reduced(ranks, ReduceType::kMax)[3], 2.0f);
  EXPECT_EQ(bits(reduced<float>({{0.0f}, {-0.0f}}, ReduceType::kMin)[0]), bits(0.0f));  // a tie keeps the earlier
}

TEST(CommReductionTest, TheKernelsExtremeKeepsTheFirstNanOfTwo) {
  const double first = std::numeric_limits<double>::quiet_NaN();
  const double second = -first;
  EXPECT_EQ(std::bit_cast<uint64_t>(Extreme<std::greater<>>{}(first, second)), std::bit_cast<uint64_t>(first));
  EXPECT_EQ(std::bit_cast<uint64_t>(Max{}(first, second)), std::bit_cast<uint64_t>(second));
  EXPECT_EQ(Extreme<std::greater<>>{}(1.0, 2.0), 2.0);
  EXPECT_EQ(Extreme<std::less<>>{}(1, 2), 1);
  EXPECT_EQ(saturate<int64_t>(1e300), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(saturate<int32_t>(-1e10), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(saturate<int32_t>(-2.75), -2);
}

// A call of `op` on one float32 input of shape.
struct Call {
  Call(ir::OpKind op, ir::CollectiveAttrs a, Shape shape, int device = 0)
      : attrs(std::move(a)), input(device::allocate_buffer(DType::kFloat32, std::move(shape))),
        inputs{input.get()}, call{op, attrs, GlobalOrdinal(device), inputs, {}} {}
  ir::CollectiveAttrs attrs;
  std::shared_ptr<device::Buffer> input;
  std::vector<const device::Buffer*> inputs;
  CollectiveCall call;
};

Fingerprint fingerprint_of(const CollectiveCall& call) {
  Fingerprint f;
  f.assign(call);
  return f;
}

TEST(CommFingerprintTest, SameOpsMatchAndAnyDifferenceShows) {
  ir::CollectiveAttrs sum;
  sum.reduce = ReduceType::kSum;
  const Call a(ir::OpKind::kAllReduce, sum, {4});
  EXPECT_EQ(fingerprint_of(a.call), fingerprint_of(Call(ir::OpKind::kAllReduce, sum, {4}, 1).call));
  EXPECT_FALSE(fingerprint_of(a.call) == fingerprint_of(Call(ir::OpKind::kAllReduce, sum, {5}).call));
  ir::CollectiveAttrs max = sum;
  max.reduce = ReduceType::kMax;
  EXPECT_FALSE(fingerprint_of(a.call) == fingerprint_of(Call(ir::OpKind::kAllReduce, max, {4}).call));
  ir::CollectiveAttrs grouped = sum;
  grouped.groups = {{0, 1}, {2, 3}};
  EXPECT_FALSE(fingerprint_of(a.call) == fingerprint_of(Call(ir::OpKind::kAllReduce, grouped, {4}).call));
  ir::CollectiveAttrs zero = sum, negative_zero = sum;
  zero.scale = 0.0;
  negative_zero.scale = -0.0;
  EXPECT_EQ(fingerprint_of(Call(ir::OpKind::kAllReduce, zero, {4}).call),
            fingerprint_of(Call(ir::OpKind::kAllReduce, negative_zero, {4}).call));
  // Past the inline words (many groups): compared just as well, and reused.
  ir::CollectiveAttrs many = sum, other = sum;
  for (int d = 0; d < 32; d += 2) many.groups.push_back({d, d + 1});
  other.groups = many.groups;
  other.groups.back() = {31, 30};
  Fingerprint reused = fingerprint_of(Call(ir::OpKind::kAllReduce, many, {4}).call);
  EXPECT_EQ(reused, fingerprint_of(Call(ir::OpKind::kAllReduce, many, {4}).call));
  EXPECT_FALSE(reused == fingerprint_of(Call(ir::OpKind::kAllReduce, other, {4}).call));
  reused.assign(a.call);
  EXPECT_EQ(reused, fingerprint_of(a.call));
  const Fingerprint same = fingerprint_of(a.call);
  EXPECT_TRUE(std::ranges::equal(reused.words(), same.words()));
  EXPECT_FALSE(std::ranges::equal(reused.words(), fingerprint_of(Call(ir::OpKind::kAllReduce, max, {4}).call).words()));
}

TEST(CommFingerprintTest, TheMismatchMessageNamesBothDevicesAndOps) {
  ir::CollectiveAttrs sum;
  sum.reduce = ReduceType::kSum;
  ir::CollectiveAttrs max = sum;
  max.reduce = ReduceType::kMax;
  const Call mine(ir::OpKind::kAllReduce, sum, {4}, 0), theirs(ir::OpKind::kAllReduce, max, {4}, 2);
  EXPECT_EQ(mismatch_message(3, {0, 2}, GlobalOrdinal(0), mine.call, GlobalOrdinal(2), theirs.call),
            "collective mismatch at #3 on group [0, 2]: device 0 runs all_reduce(sum, scale 1) of float32[4] but "
            "device 2 runs all_reduce(max, scale 1) of float32[4]");
  EXPECT_EQ(describe_at(mine.call, 3, {0, 2}), "all_reduce(sum, scale 1) of float32[4] #3 on group [0, 2]");
}

using Clock = Deadlines::Clock;

TEST(CommDescribeTest, ALongListShowsItsEndsAndStillTellsListsApart) {
  std::vector<int> sixteen(16);
  std::iota(sixteen.begin(), sixteen.end(), 0);
  EXPECT_EQ(describe_group(sixteen), "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]");
  std::vector<int> million(1'000'000);
  std::iota(million.begin(), million.end(), 0);
  const std::string text = describe_group(million);
  EXPECT_LT(text.size(), 100u) << text;
  EXPECT_EQ(text.rfind("[0, 1, 2, 3, ..., 999996, 999997, 999998, 999999] (1000000 in all, digest ", 0), 0u) << text;
  // Backends compare these texts to tell partitions apart: a change in the
  // middle must show.
  std::vector<int> other = million;
  std::swap(other[500], other[501]);
  EXPECT_NE(describe_group(other), text);
  EXPECT_NE(describe_groups({million}), describe_groups({other}));
  const std::string groups = describe_groups(ReplicaGroups(100'000, std::vector<int>{1, 2}));
  EXPECT_LT(groups.size(), 150u) << groups;
  EXPECT_EQ(groups.rfind("[[1, 2], [1, 2], [1, 2], [1, 2], ..., [1, 2], [1, 2], [1, 2], [1, 2]] (100000 in all", 0),
            0u) << groups;
}

TEST(CommDescribeTest, AShortListOfDevicesCountsWhatItLeavesOut) {
  ShortList few;
  for (int d = 0; d < 3; ++d) few.add(str_cat(d, " (no word)"));
  EXPECT_EQ(few.text(), "0 (no word), 1 (no word), 2 (no word)");
  ShortList many;
  for (int d = 0; d < 1000; ++d) many.add(str_cat(d, " (no word)"));
  EXPECT_EQ(many.text().rfind("0 (no word), 1 (no word), ", 0), 0u);
  EXPECT_TRUE(many.text().ends_with(", 7 (no word) and 992 more")) << many.text();
}

TEST(CommDeadlinesTest, WarnsOnceWhenDueThenTimesOut) {
  const CollectiveTimeouts timeouts{10.0, 20.0};
  const Clock::time_point now = Clock::now();
  Deadlines fresh(timeouts, now);
  EXPECT_FALSE(fresh.warning_due());
  EXPECT_FALSE(fresh.timed_out());
  EXPECT_LE(fresh.next(), now + std::chrono::seconds(10));

  Deadlines late(timeouts, now - std::chrono::seconds(15));
  EXPECT_TRUE(late.warning_due());
  EXPECT_FALSE(late.warning_due());  // once
  EXPECT_FALSE(late.timed_out());
  EXPECT_EQ(late.next(), now - std::chrono::seconds(15) + std::chrono::seconds(20));

  Deadlines over(timeouts, now - std::chrono::seconds(25));
  EXPECT_TRUE(over.timed_out());
  EXPECT_EQ(over.timeout_seconds(), 20.0);
  EXPECT_EQ(over.warn_seconds(), 10.0);
}

TEST(CommDeadlinesTest, ATimeoutNoLaterThanTheWarningGivesNoWarning) {
  const Clock::time_point long_ago = Clock::now() - std::chrono::seconds(100);
  Deadlines deadlines(CollectiveTimeouts{5.0, 5.0}, long_ago);
  EXPECT_FALSE(deadlines.warning_due());
  EXPECT_TRUE(deadlines.timed_out());
  EXPECT_EQ(deadlines.next(), long_ago + std::chrono::seconds(5));
}

TEST(CommDeadlinesTest, AHugeTimeoutMeansNeverAndSaysItsValue) {
  // 1e300 s does not fit the clock: it must neither overflow (undefined)
  // nor wrap into the past (an instant timeout).
  const Clock::time_point now = Clock::now();
  Deadlines deadlines(CollectiveTimeouts{1e299, 1e300}, now);
  EXPECT_FALSE(deadlines.warning_due());
  EXPECT_FALSE(deadlines.timed_out());
  EXPECT_GT(deadlines.next(), now + std::chrono::hours(24 * 365));
  EXPECT_EQ(deadlines.timeout_seconds(), 1e300);
}

TEST(CommDeadlinesTest, TheWarningIsPrintedInOnePlaceAndTheTimeoutIsAnError) {
  const std::string warning =
      slow_wait_warning(GlobalOrdinal(1), 0.05, "all_reduce #3 on group [0, 1]", "0 (is elsewhere)");
  EXPECT_EQ(warning, "device 1 has waited 0.05 s in all_reduce #3 on group [0, 1]; missing devices: 0 (is elsewhere)");
  ::testing::internal::CaptureStderr();
  report_warning(warning);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "ordo: " + warning + "\n");
  const device::Failure timeout = timeout_failure(GlobalOrdinal(1), 300, "all_reduce #3 on group [0, 1]", "0");
  EXPECT_EQ(timeout.code, ErrorCode::kCollectiveTimeout);
  EXPECT_EQ(timeout.message, "device 1 waited 300 s in all_reduce #3 on group [0, 1]; missing devices: 0");
}

TEST(CommFailureNewsTest, AbsenceCountsOnlyIfNoClearCameSinceItWasAsked) {
  DeviceStatus status;
  EXPECT_FALSE(status.any_gone());
  const uint64_t epoch = status.absence_epoch(GlobalOrdinal(1));
  status.clear_absent(GlobalOrdinal(1));  // a clear between asking and marking
  status.mark_absent(GlobalOrdinal(1), "its spawn function returned", epoch);
  EXPECT_FALSE(status.any_gone());
  status.mark_absent(GlobalOrdinal(1), "its spawn function returned", status.absence_epoch(GlobalOrdinal(1)));
  EXPECT_EQ(status.gone_reason(GlobalOrdinal(1)), "its spawn function returned");
  status.mark_gone(GlobalOrdinal(1), Gone::kFailed, "its thread died");
  EXPECT_EQ(status.gone_reason(GlobalOrdinal(1)), "its thread died");  // gone for good first
  status.clear_absent(GlobalOrdinal(1));
  EXPECT_EQ(status.gone_reason(GlobalOrdinal(1)), "its thread died");
  EXPECT_TRUE(status.any_gone());
  EXPECT_EQ(status.gone_reason(GlobalOrdinal(0)), std::nullopt);
}

TEST(CommFailureNewsTest, AnInterruptEndsOnlyWithItsOwnId) {
  DeviceStatus status;
  const uint64_t first = status.interrupt(GlobalOrdinal(2), "Ctrl-C");
  const uint64_t second = status.interrupt(GlobalOrdinal(2), "Ctrl-C again");
  status.end_interrupt(GlobalOrdinal(2), first);
  EXPECT_EQ(status.interrupt_reason(GlobalOrdinal(2)), "Ctrl-C again");
  status.end_interrupt(GlobalOrdinal(2), second);
  EXPECT_FALSE(status.any_interrupted());
  EXPECT_EQ(status.interrupt_reason(GlobalOrdinal(2)), std::nullopt);
}

TEST(CommFailureNewsTest, MessagesSayWhoAndWhy) {
  const device::Failure gone = gone_failure("all_reduce #3 on group [0, 1]", GlobalOrdinal(1), "its thread died",
                                               "before any collective");
  EXPECT_EQ(gone.code, ErrorCode::kCollective);
  EXPECT_EQ(gone.message,
            "all_reduce #3 on group [0, 1] cannot complete: device 1 is gone (its thread died), before any collective");
  EXPECT_EQ(abandoned_failure(GlobalOrdinal(2), ir::OpKind::kAllGather, 4, {0, 2}, "its graph failed").message,
            "device 2 will not join all_gather #4 on group [0, 2]: its graph failed");
  EXPECT_EQ(interrupted_failure("all_reduce #0 on group [0, 1]", GlobalOrdinal(0), std::string("Ctrl-C"), "1").message,
            "all_reduce #0 on group [0, 1] was interrupted on device 0: Ctrl-C; devices that had not arrived: 1");
  EXPECT_EQ(interrupted_failure("x", GlobalOrdinal(0), std::nullopt, "1").message,
            "x was interrupted on device 0: the thread that waited in it was interrupted; devices that had not "
            "arrived: 1");
}

}  // namespace
}  // namespace ordo::comm
