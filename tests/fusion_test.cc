// Elementwise fusion: which ops become one step, and that fused plans give
// bitwise the results of one kernel per op, over dtypes, scalars, values
// that leave a group, sizes around the tile and random graphs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <type_traits>

#include "kernels/fused.h"
#include "plans.h"
#include "test_util.h"

namespace ordo {
namespace {

using FusionTest = testing::OneDeviceTest;
using testing::plan_of;

// How many ops of the graph of tensors the default options fuse.
size_t fused_ops_of(const std::vector<Tensor>& tensors) {
  const auto plan = plan_of(tensors);  // alive through the loop
  size_t ops = 0;
  for (const executor::PlanStep& step : plan->steps) ops += step.fused ? step.fused->code.size() : 0;
  return ops;
}

// Runs make() with fusion off, then on, and expects bitwise equal results.
template <typename T, typename Make>
void expect_same_fused(const Make& make) {
  set_schedule(0, {ScheduleMode::kDefault, 0, false});
  const std::vector<T> unfused = make().template to_vector<T>();
  set_schedule(0, {});
  const std::vector<T> fused = make().template to_vector<T>();
  ASSERT_EQ(fused.size(), unfused.size());
  if constexpr (std::is_same_v<T, bool>) {
    EXPECT_EQ(fused, unfused);
  } else {  // bitwise: NaN results must match too
    EXPECT_EQ(0, std::memcmp(fused.data(), unfused.data(), fused.size() * sizeof(T)));
  }
}

TEST_F(FusionTest, AChainOfElementwiseOpsIsOneStep) {
  Tensor x = rand_uniform({3000}, 1);
  Tensor y = x;
  for (int i = 0; i < 20; ++i) y = i % 2 ? tanh(y) : y * 0.5 + x;
  const auto plan = plan_of({y});
  // The scalar constants run first, then one fused step for the 40 ops.
  size_t fused_steps = 0;
  for (const executor::PlanStep& step : plan->steps) {
    if (!step.fused) {
      EXPECT_EQ(step.op, ir::OpKind::kFull);
      continue;
    }
    ++fused_steps;
    EXPECT_EQ(step.fused->code.size(), 30u);  // 10 tanh, 10 mul, 10 add
    EXPECT_LE(step.fused->num_registers, 2);   // intermediates reuse registers
    EXPECT_EQ(step.output_types.size(), 1u);   // only y leaves the group
  }
  EXPECT_EQ(fused_steps, 1u);
  const auto unfused = plan_of({y}, {ScheduleMode::kDefault, 0, false});
  for (const executor::PlanStep& step : unfused->steps) EXPECT_FALSE(step.fused);
}

TEST_F(FusionTest, OtherOpsAndOtherShapesSplitGroups) {
  Tensor x = rand_uniform({4, 8}, 2);
  Tensor a = exp(x) * 2.0;                // group 1: [4, 8]
  Tensor s = sum(a, {1});                 // not elementwise
  Tensor b = sqrt(s) + 1.0;               // group 2: [4]
  Tensor c = matmul(x, transpose(x, 0, 1));
  const auto plan = plan_of({b, c});
  std::vector<size_t> group_sizes;
  for (const executor::PlanStep& step : plan->steps) {
    if (step.fused) group_sizes.push_back(step.fused->code.size());
  }
  EXPECT_EQ(group_sizes, (std::vector<size_t>{2, 2}));
}

TEST_F(FusionTest, ValuesUsedOutsideTheGroupAreItsOutputs) {
  expect_same_fused<float>([] {
    Tensor x = rand_uniform({1500}, 3);
    Tensor a = x * 3.0 - 1.0;  // read by the reduction below and kept
    Tensor b = relu(a) + x;
    Tensor total = sum(a);
    mark_step();
    EXPECT_EQ(b.to_vector<float>().size(), 1500u);
    return b * total;  // broadcast against a 0-d result: fusible as a scalar
  });
  Tensor x = rand_uniform({1500}, 3);
  Tensor a = x * 3.0 - 1.0;
  Tensor b = relu(a) + x;
  Tensor total = sum(a);
  const auto plan = plan_of({a, b, total});
  for (const executor::PlanStep& step : plan->steps) {
    if (step.fused) {
      EXPECT_EQ(step.output_types.size(), 2u);  // a and b
    }
  }
}

TEST_F(FusionTest, SizesAroundTheTileAndEveryDtype) {
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{1023}, int64_t{1024}, int64_t{1025}, int64_t{5000}}) {
    SCOPED_TRACE(n);
    expect_same_fused<float>([n] {
      Tensor x = rand_normal({n}, 4);
      return sigmoid(abs(x) * x - rsqrt(abs(x) + 1.0)) / 3.0;
    });
    expect_same_fused<double>([n] {
      Tensor x = cast(rand_normal({n}, 5), DType::kFloat64);
      return log(exp(x) + 2.0) * maximum(x, -x);
    });
    expect_same_fused<int64_t>([n] {
      Tensor i = cast(rand_uniform({n}, 6, -1000, 1000), DType::kInt64);
      return pow(abs(i - 3), full({}, 2, DType::kInt64)) * i + minimum(i, -i);
    });
    expect_same_fused<int32_t>([n] {
      Tensor i = cast(rand_uniform({n}, 7, -50, 50), DType::kInt32);
      Tensor positive = gt(i, full({}, 0, DType::kInt32));
      Tensor picked = where(logical_and(positive, ne(i, full({}, 7, DType::kInt32))), i * 2, -i);
      return cast(cast(picked, DType::kFloat32) * 0.5, DType::kInt32);
    });
    expect_same_fused<bool>([n] {
      Tensor x = rand_uniform({n}, 8);
      return logical_or(logical_not(lt(x, full({}, 0.25, DType::kFloat32))), ge(x * x, full({}, 0.9, DType::kFloat32)));
    });
  }
}

TEST_F(FusionTest, InputsBroadcastToTheGroupsShape) {
  // A bias over rows longer than a tile, a per-row scale, short rows, and
  // 3-d broadcasting from both sides: each group runs row by row.
  expect_same_fused<float>([] {
    Tensor x = rand_normal({64, 3000}, 10);
    Tensor bias = rand_normal({3000}, 11);
    Tensor scale = rand_uniform({64, 1}, 12);
    return relu(x + bias) * scale - 0.5;
  });
  expect_same_fused<float>([] {
    Tensor x = rand_normal({500, 3}, 13);
    return tanh(x * rand_normal({3}, 14) + rand_normal({500, 1}, 15));
  });
  expect_same_fused<double>([] {
    Tensor a = cast(rand_normal({4, 1, 5}, 16), DType::kFloat64);
    Tensor b = cast(rand_normal({3, 1}, 17), DType::kFloat64);
    Tensor c = cast(rand_normal({5}, 18), DType::kFloat64);
    return maximum(a + b, c) * (a - b);
  });
  expect_same_fused<int32_t>([] {
    Tensor i = cast(rand_uniform({7, 1100}, 19, -9, 9), DType::kInt32);
    Tensor column = cast(rand_uniform({7, 1}, 20, -9, 9), DType::kInt32);
    return where(gt(i, column), i * column, i - column);
  });
  Tensor x = rand_normal({64, 3000}, 10);
  Tensor y = relu(x + rand_normal({3000}, 11)) * rand_uniform({64, 1}, 12);
  EXPECT_EQ(fused_ops_of({y}), 3u);  // add, relu, mul
}

// Groups large enough to run in several blocks (kernels/elementwise_rows.h):
// one dense row cut into blocks with a partial last one, long rows cut
// into blocks of columns (a block starting mid-row), blocks of whole rows
// that start mid-way through two outer dims, a scalar (stride 0) exponent.
TEST_F(FusionTest, LargeGroupsRunInBlocksLikeOneKernelPerOp) {
  const auto large = [] {
    Tensor x = rand_normal({3 * 65536 + 5}, 30);
    return sigmoid(tanh(x * 2.0 + 1.0) * 3.0 - 0.5) * x + x;
  };
  const auto long_rows = [] {
    Tensor x = rand_normal({3, 70001}, 31);
    return exp(tanh(x + rand_normal({70001}, 32)) * 0.5) - 1.0;
  };
  const auto outer_dims = [] {
    Tensor x = rand_uniform({5, 4, 30000}, 33, 0.5, 2);
    return log(pow(x, full({}, 2.5, DType::kFloat32)) + rand_uniform({4, 1}, 34)) * 0.25;
  };
  const auto float64 = [] {
    Tensor x = cast(rand_normal({70001, 3}, 35), DType::kFloat64);
    return sqrt(abs(sigmoid(x) - 0.5)) + rsqrt(x * x + 1.0);
  };
  expect_same_fused<float>(large);
  expect_same_fused<float>(long_rows);
  expect_same_fused<float>(outer_dims);
  expect_same_fused<double>(float64);
  EXPECT_EQ(fused_ops_of({large()}), 8u);
  EXPECT_GE(fused_ops_of({long_rows()}), 4u);
  EXPECT_GE(fused_ops_of({outer_dims()}), 4u);
}

// gelu's chain (mul, erf, add, mul, mul) is one group, erf among the
// unary ops a group runs.
TEST_F(FusionTest, ErfFusesInGelusChain) {
  const auto chain = [] { return gelu(rand_normal({4, 50000}, 36)); };
  expect_same_fused<float>(chain);
  EXPECT_EQ(fused_ops_of({chain()}), 5u);
}

TEST_F(FusionTest, ShortBroadcastRowsAreNotFused) {
  // A bias of 3 on every row would make the group run every op once per
  // 3 elements: the add runs alone, the rest of the chain still fuses.
  Tensor x = rand_normal({5000, 3}, 21);
  Tensor y = relu(x * 2.0 - 1.0);
  Tensor z = tanh(y + rand_normal({3}, 22)) * 0.5;
  EXPECT_EQ(fused_ops_of({y, z}), 5u);  // mul, sub, relu; then tanh, mul
  Tensor long_rows = relu(rand_normal({8, 4096}, 23) + rand_normal({4096}, 24)) * 2.0;
  EXPECT_EQ(fused_ops_of({long_rows}), 3u);
}

TEST(FusedLayoutTest, DimsMergeWhereEveryArrayAgrees) {
  const kernels::FusedLayout a = kernels::make_fused_layout({4, 1, 5}, {{5}, {4, 1, 1}, {}});
  EXPECT_EQ(a.outer, (Shape{4}));
  EXPECT_EQ(a.row_length, 5);
  EXPECT_EQ(a.row_strides, (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(a.outer_strides, (std::vector<std::vector<int64_t>>{{0}, {1}, {0}}));
  const kernels::FusedLayout scalar = kernels::make_fused_layout({}, {{}, {}});
  EXPECT_EQ(scalar.row_length, 1);
  EXPECT_TRUE(scalar.outer.empty());
  const kernels::FusedLayout dense = kernels::make_fused_layout({2, 3, 4}, {{2, 3, 4}, {1, 1}});
  EXPECT_EQ(dense.row_length, 24);
  EXPECT_TRUE(dense.outer.empty());
  const kernels::FusedLayout column = kernels::make_fused_layout({6, 7}, {{6, 1}, {1, 7}});
  EXPECT_EQ(column.outer, (Shape{6}));
  EXPECT_EQ(column.row_strides, (std::vector<int64_t>{0, 1}));
  EXPECT_THROW(kernels::make_fused_layout({3}, {{2, 3}}), InternalError);
  EXPECT_THROW(kernels::make_fused_layout({3, 4}, {{3}}), InternalError);
}

// The blocks of elementwise ops and fused groups cover every element once,
// hold at most kRowBlockElements each, and an op that fits in one block
// is one (it runs on the calling thread, without the free cores).
TEST(RowBlocksTest, BlocksCoverEveryElementOnce) {
  constexpr int64_t kBlock = kernels::kRowBlockElements;
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1},     {1, 4},          {1, kBlock},     {1, kBlock + 1},
                                                {3, 70001}, {70001, 3},      {2, kBlock / 2}, {kBlock, 1},
                                                {0, 5},     {5, 3 * kBlock}, {1000, 1000}};
  for (const auto& [rows, length] : shapes) {
    SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(length));
    const kernels::RowBlocks blocks(rows, length);
    std::vector<int> covered(static_cast<size_t>(rows * length), 0);
    for (int64_t b = 0; b < blocks.count(); ++b) {
      const kernels::RowBlock block = blocks[b];
      EXPECT_LE(block.rows * block.columns, kBlock);
      EXPECT_GT(block.rows * block.columns, 0);
      for (int64_t r = block.first_row; r < block.first_row + block.rows; ++r) {
        for (int64_t c = block.first_column; c < block.first_column + block.columns; ++c) {
          ++covered[static_cast<size_t>(r * length + c)];
        }
      }
    }
    EXPECT_EQ(std::count(covered.begin(), covered.end(), 1), rows * length);
    if (rows * length <= kBlock) {
      EXPECT_EQ(blocks.count(), rows == 0 ? 0 : 1);
    }
  }
}

// Inputs of random shapes that broadcast to a random group shape: leading
// dims dropped, dims set to 1, a leading 1 added.
Shape random_input_shape(std::mt19937_64& rng, const Shape& group) {
  const size_t drop = std::uniform_int_distribution<size_t>(0, group.size())(rng);
  Shape shape(group.begin() + static_cast<std::ptrdiff_t>(drop), group.end());
  for (int64_t& d : shape) d = rng() % 3 == 0 ? 1 : d;
  if (rng() % 4 == 0 && shape.size() < group.size()) shape.insert(shape.begin(), 1);
  return shape;
}

TEST_F(FusionTest, RandomBroadcastShapesGiveBitwiseTheSameResults) {
  size_t fused_ops = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE(seed);
    std::vector<std::vector<float>> results[2];
    for (bool fuse : {false, true}) {
      set_schedule(0, {ScheduleMode::kDefault, 0, fuse});
      std::mt19937_64 rng(seed);
      const int64_t sizes[] = {1, 2, 3, 5, 130, 1030, 2100};
      Shape group;
      for (size_t rank = rng() % 5, i = 0; i < rank; ++i) {
        const int64_t d = sizes[rng() % 7];
        group.push_back(shape_numel(group) * d > 50000 ? 1 + int64_t(rng() % 3) : d);
      }
      std::vector<Tensor> pool{rand_uniform(group, seed, -2, 2)};
      std::vector<Tensor> roots;
      for (int i = 0; i < 12; ++i) {
        const Tensor a = pool[rng() % pool.size()];
        const Tensor in = rand_uniform(random_input_shape(rng, group), seed * 100 + i, -2, 2);
        switch (rng() % 5) {
          case 0: pool.push_back(a + in); break;
          case 1: pool.push_back(tanh(a) - in); break;
          case 2: pool.push_back(where(gt(in, a), a, in)); break;
          case 3: pool.push_back(maximum(a, pool[rng() % pool.size()])); break;
          default: pool.push_back(a * 0.5 + sum(a)); break;
        }
        if (rng() % 4 == 0) roots.push_back(pool.back());
      }
      roots.push_back(pool.back());
      if (fuse) fused_ops += fused_ops_of(roots);
      mark_step();
      for (const Tensor& root : roots) results[fuse].push_back(root.to_vector<float>());
    }
    ASSERT_EQ(results[0], results[1]);
  }
  EXPECT_GT(fused_ops, 100u);  // the graphs did fuse
}

TEST_F(FusionTest, ZeroSizeTensorsAreNotFused) {
  Tensor x = zeros({0, 3});
  Tensor y = exp(x) + 1.0;
  const auto plan = plan_of({y});
  for (const executor::PlanStep& step : plan->steps) EXPECT_FALSE(step.fused);
  EXPECT_EQ(y.numel(), 0);
  EXPECT_TRUE(y.to_vector<float>().empty());
}

// Random graphs over a pool of values: unary and binary ops, scalars, row
// and column inputs broadcast to the pool's shape, compare-and-select, with
// several roots, compared fused against unfused.
Tensor random_graph(uint64_t seed, std::vector<Tensor>& roots) {
  std::mt19937_64 rng(seed);
  Tensor x = rand_uniform({37, 21}, seed, -2, 2);
  std::vector<Tensor> pool{x, rand_uniform({37, 21}, seed + 1, -2, 2)};
  auto pick = [&] { return pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)]; };
  for (int i = 0; i < 40; ++i) {
    const Tensor a = pick(), b = pick();
    switch (std::uniform_int_distribution<int>(0, 8)(rng)) {
      case 0: pool.push_back(tanh(a)); break;
      case 1: pool.push_back(a * b); break;
      case 2: pool.push_back(a - b * 0.5); break;
      case 3: pool.push_back(where(gt(a, b), a, b * 2.0)); break;
      case 4: pool.push_back(maximum(a, b) + 1.0); break;
      case 5: pool.push_back(sum(a) * b); break;  // a reduction splits a run
      case 6: pool.push_back(a + rand_normal({21}, seed + i)); break;       // a row bias
      case 7: pool.push_back(a * rand_normal({37, 1}, seed + i)); break;    // a column scale
      default: pool.push_back(neg(relu(a))); break;
    }
    if (i % 9 == 0) roots.push_back(pool.back());
  }
  return pool.back();
}

TEST_F(FusionTest, RandomGraphsGiveBitwiseTheSameResults) {
  const int64_t donated_before = counter_value("DonatedBuffer").value();
  for (uint64_t seed = 1; seed <= 25; ++seed) {
    SCOPED_TRACE(seed);
    std::vector<std::vector<float>> results[2];
    for (bool fuse : {false, true}) {
      set_schedule(0, {ScheduleMode::kDefault, 0, fuse});
      std::vector<Tensor> roots;
      roots.push_back(random_graph(seed, roots));
      mark_step();
      for (const Tensor& root : roots) results[fuse].push_back(root.to_vector<float>());
    }
    EXPECT_EQ(results[0], results[1]);
  }
  // Fused groups wrote over values that died in them (buffer donation), and
  // still gave the unfused results.
  EXPECT_GT(counter_value("DonatedBuffer").value(), donated_before);
}

TEST_F(FusionTest, RandomSchedulesFuseToo) {
  std::vector<Tensor> roots;
  const std::vector<float> expected = random_graph(99, roots).to_vector<float>();
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    set_schedule(0, {ScheduleMode::kRandom, seed, true});
    roots.clear();
    EXPECT_EQ(random_graph(99, roots).to_vector<float>(), expected) << "seed " << seed;
  }
}

}  // namespace
}  // namespace ordo
