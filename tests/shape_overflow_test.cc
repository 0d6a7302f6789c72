// Shapes whose element or byte count does not fit int64 are refused when an
// op is called, naming the dimension and why; tensors that fit int64 but not
// memory fail with OutOfMemoryError where other run-time failures surface,
// and the runtime stays usable. Huge inputs are lazy constants (full): they
// are never allocated, because every call here is refused before anything
// runs.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "lazy/trace.h"
#include "reference.h"

namespace ordo {
namespace {

constexpr DType kBool = DType::kBool, kInt32 = DType::kInt32, kInt64 = DType::kInt64;
constexpr DType kFloat32 = DType::kFloat32, kFloat64 = DType::kFloat64;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t k2To32 = int64_t{1} << 32, k2To59 = int64_t{1} << 59, k2To61 = int64_t{1} << 61,
                  k2To62 = int64_t{1} << 62;

std::string refusal(const std::function<void()>& call) {
  try {
    call();
  } catch (const DTypeError& e) {
    return std::string("unexpected DTypeError: ") + e.what();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "accepted";
}

TEST(CheckedShapeSizeTest, CountsElementsAndBytes) {
  const auto size = [](std::vector<int64_t> shape, DType dtype) {
    const ShapeSize s = checked_shape_size("test", shape, dtype);
    return std::vector<int64_t>{s.numel, s.nbytes};
  };
  EXPECT_EQ(size({}, kFloat32), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(size({2, 3}, kFloat64), (std::vector<int64_t>{6, 48}));
  EXPECT_EQ(size({0, 5}, kInt32), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(size({4, 0, k2To59}, kBool), (std::vector<int64_t>{0, 0}));
  // Right at the limits: every byte count up to INT64_MAX is accepted.
  EXPECT_EQ(size({kMax}, kBool), (std::vector<int64_t>{kMax, kMax}));
  EXPECT_EQ(size({k2To61 - 1, 4}, kBool), (std::vector<int64_t>{kMax - 3, kMax - 3}));
  EXPECT_EQ(size({k2To59, 2}, kInt32), (std::vector<int64_t>{k2To62 / 4, k2To62}));
}

TEST(CheckedShapeSizeTest, RefusesNamingTheDimensionAndWhy) {
  const auto refused = [](std::vector<int64_t> shape, DType dtype) {
    return refusal([&] { checked_shape_size("op", shape, dtype); });
  };
  EXPECT_EQ(refused({2, -3}, kFloat32), "op: dimension 1 of shape [2, -3] is -3; dimensions must not be negative");
  // A negative dimension is the plainer mistake, even after an overflowing one.
  EXPECT_EQ(refused({k2To62, k2To62, -1}, kFloat32),
            "op: dimension 2 of shape [4611686018427387904, 4611686018427387904, -1] is -1; "
            "dimensions must not be negative");
  EXPECT_EQ(refused({k2To62 + 1, 4}, kFloat32),
            "op: shape [4611686018427387905, 4] has 18446744073709551620 elements, more than int64 can hold "
            "(9223372036854775807); dimension 1 (4) takes the count past it");
  EXPECT_EQ(refused({k2To32, k2To32}, kBool),
            "op: shape [4294967296, 4294967296] has 18446744073709551616 elements, more than int64 can hold "
            "(9223372036854775807); dimension 1 (4294967296) takes the count past it");
  EXPECT_EQ(refused({k2To62, 2}, kBool),
            "op: shape [4611686018427387904, 2] has 9223372036854775808 elements, more than int64 can hold "
            "(9223372036854775807); dimension 1 (2) takes the count past it");
  EXPECT_EQ(refused({kMax}, kInt32),
            "op: shape [9223372036854775807] of int32 needs 36893488147419103228 bytes (4 per element), more "
            "than int64 can hold (9223372036854775807)");
  EXPECT_EQ(refused({k2To61}, kFloat32),
            "op: shape [2305843009213693952] of float32 needs 9223372036854775808 bytes (4 per element), more "
            "than int64 can hold (9223372036854775807)");
  // numpy refuses these too: the strides of an empty shape must fit as well.
  EXPECT_EQ(refused({0, k2To62, 4}, kBool),
            "op: shape [0, 4611686018427387904, 4] is empty, but its nonzero dimensions multiply to "
            "18446744073709551616, more than int64 can hold (9223372036854775807); dimension 2 (4) takes "
            "the count past it");
  EXPECT_EQ(refused({k2To61, 0}, kInt64),
            "op: shape [2305843009213693952, 0] of int64 is empty, but its nonzero dimensions would need "
            "18446744073709551616 bytes (8 per element), more than int64 can hold (9223372036854775807)");
  // Past 128 bits the count is only bounded.
  EXPECT_NE(refused({kMax, kMax, kMax}, kBool).find("has more than 340282366920938463463374607431768211455 elements"),
            std::string::npos);
}

using ShapeOverflowTest = testing::RuntimeTest<4>;

TEST_F(ShapeOverflowTest, CreationRefusesShapesThatOverflow) {
  testing::RejectedCalls rejected;
  rejected.invalid("full: shape [4294967296, 4294967296] has 18446744073709551616 elements",
                   [] { return ones({k2To32, k2To32}); });
  rejected.invalid("full: shape [4611686018427387904] of float64 needs 36893488147419103232 bytes",
                   [] { return zeros({k2To62}, kFloat64); });
  rejected.invalid("full: dimension 0 of shape [-1, 2] is -1", [] { return full({-1, 2}, 3.0, kFloat32); });
  // Random tensors and host data are allocated when made: refused before that.
  rejected.invalid("rand_uniform: shape [4611686018427387904] of float32 needs 18446744073709551616 bytes",
                   [] { return rand_uniform({k2To62}, 0); });
  rejected.invalid("rand_normal: shape [2305843009213693952] of float64 needs 18446744073709551616 bytes",
                   [] { return rand_normal({k2To61}, 0, 0.0, 1.0, kFloat64); });
  const float value = 1;
  rejected.invalid("from_host: shape [4611686018427387905, 4] has 18446744073709551620 elements",
                   [&] { return from_host(&value, kFloat32, {k2To62 + 1, 4}); });
  // 4 values would match the wrapped count 4 of this shape.
  rejected.invalid("from_vector: shape [4611686018427387905, 4] has 18446744073709551620 elements",
                   [] { return from_vector<float>({1, 2, 3, 4}, {k2To62 + 1, 4}); });
}

TEST_F(ShapeOverflowTest, ArangeRefusesCountsPastInt64AndNonFiniteNumbers) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  testing::RejectedCalls rejected;
  rejected.invalid("arange: [0, 1e+20) by step 1 has 1e+20 elements, more than int64 can hold",
                   [] { return arange(0.0, 1e20, 1.0, kFloat64); });
  rejected.invalid("arange: [0, 1e+300) by step 1e-300 has inf elements",
                   [] { return arange(0.0, 1e300, 1e-300, kFloat64); });
  rejected.invalid("arange: [-9223372036854775808, 9223372036854775807) by step 1 has 18446744073709551615 elements",
                   [] { return arange(std::numeric_limits<int64_t>::min(), kMax); });
  // Counts that fit int64 but whose bytes do not: the shape check.
  rejected.invalid("arange: shape [4611686018427387904] of int64 needs 36893488147419103232 bytes",
                   [] { return arange(0, k2To62); });
  rejected.invalid("arange: start must be finite, got nan", [&] { return arange(nan, 1.0, 1.0, kFloat32); });
  rejected.invalid("arange: stop must be finite, got inf", [&] { return arange(0.0, inf, 1.0, kFloat32); });
  rejected.invalid("arange: stop must be finite, got -inf", [&] { return arange(0.0, -inf, -1.0, kFloat32); });
  rejected.invalid("arange: step must be finite, got inf", [&] { return arange(0.0, 10.0, inf, kFloat32); });
  rejected.invalid("arange: step must be finite, got nan", [&] { return arange(0.0, 10.0, nan, kFloat32); });
  rejected.invalid("arange: step must not be zero", [] { return arange(0.0, 10.0, 0.0, kFloat32); });
}

TEST_F(ShapeOverflowTest, IntegerRangesAreCountedExactly) {
  // In double both bounds round to 2^60: the range would be empty.
  const int64_t base = int64_t{1} << 60;
  EXPECT_EQ(arange(base, base + 3).to_vector<int64_t>(), (std::vector<int64_t>{base, base + 1, base + 2}));
  EXPECT_EQ(arange(base + 3, base, -2).to_vector<int64_t>(), (std::vector<int64_t>{base + 3, base + 1}));
  EXPECT_EQ(arange(0, 10, 3).to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(arange(0, -10, 3).numel(), 0);
  EXPECT_EQ(arange(5, 5).numel(), 0);
  // Steps as large as the span: one element, no overflow in the count.
  EXPECT_EQ(arange(std::numeric_limits<int64_t>::min(), kMax, kMax).to_vector<int64_t>(),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min(), -1, kMax - 1}));
}

TEST_F(ShapeOverflowTest, MovementOpsRefuseShapesThatOverflow) {
  const Tensor four = arange(0, 4);
  const Tensor cell = ones({1, 1});
  const Tensor huge_flags = ones({k2To62}, kBool);  // 4 EiB: fits, and never runs here
  const Tensor empty_wide = zeros({0, k2To62}, kBool);
  // An index of 2^33 elements picking along a dimension of 2^31 columns.
  const Tensor rows = ones({1, int64_t{1} << 31}, kBool);
  const Tensor picks = zeros({int64_t{1} << 33}, kInt32);
  testing::RejectedCalls rejected;
  // The count wrapped to 4, equal to the tensor's.
  rejected.invalid(
      "reshape: shape [4611686018427387905, 4] has 18446744073709551620 elements, more than int64 can hold "
      "(9223372036854775807); dimension 1 (4) takes the count past it",
      [&] { return reshape(four, {k2To62 + 1, 4}); });
  rejected.invalid("reshape: cannot infer -1 in [-1, 4611686018427387905, 4] for 4 elements",
                   [&] { return reshape(four, {-1, k2To62 + 1, 4}); });
  rejected.invalid("reshape: shape [0, 4611686018427387904, 4] is empty, but its nonzero dimensions multiply",
                   [&] { return reshape(empty_wide, {0, k2To62, 4}); });
  rejected.invalid("broadcast_to: shape [4611686018427387905, 4] has 18446744073709551620 elements",
                   [&] { return broadcast_to(cell, {k2To62 + 1, 4}); });
  rejected.invalid("broadcast_to: dimension 1 of shape [2, -4] is -4", [&] { return broadcast_to(cell, {2, -4}); });
  rejected.invalid(
      "concat: dimension 0 of the result would be the sum of the inputs' sizes [4611686018427387904, "
      "4611686018427387904], more than int64 can hold (9223372036854775807)",
      [&] { return concat({huge_flags, huge_flags}, 0); });
  rejected.invalid("concat: dimension 1 of the result would be the sum of the inputs' sizes",
                   [&] { return concat({empty_wide, empty_wide}, 1); });
  rejected.invalid("one_hot: shape [1, 4611686018427387904] of int64 needs 36893488147419103232 bytes",
                   [] { return one_hot(from_vector<int64_t>({0}, {1}), k2To62, kInt64); });
  rejected.invalid("one_hot: shape [4, 4611686018427387904] has 18446744073709551616 elements",
                   [&] { return one_hot(four, k2To62, kBool); });
  rejected.invalid("index_select: shape [8589934592, 2147483648] has 18446744073709551616 elements",
                   [&] { return index_select(rows, 0, picks); });
}

TEST_F(ShapeOverflowTest, ComputedResultShapesAreChecked) {
  const Tensor column = ones({k2To32, 1}, kBool);
  const Tensor row = ones({1, k2To32}, kBool);
  const Tensor tall = ones({k2To32, 2}), wide = ones({2, k2To32});
  const Tensor batch = ones({k2To32, 1, 1}), matrices = ones({1, 1, k2To32});
  testing::RejectedCalls rejected;
  rejected.invalid("logical_and: shape [4294967296, 4294967296] has 18446744073709551616 elements",
                   [&] { return logical_and(column, row); });
  rejected.invalid("where: shape [4294967296, 4294967296] has 18446744073709551616 elements",
                   [&] { return where(column, row, row); });
  rejected.invalid("matmul: shape [4294967296, 4294967296] has 18446744073709551616 elements",
                   [&] { return matmul(tall, wide); });
  rejected.invalid("matmul: shape [4294967296, 1, 4294967296] has 18446744073709551616 elements",
                   [&] { return matmul(batch, matrices); });
}

// The check sits in tracing itself: a builder that forgot it (here a made-up
// neg whose result has a huge shape) is still refused.
TEST_F(ShapeOverflowTest, TracingRefusesAnyOutputShapeThatOverflows) {
  const Tensor x = ones({2});
  testing::RejectedCalls rejected;
  rejected.invalid("neg: shape [4611686018427387905, 4] has 18446744073709551620 elements", [&] {
    return lazy::trace1(ir::OpKind::kNeg, {&x}, {kFloat32, {k2To62 + 1, 4}});
  });
  rejected.invalid("full: shape [4294967296, 4294967296] has", [] {
    return lazy::trace_leaf(ir::OpKind::kFull, LocalDevice(0), {kFloat32, {k2To32, k2To32}}, {{0}, {0.0}, false});
  });
}

TEST_F(ShapeOverflowTest, CollectivesRefuseResultShapesThatOverflowAndKeepTheToken) {
  const Tensor flags = ones({k2To62}, kBool);
  const Tensor empty = zeros({0, k2To62}, kBool);
  testing::RejectedCalls rejected;
  rejected.invalid(
      "all_gather: dimension 0 of the result would be 4611686018427387904 (of shape [4611686018427387904]) "
      "times the group size 4, more than int64 can hold (9223372036854775807)",
      [&] { return all_gather(flags, 0); });
  rejected.invalid("all_gather: dimension 0 of the result would be 4611686018427387904", [&] {
    return all_gather(flags, 0, {{0, 1}, {2, 3}});
  });
  // Splitting the 0 leaves the count at 0 while dimension 1 grows past int64.
  rejected.invalid("all_to_all: dimension 1 of the result would be 4611686018427387904 (of shape [0, "
                   "4611686018427387904]) times the group size 4",
                   [&] { return all_to_all(empty, 0, 1, 4); });
  EXPECT_FALSE(get_cc_token(0).defined()) << "a refused collective changed the token slot";
  // The same collectives with shapes that fit are accepted.
  EXPECT_EQ(all_gather(ones({k2To62 / 4}, kBool), 0).shape(), (Shape{k2To62}));
  EXPECT_EQ(all_to_all(zeros({0, k2To62 / 4}, kBool), 0, 1, 4).shape(), (Shape{0, k2To62}));
  drop_pending_graph(0);  // never run: the peers do not take part
}

// The kernel multiplied the axis's stride (5) by the step: 5 * INT64_MAX
// overflowed, undefined behaviour that UndefinedBehaviorSanitizer reports
// (scripts/sanitize.sh address), for a stride one element never uses.
TEST_F(ShapeOverflowTest, SliceWithAHugeStepAlongAnOuterAxis) {
  const Tensor x = reshape(arange(0, 20, 1, kInt32), {4, 5});
  const Tensor first_row = slice(x, 0, 1, 4, kMax);
  EXPECT_EQ(first_row.shape(), (Shape{1, 5}));
  EXPECT_EQ(first_row.to_vector<int32_t>(), (std::vector<int32_t>{5, 6, 7, 8, 9}));
}

// 2^59 float32 elements are 2 EiB, more than any address space: the
// allocation fails at run time on every machine.
TEST_F(ShapeOverflowTest, AFailedAllocationIsAnOutOfMemoryErrorAndTheRuntimeGoesOn) {
  const Tensor total = sum(ones({k2To59}));
  try {
    total.item<float>();
    ADD_FAILURE() << "reading a value that cannot be allocated succeeded";
  } catch (const OutOfMemoryError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("full (node %0"), std::string::npos) << message;
    EXPECT_NE(message.find("failed on device 0: cannot allocate 2 EiB (2305843009213693952 bytes) for a float32 "
                           "tensor of shape [576460752303423488]: out of memory"),
              std::string::npos)
        << message;
  }
  // The device's next mark_step reports it too, once, like any run-time failure.
  EXPECT_THROW(mark_step(), OutOfMemoryError);
  mark_step();
  const Tensor small = sum(arange(0, 5, 1, kFloat32));
  EXPECT_EQ(small.item<float>(), 10.0f);
  mark_step();
}

TEST_F(ShapeOverflowTest, AFailedAllocationWhenTracedNamesTheOpAndDevice) {
  set_current_device(2);
  try {
    rand_uniform({k2To59}, 7);
    ADD_FAILURE() << "a random tensor that cannot be allocated was made";
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(std::string(e.what()),
              "rand_uniform on device 2: cannot allocate 2 EiB (2305843009213693952 bytes) for a float32 tensor of "
              "shape [576460752303423488]: out of memory");
  }
  EXPECT_EQ(rand_uniform({3}, 7).numel(), 3);
  mark_step();
}

}  // namespace
}  // namespace ordo
