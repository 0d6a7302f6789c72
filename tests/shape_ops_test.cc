// Reductions, matmul and movement ops against plain reference loops
// (reference.h): negative axes, axes sets, keepdim, zero-size and 0-d shapes.
// Errors are in op_errors_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "reference.h"

namespace ordo {
namespace {

using testing::broadcast_map;
using testing::broadcast_offset;
using testing::broadcast_shape;
using testing::describe;
using testing::HostArray;
using testing::Index;
using testing::kAllDTypes;
using testing::matmul_reference;
using testing::Odometer;
using testing::permute_reference;
using testing::pick;
using testing::sample;
using testing::to_tensor;
using testing::Values;
using testing::wrap_axis;

using ShapeOpsTest = testing::OpsTest;
INSTANTIATE_TEST_SUITE_P(ReadModes, ShapeOpsTest, testing::all_read_modes(),
                         testing::read_mode_name);

constexpr DType kBool = DType::kBool, kInt32 = DType::kInt32, kInt64 = DType::kInt64,
                kFloat32 = DType::kFloat32, kFloat64 = DType::kFloat64;

using Axes = std::vector<int64_t>;

HostArray values_of(Shape shape, Values values) { return {std::move(shape), std::move(values)}; }

std::string describe_axes(const Axes& axes, bool keepdim) {
  return "axes " + shape_to_string(axes) + (keepdim ? " keepdim" : "");
}

// ---- Reductions ----

enum class ReduceResult { kSum, kMean, kSame, kIndex };

struct ReduceCase {
  const char* name;
  Tensor (*op)(const Tensor&, const Axes&, bool, Caller);
  double (*reference)(const Values&);  // the reduced values in row-major order
  ReduceResult result;
  bool needs_elements;  // no identity: reducing an empty axis is an error
};

const ReduceCase kReduceCases[] = {
    {"sum", &ordo::sum, [](const Values& v) { return std::accumulate(v.begin(), v.end(), 0.0); },
     ReduceResult::kSum, false},
    {"mean", &ordo::mean,
     [](const Values& v) {
       return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
     },
     ReduceResult::kMean, false},
    {"max", &ordo::max, [](const Values& v) { return *std::max_element(v.begin(), v.end()); },
     ReduceResult::kSame, true},
    {"min", &ordo::min, [](const Values& v) { return *std::min_element(v.begin(), v.end()); },
     ReduceResult::kSame, true},
    // std::max_element returns the first of equal maxima.
    {"argmax", &ordo::argmax,
     [](const Values& v) {
       return static_cast<double>(std::max_element(v.begin(), v.end()) - v.begin());
     },
     ReduceResult::kIndex, true},
};

DType reduce_result(ReduceResult result, DType input) {
  switch (result) {
    case ReduceResult::kSum:
      return is_floating(input) ? input : kInt64;
    case ReduceResult::kMean:
      return is_floating(input) ? input : kFloat32;
    case ReduceResult::kSame:
      return input;
    case ReduceResult::kIndex:
      break;
  }
  return kInt64;
}

bool reduces_an_empty_axis(const Shape& shape, const Axes& axes) {
  if (axes.empty()) return shape_numel(shape) == 0;  // every axis
  for (int64_t axis : axes) {
    if (shape[wrap_axis(axis, shape.size())] == 0) return true;
  }
  return false;
}

class ReductionTest : public testing::OpsTest {
 protected:
  // Every reduction of x over every axes set, with and without keepdim.
  void expect_reductions(const HostArray& x, DType dtype, const std::vector<Axes>& axes_sets) {
    const Tensor tx = to_tensor(x, dtype);
    for (const ReduceCase& c : kReduceCases) {
      for (const Axes& axes : axes_sets) {
        for (bool keepdim : {false, true}) {
          const std::string what = std::string(c.name) + " of " + describe(x.shape, dtype) +
                                   " over " + describe_axes(axes, keepdim);
          if (c.needs_elements && reduces_an_empty_axis(x.shape, axes)) {
            EXPECT_THROW(c.op(tx, axes, keepdim, Caller::current()), InvalidArgument) << what;
            continue;
          }
          expect(what, c.op(tx, axes, keepdim, Caller::current()), reduce_result(c.result, dtype),
                 testing::reduce_reference(x, axes, keepdim, c.reference));
        }
      }
    }
  }
};
INSTANTIATE_TEST_SUITE_P(ReadModes, ReductionTest, testing::all_read_modes(),
                         testing::read_mode_name);

TEST_P(ReductionTest, EveryAxesSetOfA3DTensor) {
  const std::vector<Axes> axes_sets = {{},     {0},    {1},      {2},    {-1},     {0, 1},
                                       {0, 2}, {2, 0}, {-3, -1}, {1, 2}, {0, 1, 2}};
  for (DType dtype : kAllDTypes) expect_reductions(sample({2, 3, 4}, dtype), dtype, axes_sets);
  verify();
}

TEST_P(ReductionTest, InterleavedAxesOfA4DTensor) {
  const std::vector<Axes> axes_sets = {{1, 3}, {0, 2}, {0, 3}, {-3, -2}, {0, 1, 3}};
  for (DType dtype : {kFloat32, kInt64}) {
    expect_reductions(sample({2, 3, 2, 3}, dtype, 1), dtype, axes_sets);
  }
  verify();
}

TEST_P(ReductionTest, ZeroSizeAnd0dInputs) {
  // Reducing the empty axis: sum gives 0, mean NaN, max/min/argmax throw.
  for (DType dtype : {kFloat32, kInt32, kBool}) {
    expect_reductions(sample({2, 0, 3}, dtype), dtype, {{}, {1}, {-2}, {0, 1}, {0}, {2}});
    expect_reductions(sample({}, dtype, 1), dtype, {{}});
  }
  verify();
}

TEST_P(ReductionTest, ArgmaxCountsRowMajorOverTheReducedAxesAndPicksTheFirstTie) {
  // x[i][j][k]: for j = 0 the maximum 7 is at (i, k) = (1, 2), flat index
  // 1 * 3 + 2 = 5; for j = 1 the maximum 9 appears three times, first at (0, 0).
  const Tensor x = to_tensor(values_of({2, 2, 3}, {1, 2, 3, 9, 1, 9, 0, 4, 7, 9, 2, 2}), kInt32);
  expect("over {0, 2}", argmax(x, {0, 2}), kInt64, values_of({2}, {5, 0}));
  expect("over {2, 0} keepdim", argmax(x, {2, 0}, true), kInt64, values_of({1, 2, 1}, {5, 0}));
  expect("over all", argmax(x), kInt64, values_of({}, {3}));
  expect("over -1", argmax(x, {-1}), kInt64, values_of({2, 2}, {2, 0, 2, 0}));
  expect("constant", argmax(to_tensor(values_of({4}, {3, 3, 3, 3}), kFloat32)), kInt64,
         values_of({}, {0}));
  const Tensor with_nan = to_tensor(values_of({4}, {1, NAN, 5, NAN}), kFloat32);
  expect("first NaN", argmax(with_nan), kInt64, values_of({}, {1}));
  expect("max with NaN", max(with_nan), kFloat32, values_of({}, {NAN}));
  verify();
}

TEST_P(ReductionTest, IntegerSumsAreInt64) {
  const Tensor big = to_tensor(values_of({2}, {2147483647, 1}), kInt32);
  expect("int32", sum(big), kInt64, values_of({}, {2147483648.0}));
  expect("bool", sum(to_tensor(values_of({2, 2}, {1, 1, 0, 1}), kBool), {0}), kInt64,
         values_of({2}, {1, 2}));
  expect("int32 mean", mean(big), kFloat32, values_of({}, {1073741824}));
  verify();
}

// The vectorized paths (kernels/reduce.cc): rows shorter and longer than a
// vector pair, than a chunk (4096) and than a block of chunks (65536, split
// across free cores), 1-wide dims, columns split in blocks of 256, and
// leading, middle and trailing axes.
TEST_P(ReductionTest, LongRowsOddSizesAndEveryAxesLayout) {
  const std::pair<Shape, std::vector<Axes>> cases[] = {
      {{70001}, {{}, {0}}},
      {{3, 4099}, {{}, {0}, {1}}},
      {{300, 301}, {{0}, {1}}},
      {{5, 1, 33}, {{0}, {1}, {2}, {0, 2}, {1, 2}}},
      {{2, 37, 3}, {{0}, {1}, {2}, {0, 2}}},
      {{1, 1}, {{}, {0}, {1}}},
  };
  for (DType dtype : {kFloat32, kFloat64, kInt32, kBool}) {
    for (const auto& [shape, axes_sets] : cases) expect_reductions(sample(shape, dtype, 3), dtype, axes_sets);
  }
  verify();
}

// ---- Matmul ----

TEST_P(ShapeOpsTest, MatmulFollowsNumpy) {
  struct Case {
    Shape a, b, out;
    DType a_dtype, b_dtype, out_dtype;
  };
  const Case cases[] = {
      {{3, 4}, {4, 2}, {3, 2}, kFloat32, kFloat32, kFloat32},
      {{2, 1, 3, 4}, {5, 4, 2}, {2, 5, 3, 2}, kFloat32, kFloat32, kFloat32},
      {{4}, {4, 2}, {2}, kFloat64, kFloat64, kFloat64},
      {{3, 4}, {4}, {3}, kFloat32, kFloat32, kFloat32},
      {{4}, {4}, {}, kFloat32, kFloat32, kFloat32},
      {{3, 0}, {0, 2}, {3, 2}, kFloat32, kFloat32, kFloat32},
      {{2, 3, 4}, {4}, {2, 3}, kInt32, kInt32, kInt32},
      {{4}, {2, 4, 3}, {2, 3}, kFloat32, kFloat32, kFloat32},
      {{0, 3, 4}, {4, 2}, {0, 3, 2}, kFloat32, kFloat32, kFloat32},
      {{2, 3}, {3, 2}, {2, 2}, kInt64, kInt64, kInt64},
      {{2, 3}, {3, 2}, {2, 2}, kInt32, kFloat32, kFloat32},
      {{2, 3}, {3, 1}, {2, 1}, kBool, kInt64, kInt64},
      {{0}, {0}, {}, kFloat64, kFloat64, kFloat64},
      // Rows longer than a vectorized block, with a tail.
      {{5, 9}, {9, 19}, {5, 19}, kFloat32, kFloat32, kFloat32},
      {{2, 3, 10}, {10, 17}, {2, 3, 17}, kInt32, kInt32, kInt32},
      {{3, 12}, {2, 12, 9}, {2, 3, 9}, kInt64, kFloat64, kFloat64},
  };
  for (const Case& c : cases) {
    const HostArray a = sample(c.a, c.a_dtype, 1), b = sample(c.b, c.b_dtype, 2);
    expect(describe(c.a, c.a_dtype) + " @ " + describe(c.b, c.b_dtype),
           matmul(to_tensor(a, c.a_dtype), to_tensor(b, c.b_dtype)), c.out_dtype,
           matmul_reference(a, b, c.out));
  }
  verify();
}

// ---- Movement ----

TEST_P(ShapeOpsTest, ReshapeKeepsRowMajorOrder) {
  struct Case {
    Shape from, to, out;
  };
  const Case cases[] = {
      {{2, 3}, {3, 2}, {3, 2}},     {{2, 3}, {-1}, {6}},
      {{2, 3, 4}, {4, -1}, {4, 6}}, {{1}, {}, {}},
      {{}, {1, 1}, {1, 1}},         {{}, {-1}, {1}},
      {{0, 3}, {3, 0}, {3, 0}},     {{0, 3}, {-1, 3}, {0, 3}},
      {{2, 0}, {-1}, {0}},          {{6}, {1, -1, 1}, {1, 6, 1}},
  };
  for (DType dtype : {kFloat32, kBool, kInt64}) {
    for (const Case& c : cases) {
      const HostArray x = sample(c.from, dtype);
      expect(describe(c.from, dtype) + " to " + shape_to_string(c.to),
             reshape(to_tensor(x, dtype), c.to), dtype, values_of(c.out, x.values));
    }
  }
  verify();
}

TEST_P(ShapeOpsTest, PermuteAndTransposeMoveAxes) {
  const HostArray x = sample({2, 3, 4}, kFloat64);
  const Tensor t = to_tensor(x, kFloat64);
  for (const Axes& dims :
       std::vector<Axes>{{2, 0, 1}, {-1, 0, 1}, {0, 1, 2}, {1, 0, 2}, {2, 1, 0}}) {
    expect("permute " + shape_to_string(dims), permute(t, dims), kFloat64,
           permute_reference(x, dims));
  }
  expect("transpose(0, 2)", transpose(t, 0, 2), kFloat64, permute_reference(x, {2, 1, 0}));
  expect("transpose(-1, -2)", transpose(t, -1, -2), kFloat64, permute_reference(x, {0, 2, 1}));
  expect("transpose(1, 1)", transpose(t, 1, 1), kFloat64, x);
  const HostArray empty = sample({0, 2}, kInt32);
  expect("transpose of [0, 2]", transpose(to_tensor(empty, kInt32), 0, 1), kInt32,
         permute_reference(empty, {1, 0}));
  const HostArray scalar = sample({}, kBool);
  expect("permute of 0-d", permute(to_tensor(scalar, kBool), {}), kBool, scalar);
  verify();
}

// Permutes that move the input's contiguous dim away from the last one are
// copied in tiles of 8 x 8: sizes off the tile, below it, batched planes,
// the contiguous dim moved to the middle, size-1 dims, every dtype.
TEST_P(ShapeOpsTest, PermutesCopiedInTilesMatchTheReference) {
  struct Case {
    Shape shape;
    Axes dims;
  };
  const Case cases[] = {
      {{37, 53}, {1, 0}},            // neither side a whole number of tiles
      {{64, 64}, {1, 0}},            // whole tiles, power-of-two rows
      {{8, 3}, {1, 0}},              // less than a tile one way
      {{1, 9}, {1, 0}},              // a 1-wide side
      {{3, 17, 11}, {0, 2, 1}},      // a batch of planes
      {{5, 9, 13}, {2, 0, 1}},       // the contiguous dim first
      {{4, 6, 10}, {1, 2, 0}},       // the contiguous dim in the middle
      {{2, 3, 1, 12, 5}, {3, 1, 0, 4, 2}},
  };
  for (DType dtype : kAllDTypes) {
    for (const Case& c : cases) {
      const HostArray x = sample(c.shape, dtype, 7);
      expect(describe(c.shape, dtype) + " permute " + shape_to_string(c.dims), permute(to_tensor(x, dtype), c.dims),
             dtype, permute_reference(x, c.dims));
    }
  }
  verify();
}

// out takes x's slices along axis at the given positions, in order.
HostArray take_along(const HostArray& x, int64_t axis, const std::vector<int64_t>& positions) {
  const size_t a = static_cast<size_t>(wrap_axis(axis, x.shape.size()));
  Shape out = x.shape;
  out[a] = static_cast<int64_t>(positions.size());
  return pick(x, out, [&](const Index& at) {
    Index source = at;
    source[a] = positions[at[a]];
    return source;
  });
}

// Python's range(*slice(start, stop, step).indices(size)) for step > 0.
std::vector<int64_t> slice_positions(int64_t size, int64_t start, int64_t stop, int64_t step) {
  const auto clamp = [size](int64_t i) {
    return std::clamp(i < 0 ? i + size : i, int64_t{0}, size);
  };
  const int64_t first = clamp(start), last = clamp(stop);
  std::vector<int64_t> positions;
  // i += step could overflow for a huge step; stepping to last ends the loop.
  for (int64_t i = first; i < last; i += std::min(step, last - i)) positions.push_back(i);
  return positions;
}

TEST_P(ShapeOpsTest, SliceFollowsPython) {
  struct Case {
    int64_t axis, start, stop, step;
  };
  const Case cases[] = {
      {1, 1, 4, 1},    {1, -3, -1, 1}, {1, -100, 100, 1}, {1, 0, 5, 2},  {1, 1, 100, 3},
      {1, 3, 1, 1},    {1, 5, 9, 1},   {0, -2, 4, 1},     {-1, 0, 5, 4}, {0, 0, 0, 1},
      {0, -1, 100, 1}, {-2, 1, -1, 2}, {1, 0, 100, 1000},
  };
  const HostArray x = sample({4, 5}, kInt32);
  for (const Case& c : cases) {
    const int64_t size = x.shape[wrap_axis(c.axis, 2)];
    expect("slice(axis " + std::to_string(c.axis) + ", " + std::to_string(c.start) + ":" +
               std::to_string(c.stop) + ":" + std::to_string(c.step) + ")",
           slice(to_tensor(x, kInt32), c.axis, c.start, c.stop, c.step), kInt32,
           take_along(x, c.axis, slice_positions(size, c.start, c.stop, c.step)));
  }
  verify();
}

// The length must not be computed as (stop - start + step - 1) / step, which
// overflows for a step near INT64_MAX.
TEST_P(ShapeOpsTest, SliceWithAHugeStepTakesOneElement) {
  const HostArray x = sample({4, 5}, kInt32);
  const Tensor one = slice(to_tensor(x, kInt32), 1, 2, 5, std::numeric_limits<int64_t>::max());
  // Checked before anything runs: a negative dim must never reach a kernel.
  ASSERT_EQ(shape_to_string(one.shape()), "[4, 1]");
  expect("slice 2:5:INT64_MAX", one, kInt32, take_along(x, 1, {2}));
  verify();
}

TEST_P(ShapeOpsTest, IndexSelectPicksSlicesWithNegativeIndices) {
  struct Case {
    Shape x;
    int64_t axis;
    std::vector<int64_t> index;
    DType index_dtype;
  };
  const Case cases[] = {
      {{3, 4}, 0, {2, 0, -1}, kInt64}, {{3, 4}, 1, {-4, 3, 3}, kInt32}, {{3, 4}, -1, {}, kInt64},
      {{2, 3, 4}, 1, {1, -1}, kInt32}, {{0, 4}, 1, {0, 2}, kInt64},
  };
  for (const Case& c : cases) {
    const HostArray x = sample(c.x, kFloat32);
    const int64_t size = x.shape[wrap_axis(c.axis, c.x.size())];
    std::vector<int64_t> positions;
    for (int64_t i : c.index) positions.push_back(i < 0 ? i + size : i);
    const HostArray index =
        values_of({static_cast<int64_t>(c.index.size())}, Values(c.index.begin(), c.index.end()));
    expect(describe(c.x, kFloat32) + " axis " + std::to_string(c.axis) + " index " +
               shape_to_string(c.index),
           index_select(to_tensor(x, kFloat32), c.axis, to_tensor(index, c.index_dtype)), kFloat32,
           take_along(x, c.axis, positions));
  }
  verify();
}

TEST_P(ShapeOpsTest, GatherAlongEachAxisOfA3DTensor) {
  const HostArray x = sample({2, 3, 4}, kInt64);
  const Shape index_shapes[] = {{2, 3, 4}, {1, 2, 4}, {2, 1, 5}};  // the size along axis is free
  for (int64_t axis = 0; axis < 3; ++axis) {
    for (DType index_dtype : {kInt64, kInt32}) {
      HostArray index{index_shapes[axis], {}};
      for (int64_t i = 0; i < shape_numel(index.shape); ++i) {
        index.values.push_back(static_cast<double>((i * 5 + 1) % x.shape[axis]));
      }
      const HostArray want = pick(x, index.shape, [&](const Index& at) {
        Index source = at;
        source[axis] = static_cast<int64_t>(index.values[broadcast_offset(index.shape, at)]);
        return source;
      });
      expect("axis " + std::to_string(axis) + " " + std::string(dtype_name(index_dtype)),
             gather(to_tensor(x, kInt64), axis, to_tensor(index, index_dtype)), kInt64, want);
    }
  }
  verify();
}

HostArray concat_reference(const std::vector<HostArray>& parts, int64_t axis) {
  const size_t a = static_cast<size_t>(wrap_axis(axis, parts[0].shape.size()));
  Shape out = parts[0].shape;
  out[a] = 0;
  for (const HostArray& part : parts) out[a] += part.shape[a];
  HostArray result{out, {}};
  for (Odometer it(out); !it.done(); it.next()) {
    Index at = it.index();
    size_t k = 0;
    while (at[a] >= parts[k].shape[a]) at[a] -= parts[k++].shape[a];
    result.values.push_back(parts[k].values[broadcast_offset(parts[k].shape, at)]);
  }
  return result;
}

TEST_P(ShapeOpsTest, ConcatJoinsAndPromotes) {
  struct Part {
    Shape shape;
    DType dtype;
  };
  struct Case {
    std::vector<Part> parts;
    int64_t axis;
    DType out_dtype;
  };
  const std::vector<Case> cases = {
      {{{{2, 3}, kFloat32}, {{1, 3}, kFloat32}}, 0, kFloat32},
      {{{{2, 3}, kInt32}, {{2, 2}, kFloat32}}, 1, kFloat32},
      {{{{2, 1, 2}, kInt64}, {{2, 1, 3}, kInt64}, {{2, 1, 0}, kInt64}}, -1, kInt64},
      {{{{0, 3}, kFloat64}, {{2, 3}, kFloat64}, {{0, 3}, kFloat64}}, 0, kFloat64},
      {{{{3}, kBool}, {{2}, kInt64}}, 0, kInt64},
      {{{{2, 2}, kBool}}, -2, kBool},
      {{{{2, 0}, kInt32}, {{2, 0}, kInt32}}, 1, kInt32},
      {{{{2, 1}, kInt32}, {{2, 2}, kInt32}, {{2, 3}, kInt32}}, 1, kInt32},
  };
  for (const Case& c : cases) {
    std::vector<HostArray> parts;
    std::vector<Tensor> tensors;
    std::string what = "concat axis " + std::to_string(c.axis);
    for (const Part& part : c.parts) {
      parts.push_back(sample(part.shape, part.dtype, static_cast<int>(parts.size())));
      tensors.push_back(to_tensor(parts.back(), part.dtype));
      what += ", " + describe(part.shape, part.dtype);
    }
    expect(what, concat(tensors, c.axis), c.out_dtype, concat_reference(parts, c.axis));
  }
  verify();
}

TEST_P(ShapeOpsTest, BroadcastToRepeatsSizeOneAndMissingDims) {
  const std::pair<Shape, Shape> cases[] = {
      {{3}, {2, 3}}, {{2, 1}, {2, 4}}, {{}, {2, 2}},
      {{1}, {0}},    {{2, 3}, {2, 3}}, {{1, 3}, {4, 2, 3}},
  };
  for (const auto& [from, to] : cases) {
    const HostArray x = sample(from, kInt32);
    expect(shape_to_string(from) + " to " + shape_to_string(to),
           broadcast_to(to_tensor(x, kInt32), to), kInt32,
           broadcast_map(to, {x}, [](const Values& v) { return v[0]; }));
  }
  verify();
}

HostArray one_hot_reference(const HostArray& indices, int64_t depth) {
  Shape out = indices.shape;
  out.push_back(depth);
  HostArray result{out, {}};
  for (Odometer it(out); !it.done(); it.next()) {
    const Index& at = it.index();
    const Index position(at.begin(), at.end() - 1);
    result.values.push_back(indices.values[broadcast_offset(indices.shape, position)] == at.back());
  }
  return result;
}

TEST_P(ShapeOpsTest, OneHotMarksEachIndex) {
  struct Case {
    HostArray indices;
    DType index_dtype;
    int64_t depth;
    DType dtype;
  };
  const Case cases[] = {
      {values_of({3}, {0, 2, 1}), kInt64, 3, kInt64},
      {values_of({2, 2}, {3, 0, 0, 1}), kInt32, 4, kFloat32},
      {values_of({0}, {}), kInt64, 5, kInt64},
      {values_of({}, {1}), kInt64, 2, kBool},
      {values_of({2}, {1, 1}), kInt32, 2, kFloat64},
  };
  for (const Case& c : cases) {
    expect(describe(c.indices.shape, c.index_dtype) + " depth " + std::to_string(c.depth),
           one_hot(to_tensor(c.indices, c.index_dtype), c.depth, c.dtype), c.dtype,
           one_hot_reference(c.indices, c.depth));
  }
  expect("default dtype", one_hot(to_tensor(values_of({1}, {0}), kInt64), 2), kInt64,
         values_of({1, 2}, {1, 0}));
  verify();
}

// Buffers of 64 KiB and more are recycled between steps (src/device/
// buffer_pool.cc) without being cleared, so each step uses new data: a kernel
// that leaves part of its output unwritten shows the previous step's values.
TEST_P(ShapeOpsTest, LargeTensorsStepAfterStep) {
  for (int step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const HostArray x = sample({300, 70}, kFloat32, step), y = sample({70, 60}, kFloat32, step + 1);
    const HostArray row = sample({70}, kFloat32, step + 2);
    const Tensor tx = to_tensor(x, kFloat32);
    expect("x + row", tx + to_tensor(row, kFloat32), kFloat32,
           broadcast_map({x, row}, [](const Values& v) { return v[0] + v[1]; }));
    expect("matmul", matmul(tx, to_tensor(y, kFloat32)), kFloat32,
           matmul_reference(x, y, {300, 60}));
    expect("sum over 0", sum(tx, {0}), kFloat32,
           testing::reduce_reference(x, {0}, false, [](const Values& v) {
             return std::accumulate(v.begin(), v.end(), 0.0);
           }));
    expect("transpose", transpose(tx, 0, 1), kFloat32, permute_reference(x, {1, 0}));
    expect("concat", concat({tx, tx}, 1), kFloat32, concat_reference({x, x}, 1));
    const HostArray classes = sample({20000}, kInt64, step, testing::Domain::kNonNegative);
    expect("one_hot", one_hot(to_tensor(classes, kInt64), 5, kFloat32), kFloat32,
           one_hot_reference(classes, 5));
    verify();
  }
}

}  // namespace
}  // namespace ordo
