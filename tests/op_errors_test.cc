// Clear errors for arguments that do not fit: InvalidArgument (DTypeError for
// a wrong element type) thrown when the op is called, before anything is
// recorded or run; and ExecutionError, naming the op, for indices that are
// only known to be out of range once the value is read.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "reference.h"

namespace ordo {
namespace {

constexpr DType kBool = DType::kBool, kInt32 = DType::kInt32, kInt64 = DType::kInt64;

using OpErrorTest = testing::OneDeviceTest;

TEST_F(OpErrorTest, CreationRejectsBadArguments) {
  testing::RejectedCalls rejected;
  rejected.invalid("3 values", [] { return from_vector<float>({1, 2, 3}, {2, 2}); });
  rejected.invalid("negative", [] { return zeros({2, -1}); });
  rejected.invalid("negative", [] { return full({-3}, 1.0, DType::kFloat64); });
  rejected.invalid("step", [] { return arange(0, 5, 0); });
  rejected.dtype("bool", [] { return arange(0, 2, 1, kBool); });
  rejected.invalid("integer", [] { return arange(0.5, 3); });
  rejected.dtype("float", [] { return rand_uniform({2}, 1, 0, 1, kInt32); });
  rejected.invalid("low", [] { return rand_uniform({2}, 1, 2, 1); });
  rejected.invalid("stddev", [] { return rand_normal({2}, 1, 0, -1); });
  rejected.invalid("negative", [] { return rand_normal({-1}, 1); });
}

TEST_F(OpErrorTest, ElementwiseOpsRejectBadShapesAndDTypes) {
  const Tensor x = zeros({2, 3});
  const Tensor pending = exp(x);  // the failing calls must leave its graph alone
  const Tensor row = ones({4}), flags = zeros({3}, kBool);
  testing::RejectedCalls rejected;
  rejected.invalid("add: shapes [2, 3] and [4] do not broadcast", [&] { return pending + row; });
  rejected.invalid("do not broadcast", [&] { return x * zeros({3, 2}); });
  rejected.invalid("do not broadcast", [&] { return lt(x, zeros({2, 1, 2})); });
  rejected.invalid("do not broadcast", [&] { return where(row, x, x); });
  rejected.invalid("do not broadcast", [&] { return where(zeros({3}, kBool), row, row); });
  rejected.dtype("bool", [&] { return neg(flags); });
  rejected.dtype("bool", [&] { return -flags; });
  rejected.dtype("bool", [&] { return abs(flags); });
  rejected.dtype("bool", [&] { return relu(flags); });
  rejected.dtype("bool", [&] { return add(flags, flags); });
  rejected.dtype("bool", [&] { return flags - flags; });
  rejected.dtype("bool", [&] { return flags * true; });
  rejected.dtype("bool", [&] { return pow(flags, flags); });
}

TEST_F(OpErrorTest, ReductionsRejectBadAxes) {
  const Tensor x = zeros({2, 3, 4});
  const Tensor pending = x + 1.0;
  testing::RejectedCalls rejected;
  rejected.invalid("out of range", [&] { return sum(pending, {3}); });
  rejected.invalid("out of range", [&] { return mean(x, {-4}); });
  rejected.invalid("out of range", [&] { return argmax(ones({5}), {1}); });
  rejected.invalid("out of range", [&] { return sum(ones({}), {0}); });
  rejected.invalid("repeated", [&] { return sum(x, {0, 0}); });
  rejected.invalid("repeated", [&] { return max(x, {1, -2}); });
  // max, min and argmax have no identity, so they need an element.
  rejected.invalid("empty", [&] { return max(zeros({2, 0}), {1}); });
  rejected.invalid("empty", [&] { return min(zeros({0})); });
  rejected.invalid("empty", [&] { return argmax(zeros({3, 0})); });
}

TEST_F(OpErrorTest, MatmulRejectsMismatchedShapesAndBools) {
  const Tensor m = ones({3, 4});
  testing::RejectedCalls rejected;
  rejected.invalid("inner dimensions", [&] { return matmul(m, ones({5})); });
  rejected.invalid("inner dimensions", [&] { return matmul(m, ones({3, 4})); });
  rejected.invalid("inner dimensions", [&] { return matmul(ones({3}), ones({4})); });
  rejected.invalid("do not broadcast", [&] { return matmul(ones({2, 3, 4}), ones({3, 4, 2})); });
  rejected.invalid("rank", [&] { return matmul(ones({}), m); });
  rejected.dtype("bool", [&] { return matmul(zeros({2, 2}, kBool), zeros({2, 2}, kBool)); });
}

TEST_F(OpErrorTest, MovementOpsRejectBadShapesAndAxes) {
  const Tensor x = zeros({2, 3, 4});
  const Tensor pending = x * 2.0;
  const Tensor m = ones({3, 4});
  testing::RejectedCalls rejected;
  rejected.invalid("holds", [&] { return reshape(pending, {5, 5}); });
  rejected.invalid("more than one -1", [&] { return reshape(x, {-1, -1}); });
  rejected.invalid("invalid dimension", [&] { return reshape(x, {-2, -12}); });
  rejected.invalid("cannot infer", [&] { return reshape(x, {5, -1}); });
  rejected.invalid("not a permutation", [&] { return permute(x, {0, 0, 1}); });
  rejected.invalid("not a permutation", [&] { return permute(x, {0, -3, 2}); });
  rejected.invalid("rank", [&] { return permute(x, {1, 0}); });
  rejected.invalid("out of range", [&] { return permute(x, {0, 1, 3}); });
  rejected.invalid("out of range", [&] { return transpose(x, 0, 3); });
  rejected.invalid("out of range", [&] { return transpose(ones({}), 0, 0); });
  rejected.invalid("step", [&] { return slice(x, 0, 0, 2, 0); });
  rejected.invalid("step", [&] { return slice(x, 0, 2, 0, -1); });
  rejected.invalid("out of range", [&] { return slice(x, 3, 0, 1); });
  rejected.invalid("rank", [&] { return concat({x, m}, 0); });
  rejected.invalid("differ", [&] { return concat({x, zeros({2, 4, 4})}, 0); });
  rejected.invalid("no tensors", [&] { return concat({}, 0); });
  rejected.invalid("out of range", [&] { return concat({x, x}, 3); });
  rejected.invalid("broadcast", [&] { return broadcast_to(ones({5}), {4}); });
  rejected.invalid("broadcast", [&] { return broadcast_to(m, {4}); });
  rejected.invalid("broadcast", [&] { return broadcast_to(m, {3, 1}); });
  // A target shape with a negative dim is no shape at all.
  rejected.invalid("broadcast_to", [&] { return broadcast_to(ones({1}), {-1}); });
  rejected.invalid("broadcast_to", [&] { return broadcast_to(ones({}), {-2, 3}); });
}

TEST_F(OpErrorTest, IndexingOpsRejectBadIndices) {
  const Tensor x = zeros({2, 3, 4}), m = ones({3, 4});
  const Tensor indices = zeros({2}, kInt64), float_indices = zeros({2});
  testing::RejectedCalls rejected;
  rejected.dtype("int32 or int64", [&] { return index_select(m, 0, float_indices); });
  rejected.dtype("int32 or int64", [&] { return index_select(m, 0, zeros({2}, kBool)); });
  rejected.invalid("1-D", [&] { return index_select(m, 0, zeros({1, 2}, kInt64)); });
  rejected.invalid("out of range", [&] { return index_select(m, 2, indices); });
  rejected.invalid("rank", [&] { return gather(x, 0, indices); });
  rejected.dtype("int32 or int64", [&] { return gather(m, 0, zeros({3, 4})); });
  rejected.invalid("exceeds", [&] { return gather(m, 0, zeros({3, 5}, kInt64)); });
  rejected.invalid("out of range", [&] { return gather(m, 2, zeros({3, 4}, kInt32)); });
  rejected.dtype("int32 or int64", [&] { return one_hot(float_indices, 3); });
  rejected.invalid("negative", [&] { return one_hot(indices, -1); });
}

TEST_F(OpErrorTest, EveryOpRejectsAnUndefinedTensor) {
  const Tensor x = zeros({2, 2}), flags = zeros({2}, kBool), indices = zeros({2}, kInt64);
  const Tensor undefined;
  testing::RejectedCalls rejected;
  rejected.invalid("undefined", [&] { return neg(undefined); });
  rejected.invalid("undefined", [&] { return exp(undefined); });
  rejected.invalid("undefined", [&] { return logical_not(undefined); });
  rejected.invalid("undefined", [&] { return cast(undefined, kInt32); });
  rejected.invalid("undefined", [&] { return add(x, undefined); });
  rejected.invalid("undefined", [&] { return undefined * 2.0; });
  rejected.invalid("undefined", [&] { return 1 - undefined; });
  rejected.invalid("undefined", [&] { return eq(undefined, x); });
  rejected.invalid("undefined", [&] { return logical_and(flags, undefined); });
  rejected.invalid("undefined", [&] { return where(undefined, x, x); });
  rejected.invalid("undefined", [&] { return where(flags, x, undefined); });
  rejected.invalid("undefined", [&] { return sum(undefined); });
  rejected.invalid("undefined", [&] { return mean(undefined, {0}); });
  rejected.invalid("undefined", [&] { return max(undefined); });
  rejected.invalid("undefined", [&] { return argmax(undefined); });
  rejected.invalid("undefined", [&] { return matmul(x, undefined); });
  rejected.invalid("undefined", [&] { return reshape(undefined, {1}); });
  rejected.invalid("undefined", [&] { return transpose(undefined, 0, 1); });
  rejected.invalid("undefined", [&] { return permute(undefined, {0}); });
  rejected.invalid("undefined", [&] { return slice(undefined, 0, 0, 1); });
  rejected.invalid("undefined", [&] { return concat({x, undefined}, 0); });
  rejected.invalid("undefined", [&] { return broadcast_to(undefined, {2}); });
  rejected.invalid("undefined", [&] { return index_select(x, 0, undefined); });
  rejected.invalid("undefined", [&] { return gather(undefined, 0, indices); });
  rejected.invalid("undefined", [&] { return one_hot(undefined, 2); });
}

// Whether an index is in range is only known once the index is computed, so
// the op is recorded and reading its value throws ExecutionError naming it.
TEST_F(OpErrorTest, OutOfRangeIndicesFailWhenTheValueIsRead) {
  const Tensor table = from_vector<float>({0, 1, 2, 3, 4, 5}, {3, 2});
  const auto index = [](std::vector<int64_t> values) {
    return from_vector<int64_t>(values, {static_cast<int64_t>(values.size())});
  };
  struct Case {
    const char* op;
    std::function<Tensor()> build;
  };
  const Case cases[] = {
      {"index_select",
       [&] {
         return index_select(table, 0, index({0, 3}));
       }},
      {"index_select", [&] { return index_select(table, 0, index({-4})); }},
      {"index_select", [&] { return index_select(table, 1, cast(index({2}), kInt32)); }},
      {"gather",
       [&] {
         return gather(table, 0, reshape(index({1, 3}), {1, 2}));
       }},
      {"gather",
       [&] {
         return gather(table, 1, reshape(index({-3}), {1, 1}));
       }},
      {"one_hot",
       [&] {
         return one_hot(index({0, 3}), 3);
       }},
      {"one_hot", [&] { return one_hot(index({-1}), 3); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    Tensor bad;
    ASSERT_NO_THROW(bad = c.build());
    try {
      testing::read(bad);
      ADD_FAILURE() << "reading the result must fail";
    } catch (const ExecutionError& e) {
      EXPECT_NE(std::string(e.what()).find(c.op), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
    }
  }
  // The device keeps working.
  EXPECT_EQ(index_select(table, 0, index({-1, 0})).to_vector<float>(),
            (std::vector<float>{4, 5, 0, 1}));
}

}  // namespace
}  // namespace ordo
