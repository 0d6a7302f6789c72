// Float matmul through the BLAS against the plain reference loop: odd,
// 1-wide, tall and skinny, empty and batched shapes, broadcast batches, 1-D
// operands and operands transposed through the step's flags; how the
// compiler folds transposes into the matmul, and a transposed product into
// the swapped product; and that the shape-fixed blocks give bitwise the
// same product in any order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/tile_gemm.h"
#include "plans.h"
#include "reference.h"

// OpenBLAS's own call (its cblas.h is the library's private include).
extern "C" int openblas_get_num_threads(void);

namespace ordo {
namespace {

using testing::describe;
using testing::HostArray;
using testing::matmul_reference;
using testing::permute_reference;
using testing::plan_of;
using testing::sample;
using testing::to_tensor;

constexpr DType kInt32 = DType::kInt32, kFloat32 = DType::kFloat32, kFloat64 = DType::kFloat64;

using MatmulTest = testing::OpsTest;

INSTANTIATE_TEST_SUITE_P(ReadModes, MatmulTest, testing::all_read_modes(), testing::read_mode_name);

constexpr DType kFloatTypes[] = {kFloat32, kFloat64};

struct ShapeCase {
  Shape a, b, out;
};

TEST_P(MatmulTest, FloatShapesFollowNumpy) {
  const ShapeCase cases[] = {
      {{37, 53}, {53, 29}, {37, 29}},           // odd sizes
      {{1, 1}, {1, 1}, {1, 1}},                 // 1-wide
      {{5, 1}, {1, 7}, {5, 7}},
      {{7, 3}, {3, 1}, {7, 1}},
      {{3000, 5}, {5, 3}, {3000, 3}},           // tall and skinny, several panels
      {{4, 3000}, {3000, 2}, {4, 2}},           // a long inner dim
      {{300, 200}, {200, 150}, {300, 150}},     // several row panels
      {{3, 0}, {0, 4}, {3, 4}},                 // k = 0: zeros
      {{2, 3, 0}, {0, 4}, {2, 3, 4}},
      {{0, 5}, {5, 3}, {0, 3}},                 // m = 0
      {{3, 5}, {5, 0}, {3, 0}},                 // n = 0
      {{3, 17, 9}, {3, 9, 11}, {3, 17, 11}},    // batched
      {{2, 1, 5, 6}, {3, 6, 4}, {2, 3, 5, 4}},  // broadcast batch dims
      {{40, 64, 64}, {64, 64}, {40, 64, 64}},   // b shared: one gemm of 2560 rows
      {{4, 7, 6}, {1, 6, 5}, {4, 7, 5}},
      {{7, 6}, {4, 6, 5}, {4, 7, 5}},           // a shared
      {{6}, {6}, {}},                           // 1-D operands
      {{6}, {2, 6, 3}, {2, 3}},
      {{2, 3, 6}, {6}, {2, 3}},
      {{0}, {0}, {}},
  };
  for (DType dtype : kFloatTypes) {
    for (const ShapeCase& c : cases) {
      const HostArray a = sample(c.a, dtype, 1), b = sample(c.b, dtype, 2);
      expect(describe(c.a, dtype) + " @ " + shape_to_string(c.b), matmul(to_tensor(a, dtype), to_tensor(b, dtype)),
             dtype, matmul_reference(a, b, c.out));
    }
  }
  verify();
}

// The axes that swap the last two of a rank.
std::vector<int64_t> last_two_swapped(size_t rank) {
  std::vector<int64_t> dims(rank);
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[rank - 1], dims[rank - 2]);
  return dims;
}

// x as stored, and the operand it is once transposed (when transposed).
struct Operand {
  HostArray stored;
  bool transposed;
  HostArray value() const { return transposed ? permute_reference(stored, last_two_swapped(stored.shape.size())) : stored; }
  Tensor traced(DType dtype) const {
    const Tensor t = to_tensor(stored, dtype);
    return transposed ? transpose(t, -1, -2) : t;
  }
};

// op(a) @ op(b), each operand as stored or transposed.
struct TransposedCase {
  Shape a_stored, b_stored;
  bool transpose_a, transpose_b;
  Shape out;

  std::string name(DType dtype) const {
    return describe(a_stored, dtype) + (transpose_a ? ".T" : "") + " @ " + shape_to_string(b_stored) +
           (transpose_b ? ".T" : "");
  }
};

const TransposedCase kTransposedCases[] = {
    {{53, 37}, {53, 29}, true, false, {37, 29}},
    {{37, 53}, {29, 53}, false, true, {37, 29}},
    {{53, 37}, {29, 53}, true, true, {37, 29}},
    {{200, 300}, {150, 200}, true, true, {300, 150}},  // several row panels, transposed
    {{3, 9, 17}, {3, 11, 9}, true, true, {3, 17, 11}},
    {{2, 1, 6, 5}, {3, 4, 6}, true, true, {2, 3, 5, 4}},
    {{40, 64, 64}, {64, 64}, true, false, {40, 64, 64}},  // no single gemm with a transposed
    {{40, 64, 64}, {64, 64}, false, true, {40, 64, 64}},  // one gemm, b transposed
    {{0, 3}, {0, 4}, true, false, {3, 4}},               // k = 0
    {{1, 1}, {7, 1}, true, true, {1, 7}},
    {{6}, {2, 3, 6}, false, true, {2, 3}},
};

// The float32 shapes ordo's own tiles take (kernels/tile_gemm.h): a layer's
// forward x @ w.T and a weight's gradient g.T @ x, with every edge of a tile
// (m, n past a multiple of the tile, the shortest depth taken), row panels
// of C (each a call of its own, reading a through its stored row length),
// and one gemm over a batch that shares b.
const TransposedCase kTiledCases[] = {
    {{128, 300}, {250, 300}, false, true, {128, 250}},  // x @ w.T
    {{37, 53}, {29, 53}, false, true, {37, 29}},        // edges on every side
    {{16, 16}, {10, 16}, false, true, {16, 10}},        // the smallest taken
    {{600, 40}, {45, 40}, false, true, {600, 45}},      // 3 row panels
    {{3, 40, 50}, {45, 50}, false, true, {3, 40, 45}},  // one gemm of 120 rows
    {{100, 300}, {100, 200}, true, false, {300, 200}},  // g.T @ x, panels of 128 rows
    {{17, 33}, {17, 21}, true, false, {33, 21}},        // edges
    {{16, 10}, {16, 16}, true, false, {10, 16}},        // the smallest taken
};

TEST_P(MatmulTest, TransposedOperandsFollowNumpy) {
  for (DType dtype : kFloatTypes) {
    using Cases = std::span<const TransposedCase>;
    for (Cases cases : {Cases(kTransposedCases), Cases(kTiledCases)}) {
      for (const TransposedCase& c : cases) {
        const Operand a{sample(c.a_stored, dtype, 1), c.transpose_a}, b{sample(c.b_stored, dtype, 2), c.transpose_b};
        expect(c.name(dtype), matmul(a.traced(dtype), b.traced(dtype)), dtype,
               matmul_reference(a.value(), b.value(), c.out));
      }
    }
  }
  verify();
}

using MatmulPlanTest = testing::OneDeviceTest;

size_t steps_of(const executor::ExecutionPlan& plan, ir::OpKind op) {
  return std::count_if(plan.steps.begin(), plan.steps.end(),
                       [&](const executor::PlanStep& step) { return !step.fused && step.op == op; });
}

const executor::PlanStep& matmul_step(const executor::ExecutionPlan& plan) {
  auto it = std::find_if(plan.steps.begin(), plan.steps.end(),
                         [](const executor::PlanStep& step) { return step.op == ir::OpKind::kMatmul; });
  EXPECT_NE(it, plan.steps.end());
  return *it;
}

TEST_F(MatmulPlanTest, APermuteOnlyMatmulsReadIsSkipped) {
  const HostArray x = sample({2, 5, 3}, kFloat32, 1), y = sample({2, 4, 5}, kFloat32, 2);
  const Tensor tx = to_tensor(x, kFloat32), ty = to_tensor(y, kFloat32);
  mark_step();
  const Tensor c = matmul(transpose(tx, -1, -2), transpose(ty, 1, 2));
  const auto plan = plan_of({c});
  EXPECT_EQ(steps_of(*plan, ir::OpKind::kPermute), 0u);
  ASSERT_EQ(plan->steps.size(), 1u);
  const executor::PlanStep& step = matmul_step(*plan);
  EXPECT_EQ(std::vector<int64_t>(step.attrs.ints.begin(), step.attrs.ints.end()), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(step.input_slots, plan->parameter_slots);  // the permutes' inputs
  testing::expect_close(c, kFloat32,
                        matmul_reference(permute_reference(x, {0, 2, 1}), permute_reference(y, {0, 2, 1}), {2, 3, 4}));
}

TEST_F(MatmulPlanTest, APermuteReadAsBothOperandsIsSkipped) {
  const HostArray x = sample({4, 4}, kFloat64, 3);
  const Tensor tx = to_tensor(x, kFloat64);
  mark_step();
  const Tensor xt = transpose(tx, 0, 1);
  const Tensor c = matmul(xt, xt);
  const auto plan = plan_of({c});
  ASSERT_EQ(plan->steps.size(), 1u);
  EXPECT_EQ(std::vector<int64_t>(plan->steps[0].attrs.ints.begin(), plan->steps[0].attrs.ints.end()),
            (std::vector<int64_t>{1, 1}));
  const HostArray want = permute_reference(x, {1, 0});
  testing::expect_close(c, kFloat64, matmul_reference(want, want, {4, 4}));
}

TEST_F(MatmulPlanTest, APermuteThatIsAlsoReadElsewhereRuns) {
  const HostArray x = sample({5, 3}, kFloat64, 1), y = sample({5, 4}, kFloat64, 2);
  const Tensor tx = to_tensor(x, kFloat64), ty = to_tensor(y, kFloat64);
  mark_step();
  for (bool root : {true, false}) {  // xt a root, or another op's operand
    const Tensor xt = transpose(tx, 0, 1);
    const Tensor other_reader = root ? xt : exp(xt);
    const Tensor c = matmul(xt, ty);
    const auto plan = plan_of({c, other_reader});
    EXPECT_EQ(steps_of(*plan, ir::OpKind::kPermute), 1u);
    // The matmul still reads x through the flag: it need not wait for the copy.
    const executor::PlanStep& step = matmul_step(*plan);
    EXPECT_EQ(std::vector<int64_t>(step.attrs.ints.begin(), step.attrs.ints.end()), (std::vector<int64_t>{1, 0}));
    EXPECT_EQ(step.input_slots, plan->parameter_slots);
    testing::expect_close(c, kFloat64, matmul_reference(permute_reference(x, {1, 0}), y, {3, 4}));
  }
}

std::vector<int64_t> flags_of(const executor::PlanStep& step) {
  return std::vector<int64_t>(step.attrs.ints.begin(), step.attrs.ints.end());
}

TEST_F(MatmulPlanTest, ChainsOfTransposesAndSameShapeReshapesFoldIntoOneFlag) {
  const HostArray x = sample({5, 3}, kFloat64, 1), y = sample({3, 4}, kFloat64, 2);
  const Tensor tx = to_tensor(x, kFloat64), ty = to_tensor(y, kFloat64);
  mark_step();
  // x.T.T is x; a reshape that keeps the shape keeps the operand as it is.
  const Tensor c = matmul(transpose(transpose(tx, 0, 1), 0, 1), reshape(ty, {3, 4}));
  auto plan = plan_of({c});
  ASSERT_EQ(plan->steps.size(), 1u);
  EXPECT_EQ(flags_of(plan->steps[0]), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(plan->steps[0].input_slots, plan->parameter_slots);
  testing::expect_close(c, kFloat64, matmul_reference(x, y, {5, 4}));
  // Three transposes and a reshape between them: one flip. The inner
  // transpose is also a root, so it runs, but the matmul does not read it.
  const Tensor inner = transpose(tx, 0, 1);
  const Tensor d = matmul(reshape(transpose(transpose(inner, 0, 1), 0, 1), {3, 5}), tx);
  plan = plan_of({d, inner});
  EXPECT_EQ(steps_of(*plan, ir::OpKind::kPermute), 1u);
  EXPECT_EQ(flags_of(matmul_step(*plan)), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(matmul_step(*plan).input_slots, (std::vector<int32_t>{plan->parameter_slots[0], plan->parameter_slots[0]}));
  testing::expect_close(d, kFloat64, matmul_reference(permute_reference(x, {1, 0}), x, {3, 3}));
  testing::expect_close(inner, kFloat64, permute_reference(x, {1, 0}));
}

TEST_F(MatmulPlanTest, ATransposedProductRunsAsTheSwappedProduct) {
  const TransposedCase cases[] = {
      {{5, 3}, {3, 4}, false, false, {5, 4}},
      {{3, 5}, {4, 3}, true, true, {5, 4}},
      {{3, 5}, {3, 4}, true, false, {5, 4}},
      {{2, 5, 3}, {3, 4}, false, false, {2, 5, 4}},        // b shared by the batch
      {{2, 1, 5, 3}, {3, 4, 3}, false, true, {2, 3, 5, 4}},  // broadcast batch dims
      {{200, 300}, {150, 200}, true, true, {300, 150}},     // several row panels
  };
  for (DType dtype : kFloatTypes) {
    for (const TransposedCase& c : cases) {
      const Operand a{sample(c.a_stored, dtype, 1), c.transpose_a}, b{sample(c.b_stored, dtype, 2), c.transpose_b};
      const Tensor ta = to_tensor(a.stored, dtype), tb = to_tensor(b.stored, dtype);
      mark_step();
      // Through a same-shape reshape, as the autograd rules leave one.
      const Tensor product =
          matmul(c.transpose_a ? transpose(ta, -1, -2) : ta, c.transpose_b ? transpose(tb, -1, -2) : tb);
      const Tensor t = transpose(reshape(product, product.shape()), -1, -2);
      const auto plan = plan_of({t});
      SCOPED_TRACE(c.name(dtype) + ", transposed");
      ASSERT_EQ(plan->steps.size(), 1u);
      EXPECT_EQ(plan->steps[0].op, ir::OpKind::kMatmul);
      // b first, each operand flipped.
      EXPECT_EQ(flags_of(plan->steps[0]), (std::vector<int64_t>{!c.transpose_b, !c.transpose_a}));
      EXPECT_EQ(plan->steps[0].input_slots, (std::vector<int32_t>{plan->parameter_slots[1], plan->parameter_slots[0]}));
      const HostArray want = matmul_reference(a.value(), b.value(), c.out);
      testing::expect_close(t, dtype, permute_reference(want, last_two_swapped(c.out.size())));
    }
  }
}

TEST_F(MatmulPlanTest, AProductReadElsewhereOrOfAVectorIsTransposedAsBefore) {
  const HostArray x = sample({5, 3}, kFloat64, 1), y = sample({3, 4}, kFloat64, 2), v = sample({3}, kFloat64, 3);
  const HostArray x3 = sample({2, 5, 3}, kFloat64, 4);
  const Tensor tx = to_tensor(x, kFloat64), ty = to_tensor(y, kFloat64), tv = to_tensor(v, kFloat64);
  const Tensor tx3 = to_tensor(x3, kFloat64);
  mark_step();
  for (bool root : {true, false}) {  // the product a root, or another op's operand
    const Tensor product = matmul(tx, ty);
    const Tensor other_reader = root ? product : exp(product);
    const Tensor t = transpose(product, 0, 1);
    const auto plan = plan_of({t, other_reader});
    EXPECT_EQ(steps_of(*plan, ir::OpKind::kPermute), 1u);
    EXPECT_EQ(steps_of(*plan, ir::OpKind::kMatmul), 1u);
    testing::expect_close(t, kFloat64, permute_reference(matmul_reference(x, y, {5, 4}), {1, 0}));
  }
  // [2, 5, 3] @ [3] is [2, 5]: its transpose swaps the batch with the rows,
  // which no swapped product gives.
  const Tensor t = transpose(matmul(tx3, tv), 0, 1);
  const auto plan = plan_of({t});
  EXPECT_EQ(steps_of(*plan, ir::OpKind::kPermute), 1u);
  testing::expect_close(t, kFloat64, permute_reference(matmul_reference(x3, v, {2, 5}), {1, 0}));
}

TEST_F(MatmulPlanTest, ASwappedProductIsAValueOtherMatmulsRead) {
  const HostArray x = sample({5, 3}, kFloat64, 1), y = sample({3, 4}, kFloat64, 2), z = sample({5, 2}, kFloat64, 3);
  const Tensor tx = to_tensor(x, kFloat64), ty = to_tensor(y, kFloat64), tz = to_tensor(z, kFloat64);
  mark_step();
  // (x y)^T z: the transpose runs as y^T x^T, and the outer matmul reads its result as it is.
  const Tensor c = matmul(transpose(matmul(tx, ty), 0, 1), tz);
  const auto plan = plan_of({c});
  EXPECT_EQ(steps_of(*plan, ir::OpKind::kPermute), 0u);
  ASSERT_EQ(steps_of(*plan, ir::OpKind::kMatmul), 2u);
  EXPECT_TRUE(flags_of(plan->steps.back()).empty());
  testing::expect_close(c, kFloat64,
                        matmul_reference(permute_reference(matmul_reference(x, y, {5, 4}), {1, 0}), z, {4, 2}));
}

TEST_F(MatmulPlanTest, TheGradientsOfALinearLayerCopyNoTranspose) {
  // y = x @ w.T, as nn.Linear: dL/dw = (x^T g)^T and dL/dx = g @ w.T.T.
  const HostArray x = sample({6, 5}, kFloat64, 1), w = sample({4, 5}, kFloat64, 2);
  Tensor tx = to_tensor(x, kFloat64), tw = to_tensor(w, kFloat64);
  tx.set_requires_grad();
  tw.set_requires_grad();
  mark_step();
  const std::vector<Tensor> grads = grad(sum(matmul(tx, transpose(tw, 0, 1))), {tx, tw});
  const auto plan = plan_of(grads);
  EXPECT_EQ(steps_of(*plan, ir::OpKind::kPermute), 0u);
  EXPECT_EQ(steps_of(*plan, ir::OpKind::kMatmul), 2u);
  // With g all ones: dL/dx[i, k] = sum_j w[j, k], dL/dw[j, k] = sum_i x[i, k].
  HostArray want_x{{6, 5}, std::vector<double>(30, 0.0)}, want_w{{4, 5}, std::vector<double>(20, 0.0)};
  for (int64_t k = 0; k < 5; ++k) {
    double column_w = 0, column_x = 0;
    for (int64_t j = 0; j < 4; ++j) column_w += w.values[j * 5 + k];
    for (int64_t i = 0; i < 6; ++i) column_x += x.values[i * 5 + k];
    for (int64_t i = 0; i < 6; ++i) want_x.values[i * 5 + k] = column_w;
    for (int64_t j = 0; j < 4; ++j) want_w.values[j * 5 + k] = column_x;
  }
  testing::expect_close(grads[0], kFloat64, want_x);
  testing::expect_close(grads[1], kFloat64, want_w);
}

TEST_F(MatmulPlanTest, OnlyLastTwoDimSwapsOfFloatMatmulsFold) {
  const Tensor x = ones({3, 4, 4}), y = ones({4, 4});
  mark_step();
  // A permute of other dims stays; so does any permute an integer matmul reads.
  const Tensor c = matmul(permute(x, {1, 0, 2}), y);
  EXPECT_EQ(steps_of(*plan_of({c}), ir::OpKind::kPermute), 1u);
  const Tensor xi = ones({4, 4}, kInt32);
  mark_step();
  const Tensor ci = matmul(transpose(xi, 0, 1), xi);
  EXPECT_EQ(steps_of(*plan_of({ci}), ir::OpKind::kPermute), 1u);
  EXPECT_EQ(ci.to_vector<int32_t>(), std::vector<int32_t>(16, 4));
  const Tensor cf = matmul(transpose(y, 0, 1), y);
  EXPECT_EQ(steps_of(*plan_of({cf}), ir::OpKind::kPermute), 0u);
  EXPECT_EQ(cf.to_vector<float>(), std::vector<float>(16, 4.0f));
}

TEST_F(MatmulPlanTest, OpenBlasRunsOnTheCallingThreadOnly) {
  EXPECT_EQ(matmul(ones({8, 8}), ones({8, 8})).to_vector<float>()[0], 8.0f);
  EXPECT_EQ(openblas_get_num_threads(), 1);
}

// ---- Blocks ----

template <typename T>
std::vector<T> random_values(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<T> values(shape_numel(shape));
  for (T& v : values) v = static_cast<T>(uniform(rng));
  return values;
}

// c of the product with its blocks run in the given order.
template <typename T>
std::vector<T> product_in_order(const kernels::MatmulShapes& shapes, const std::vector<T>& a,
                                const std::vector<T>& b, const std::vector<int64_t>& blocks) {
  std::vector<T> c(shape_numel(shapes.c), T{-1});
  const kernels::BlockedProduct<T> product(shapes, a.data(), b.data(), c.data());
  EXPECT_EQ(product.num_blocks(), static_cast<int64_t>(blocks.size()));
  for (int64_t block : blocks) product.run_block(block);
  return c;
}

template <typename T>
void expect_same_in_any_order(const kernels::MatmulShapes& shapes) {
  SCOPED_TRACE(shape_to_string(shapes.a) + " @ " + shape_to_string(shapes.b));
  const std::vector<T> a = random_values<T>(shapes.a, 1), b = random_values<T>(shapes.b, 2);
  const int64_t num_blocks = kernels::BlockedProduct<T>(shapes, a.data(), b.data(), nullptr).num_blocks();
  ASSERT_GT(num_blocks, 1);
  std::vector<int64_t> order(num_blocks);
  std::iota(order.begin(), order.end(), 0);
  const std::vector<T> serial = product_in_order(shapes, a, b, order);
  std::reverse(order.begin(), order.end());
  const std::vector<T> reversed = product_in_order(shapes, a, b, order);
  std::shuffle(order.begin(), order.end(), std::mt19937(3));
  const std::vector<T> shuffled = product_in_order(shapes, a, b, order);
  EXPECT_EQ(0, std::memcmp(serial.data(), reversed.data(), serial.size() * sizeof(T)));
  EXPECT_EQ(0, std::memcmp(serial.data(), shuffled.data(), serial.size() * sizeof(T)));
  // The kernel itself, through the executor, gives the same bits.
  const Tensor c = matmul(to_tensor(HostArray{shapes.a, {a.begin(), a.end()}}, dtype_of<T>()),
                          to_tensor(HostArray{shapes.b, {b.begin(), b.end()}}, dtype_of<T>()));
  EXPECT_EQ(c.to_vector<T>(), serial);
}

TEST_F(MatmulPlanTest, BlocksGiveTheSameBitsInAnyOrder) {
  expect_same_in_any_order<float>({{300, 200}, {200, 150}, {300, 150}});
  expect_same_in_any_order<double>({{300, 200}, {200, 150}, {300, 150}});
  expect_same_in_any_order<float>({{40, 64, 64}, {64, 64}, {40, 64, 64}});
  expect_same_in_any_order<double>({{6, 70, 90}, {6, 90, 80}, {6, 70, 80}});
}

// The tiles take kTiledCases' shapes on a CPU with AVX-512 (so that
// TransposedOperandsFollowNumpy checks them there), and leave the BLAS every other form.
TEST(TileGemmTest, TakesTheTwoFormsWithASmallOperand) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  using kernels::tile_gemm::takes;
  EXPECT_EQ(takes({128, 1024, 784, false, true}), avx512);  // the wide MLP's forward
  EXPECT_EQ(takes({256, 1024, 128, true, false}), avx512);  // a panel of its weight gradient
  EXPECT_EQ(takes({16, 10, 16, false, true}), avx512);
  EXPECT_EQ(takes({10, 16, 16, true, false}), avx512);
  EXPECT_FALSE(takes({128, 1024, 1024, false, false}));  // a @ b
  EXPECT_FALSE(takes({128, 1024, 1024, true, true}));
  EXPECT_FALSE(takes({128, 1024, 15, false, true}));      // too shallow
  EXPECT_FALSE(takes({15, 1024, 64, false, true}));       // under half a tile of columns
  EXPECT_FALSE(takes({128, 9, 64, false, true}));         // under a tile of rows
  EXPECT_FALSE(takes({256, 1024, 1024, false, true}));    // the small operand past 512 KiB
  EXPECT_FALSE(takes({1024, 1024, 256, true, false}));
}

TEST_F(MatmulPlanTest, BlocksDependOnTheShapeOnly) {
  const auto blocks = [](const kernels::MatmulShapes& shapes) {
    return kernels::BlockedProduct<float>(shapes, nullptr, nullptr, nullptr).num_blocks();
  };
  EXPECT_EQ(blocks({{64, 64}, {64, 64}, {64, 64}}), 1);  // small: not split
  EXPECT_EQ(blocks({{0, 64}, {64, 64}, {0, 64}}), 0);    // nothing to write
  EXPECT_EQ(blocks({{256, 256}, {256, 256}, {256, 256}}), 2);    // panels of 128 rows
  EXPECT_EQ(blocks({{1024, 1024}, {1024, 1024}, {1024, 1024}}), 4);  // of 256
  EXPECT_EQ(blocks({{2048, 2048}, {2048, 2048}, {2048, 2048}}), 8);
  EXPECT_EQ(blocks({{32, 128, 128}, {32, 128, 128}, {32, 128, 128}}), 32);  // one gemm each
  EXPECT_EQ(blocks({{32, 128, 128}, {128, 128}, {32, 128, 128}}), 16);      // one gemm, 16 panels
  EXPECT_EQ(blocks({{100, 8, 8}, {100, 8, 8}, {100, 8, 8}}), 1);            // many tiny gemms: one block
}

}  // namespace
}  // namespace ordo
