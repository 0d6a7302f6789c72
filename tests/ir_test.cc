// IR: structural hashing, the op table, text dumps, deep graphs.
#include <gtest/gtest.h>

#include <thread>

#include "device/device_data.h"
#include "ir/node.h"
#include "ir/ops.h"
#include "test_util.h"

namespace ordo {
namespace {

using ir::OpKind;
using ir::ValueType;

ir::NodePtr full_node(double value) {
  return ir::make_node(OpKind::kFull, {}, {ValueType{DType::kFloat32, {2, 3}}},
                       {{static_cast<int64_t>(value)}, {value}, false});
}

TEST(IrTest, OpTableNamesEveryOp) {
  EXPECT_EQ(ir::op_name(OpKind::kAdd), "add");
  EXPECT_EQ(ir::op_name(OpKind::kIndexSelect), "index_select");
  EXPECT_EQ(ir::op_group(OpKind::kSum), ir::OpGroup::kReduce);
  for (int op = 0; op < ir::kNumOps; ++op) {
    EXPECT_FALSE(ir::op_name(static_cast<OpKind>(op)).empty()) << op;
  }
}

TEST(IrTest, EqualStructureHashesEqual) {
  auto a = full_node(1.0), b = full_node(1.0), c = full_node(2.0);
  EXPECT_EQ(a->hash(), b->hash());
  EXPECT_NE(a->hash(), c->hash());
  ValueType t{DType::kFloat32, {2, 3}};
  auto add_ab = ir::make_node(OpKind::kAdd, {{a, 0}, {b, 0}}, {t}, {});
  auto add_ba = ir::make_node(OpKind::kAdd, {{b, 0}, {a, 0}}, {t}, {});
  auto mul_ab = ir::make_node(OpKind::kMul, {{a, 0}, {b, 0}}, {t}, {});
  auto add_ac = ir::make_node(OpKind::kAdd, {{a, 0}, {c, 0}}, {t}, {});
  EXPECT_EQ(add_ab->hash(), add_ba->hash());  // same structure
  EXPECT_NE(add_ab->hash(), mul_ab->hash());
  EXPECT_NE(add_ab->hash(), add_ac->hash());
}

TEST(IrTest, DataLeavesHashByTypeOnly) {
  auto buffer = device::allocate_buffer(DType::kFloat32, {4});
  auto other = device::allocate_buffer(DType::kFloat32, {4});
  auto wide = device::allocate_buffer(DType::kFloat64, {4});
  auto a = ir::make_data_leaf(device::DeviceData::ready(buffer));
  auto b = ir::make_data_leaf(device::DeviceData::ready(other));
  auto c = ir::make_data_leaf(device::DeviceData::ready(wide));
  EXPECT_EQ(a->hash(), b->hash());
  EXPECT_NE(a->hash(), c->hash());
}

TEST(IrTest, TokenIsItsOwnType) {
  EXPECT_TRUE(ValueType::token().is_token);
  EXPECT_NE(ValueType::token(), (ValueType{DType::kBool, {}}));
  EXPECT_EQ(ValueType::token().to_string(), "token");
}

TEST(IrTest, DestroyingALongChainDoesNotOverflowTheStack) {
  ValueType t{DType::kFloat32, {1}};
  ir::NodePtr node = ir::make_node(OpKind::kFull, {}, {t}, {{0}, {0.0}, false});
  for (int i = 0; i < 1'000'000; ++i) node = ir::make_node(OpKind::kNeg, {{node, 0}}, {t}, {});
  node.reset();  // must not recurse a million frames deep
  SUCCEED();
}

TEST(IrTest, NodesBuiltOnOneThreadCanDieOnAnother) {
  // The small-block allocator caches freed blocks per thread: a graph built here
  // and freed by threads that then end must come out whole, its blocks
  // back in the C library.
  ValueType t{DType::kFloat32, {3}};
  std::vector<ir::NodePtr> graphs;
  for (int g = 0; g < 4; ++g) {
    ir::NodePtr node = full_node(g);
    for (int i = 0; i < 5000; ++i) {
      node = ir::make_node(i % 2 ? OpKind::kNeg : OpKind::kAdd,
                           i % 2 ? ir::ValueList{{node, 0}} : ir::ValueList{{node, 0}, {node, 0}}, {t}, {});
    }
    graphs.push_back(std::move(node));
  }
  std::vector<std::thread> threads;
  for (ir::NodePtr& graph : graphs) {
    threads.emplace_back([graph = std::move(graph), t]() mutable {
      EXPECT_EQ(graph->output(0), t);
      graph.reset();
      // This thread's cache now serves new nodes.
      ir::NodePtr again = ir::make_node(OpKind::kFull, {}, {t}, {{0}, {1.0}, false});
      EXPECT_EQ(again->output(0), t);
    });
  }
  for (std::thread& thread : threads) thread.join();
  void* big = detail::allocate_small_block(detail::kMaxCachedBytes + 1);
  detail::free_small_block(big, detail::kMaxCachedBytes + 1);
  detail::free_small_block(nullptr, 8);
}

using DumpTest = testing::OneDeviceTest;

TEST_F(DumpTest, DumpShowsOpsOperandsAndTypes) {
  Tensor x = from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor y = relu(x * 2.0);
  const std::string text = dump_graph({y});
  EXPECT_NE(text.find("%0 = device_data() : float32[2, 2]"), std::string::npos) << text;
  EXPECT_NE(text.find("full() ints=[2] reals=[2] : float32[]"), std::string::npos) << text;
  EXPECT_NE(text.find("= mul(%0, %1) : float32[2, 2]"), std::string::npos) << text;
  EXPECT_NE(text.find("= relu(%2) : float32[2, 2]"), std::string::npos) << text;
  EXPECT_NE(text.find("roots: %3"), std::string::npos) << text;
  // Only y is alive and pending, so the device's pending graph is y's graph.
  EXPECT_EQ(dump_pending_graph(), text);
}

}  // namespace
}  // namespace ordo
