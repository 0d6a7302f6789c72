// IR debug (ordo/ir_debug.h): nodes record the caller's line, dumps and
// collective errors show it, and a collective reached from another line than
// its peers' is a mismatch on every device. With it off nothing changes.
#include <gtest/gtest.h>

#include <string>

#include "core/source_location.h"
#include "ir/node.h"
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
    return ir::make_node(ir::OpKind::kCcToken, {}, {ir::ValueType::token()}, {}, 0, where);
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
