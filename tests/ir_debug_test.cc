// IR debug (ordo/ir_debug.h): nodes record the caller's line, dumps and
// collective errors show it, and a collective reached from another line than
// its peers' is a mismatch on every device. With it off nothing changes.
#include <gtest/gtest.h>

#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/source_location.h"
#include "ir/node.h"
#include "lazy/tensor_impl.h"
#include "ordo/autograd.h"
#include "ordo/nn_ops.h"
#include "spmd.h"
#include "test_util.h"

namespace ordo {
namespace {

using testing::error_of;
using testing::run_on_devices;
using Values = std::vector<float>;

// Fixture names start with "Collective" so that scripts/sanitize.sh thread runs them.
class CollectiveIrDebugTest : public testing::FourDeviceTest {
 protected:
  void SetUp() override {
    testing::FourDeviceTest::SetUp();
    set_ir_debug_enabled(true);
    set_collective_timeouts({5.0, 30.0});
  }
  void TearDown() override {
    set_collective_timeouts({});
    set_ir_debug_enabled(false);
    testing::FourDeviceTest::TearDown();
  }
};

// Each collective of these tests comes from its own line, named here.
constexpr int kReduceLine = __LINE__ + 1;
Tensor reduce_here(const Tensor& x) { return all_reduce(ReduceType::kSum, x); }
constexpr int kGatherLine = __LINE__ + 1;
Tensor gather_here(const Tensor& x) { return all_gather(x); }
constexpr int kExtraLine = __LINE__ + 1;
Tensor extra_reduce_here(const Tensor& x) { return all_reduce(ReduceType::kSum, x); }
constexpr int kNextLine = __LINE__ + 1;
Tensor next_reduce_here(const Tensor& x) { return all_reduce(ReduceType::kSum, x); }

std::string at_line(int line) { return str_cat("ir_debug_test.cc:", line); }

TEST_F(CollectiveIrDebugTest, MismatchNamesTheLineOfEachDevicesCollective) {
  auto outcomes = run_on_devices<int>(4, [](int d) {
    Tensor x = ones({4});
    (d == 3 ? gather_here(x) : reduce_here(x)).to_vector<float>();
    return 0;
  });
  for (int d = 0; d < 4; ++d) {
    const std::string message = error_of<CollectiveMismatchError>(outcomes[d]);
    EXPECT_NE(message.find("all_reduce(sum, scale 1) of float32[4] at "), std::string::npos) << d << ": " << message;
    EXPECT_NE(message.find("all_gather(dim 0) of float32[4] at "), std::string::npos) << message;
    EXPECT_NE(message.find(at_line(kReduceLine)), std::string::npos) << message;
    EXPECT_NE(message.find(at_line(kGatherLine)), std::string::npos) << message;
  }
}

TEST_F(CollectiveIrDebugTest, AnExtraAllReduceFromAnotherLineIsAMismatchOnEveryDevice) {
  auto outcomes = run_on_devices<Values>(4, [](int d) {
    Tensor s = reduce_here(ones({4}));
    if (d == 0) s = extra_reduce_here(s);
    return next_reduce_here(ones({4})).to_vector<float>();
  });
  for (int d = 0; d < 4; ++d) {
    const std::string message = error_of<CollectiveMismatchError>(outcomes[d]);
    EXPECT_NE(message.find(at_line(kExtraLine)), std::string::npos) << d << ": " << message;
    EXPECT_NE(message.find(at_line(kNextLine)), std::string::npos) << d << ": " << message;
  }
}

TEST_F(CollectiveIrDebugTest, CollectivesFromTheSameLinesMeetAsUsual) {
  auto outcomes = run_on_devices<Values>(4, [](int d) {
    Tensor s = reduce_here(full({2}, float(d), DType::kFloat32));
    return next_reduce_here(s).to_vector<float>();
  });
  for (int d = 0; d < 4; ++d) EXPECT_EQ(outcomes[d].get(), (Values{24, 24})) << d;
}

// What IR debug is for: without it the extra all_reduce meets its peers'
// next one, which silently gives them 1 + 1 + 1 + 4 where 4 was right.
TEST_F(CollectiveIrDebugTest, WithoutItAnExtraAllReduceMeetsItsPeersNextOne) {
  set_ir_debug_enabled(false);
  set_collective_timeouts({0.2, 0.5});
  auto outcomes = run_on_devices<Values>(4, [](int d) {
    Tensor s = reduce_here(ones({4}));
    if (d == 0) s = extra_reduce_here(s);
    return next_reduce_here(ones({4})).to_vector<float>();
  });
  EXPECT_NE(error_of<CollectiveError>(outcomes[0]), "no exception");
  for (int d = 1; d < 4; ++d) EXPECT_EQ(outcomes[d].get(), (Values{7, 7, 7, 7})) << d;
}

TEST_F(CollectiveIrDebugTest, GraphDumpsShowTheLines) {
  Tensor s = reduce_here(ones({4}));
  const std::string dump = dump_pending_graph(0);
  EXPECT_NE(dump.find("all_reduce("), std::string::npos) << dump;
  EXPECT_NE(dump.find(at_line(kReduceLine) + "\n"), std::string::npos) << dump;
  drop_pending_graph(0);

  set_ir_debug_enabled(false);
  Tensor t = reduce_here(ones({4}));
  const std::string plain = dump_pending_graph(0);
  EXPECT_NE(plain.find("all_reduce("), std::string::npos) << plain;
  EXPECT_EQ(plain.find(" at "), std::string::npos) << plain;
  drop_pending_graph(0);
}

// The line recorded by t's node, or -1 for none (-2: t is data, no node).
int line_of(const Tensor& t) {
  if (!t.impl()->value.node) return -2;
  const SourceLocation* where = t.impl()->value.node->location();
  return where == nullptr ? -1 : where->line;
}

// The lines of every node t's value is made of, down to the nodes of made.
std::unordered_set<int> lines_of_graph(const Tensor& t, const std::vector<const ir::Node*>& made) {
  std::unordered_set<int> lines;
  std::vector<const ir::Node*> todo = {t.impl()->value.node.get()};
  std::unordered_set<const ir::Node*> seen(made.begin(), made.end());
  while (!todo.empty()) {
    const ir::Node* node = todo.back();
    todo.pop_back();
    if (!seen.insert(node).second) continue;
    lines.insert(node->location() == nullptr ? -1 : node->location()->line);
    for (const ir::Value& operand : node->operands()) todo.push_back(operand.node.get());
  }
  return lines;
}

// Every C++ op records its caller's line: functions, operators, methods
// (from_vector and rand_normal upload data, trace nothing); and the ops an op makes in turn (the casts of a promotion, softmax's
// exp and sum) record the user's line, not ordo's.
TEST_F(CollectiveIrDebugTest, EveryCxxOpRecordsItsCallersLine) {
  std::vector<std::pair<Tensor, int>> made;
  auto at = [&made](Tensor t, int line) {
    made.emplace_back(t, line);
    return t;
  };
  const Tensor x = at(ones({2, 3}), __LINE__);
  const Tensor v = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});  // data, not an op
  const Tensor i = at(arange(0, 3, 1), __LINE__);
  at(full({2}, 1.5, DType::kFloat64), __LINE__);
  at(random_uniform({3}, full({}, 7, DType::kInt64)), __LINE__);
  at(x + v, __LINE__);
  at(x - 2.0, __LINE__);
  at(3 * x, __LINE__);
  at(-x, __LINE__);
  at(x / v, __LINE__);
  at(add(x, cast(i, DType::kFloat32)), __LINE__);
  at(reshape(x, {3, 2}), __LINE__);
  at(exp(x), __LINE__);
  at(where(gt(x, v), x, v), __LINE__);
  at(sum(x, {1}), __LINE__);
  at(argmax(v), __LINE__);
  at(matmul(x, transpose(v, 0, 1)), __LINE__);
  at(slice(v, 1, 0, 2), __LINE__);
  at(concat({x, v}, 0), __LINE__);
  at(index_select(v, 1, i), __LINE__);
  at(one_hot(i, 3), __LINE__);
  at(softmax(v, -1), __LINE__);
  at(gelu(v, "tanh"), __LINE__);
  at(clamp(v, 2.0, 4.0), __LINE__);
  at(all_reduce(ReduceType::kSum, v), __LINE__);
  for (const auto& [t, line] : made) EXPECT_EQ(line_of(t), line) << "the op of line " << line;

  std::vector<const ir::Node*> inputs = {x.impl()->value.node.get(), v.impl()->value.node.get(),
                                         i.impl()->value.node.get()};
  const int int_plus_float = __LINE__ + 1;
  const Tensor promoted = i + x;  // casts i, and broadcasts
  EXPECT_EQ(lines_of_graph(promoted, inputs), std::unordered_set<int>{int_plus_float});
  const int softmax_line = __LINE__ + 1;
  const Tensor p = log_softmax(v, 0);
  EXPECT_EQ(lines_of_graph(p, inputs), std::unordered_set<int>{softmax_line});

  // backward(): the gradient's nodes are the backward call's.
  Tensor w = from_vector<float>({1, 2, 3}, {3});
  w.set_requires_grad();
  const Tensor loss = sum(w * w);
  inputs.push_back(w.impl()->value.node.get());
  inputs.push_back(loss.impl()->value.node.get());
  const int backward_line = __LINE__ + 1;
  loss.backward();
  EXPECT_EQ(lines_of_graph(w.grad(), inputs).count(backward_line), 1u);
  EXPECT_EQ(lines_of_graph(w.grad(), inputs).count(-1), 0u);
  drop_pending_graph(0);

  set_ir_debug_enabled(false);
  const Tensor y = ones({2});
  EXPECT_EQ(line_of(y), -1);
  EXPECT_EQ(line_of(y + y), -1);
  EXPECT_EQ(line_of(softmax(y, -1)), -1);
  drop_pending_graph(0);
}

// The outermost caller is the user: a scope inside it does not override it.
TEST(IrDebugLocationTest, TheOutermostScopeIsTheUsersLine) {
  set_ir_debug_enabled(true);
  const std::source_location outer = std::source_location::current();
  {
    const ScopedUserLocation user(outer);
    const ScopedUserLocation inner(std::source_location::current());
    ASSERT_NE(user_location(), nullptr);
    EXPECT_EQ(user_location()->line, static_cast<int>(outer.line()));
    EXPECT_EQ(user_location(), intern_source_location(outer.file_name(), static_cast<int>(outer.line())));
  }
  EXPECT_EQ(user_location(), nullptr);
  set_ir_debug_enabled(false);
  const ScopedUserLocation off(outer);
  EXPECT_EQ(user_location(), nullptr);
}

// The location is part of a node's hash only when recorded: a plan compiled
// for one line is not reused for another.
TEST(IrDebugLocationTest, TheLocationIsPartOfTheNodeHashWhenRecorded) {
  auto node_at = [](const SourceLocation* where) {
    return ir::make_node(ir::OpKind::kCcToken, {}, {ir::ValueType::token()}, {}, where);
  };
  const ir::NodePtr at42 = node_at(intern_source_location("train.py", 42));
  const ir::NodePtr at57 = node_at(intern_source_location("train.py", 57));
  EXPECT_NE(at42->hash(), at57->hash());
  EXPECT_EQ(at42->hash(), node_at(intern_source_location("train.py", 42))->hash());
  EXPECT_EQ(at42->location()->to_string(), "train.py:42");
  const ir::NodePtr plain = node_at(nullptr);
  EXPECT_EQ(plain->location(), nullptr);
  EXPECT_NE(plain->hash(), at42->hash());
}

}  // namespace
}  // namespace ordo
