// The collectives' gradient rules on in-process devices: the backward
// collectives are issued in reverse order of the forward ones on every
// device, chained through the cc token, and give the gradient of the sum of
// every device's loss (with and without replica groups).
#include <gtest/gtest.h>

#include <sstream>

#include "ordo/autograd.h"
#include "spmd.h"

namespace ordo {
namespace {

using testing::run_on_devices;

struct Case {
  int world;
  bool groups;  // even and odd ordinals as two groups
};

class AutogradCollectivesTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    shutdown();
    init(GetParam().world);
  }
  void TearDown() override { shutdown(); }

  ReplicaGroups groups() const {
    if (!GetParam().groups) return {};
    ReplicaGroups even_odd(2);
    for (int d = 0; d < GetParam().world; ++d) even_odd[d % 2].push_back(d);
    return even_odd;
  }
  int64_t group_size() const { return GetParam().groups ? GetParam().world / 2 : GetParam().world; }
};

// One line of a graph dump that is a collective: its node, op and operands.
struct CollectiveLine {
  std::string node;  // "%7"
  std::string op;
  std::vector<std::string> operands;
  size_t outputs;  // data outputs and the token
};

bool is_collective(const std::string& op) {
  for (const char* name : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "collective_permute",
                           "collective_broadcast"}) {
    if (op == name) return true;
  }
  return false;
}

// The collectives of a dump in its order ("  %4 = all_gather(%1, %3) ... : (f64[8], token)").
std::vector<CollectiveLine> collectives_of(const std::string& dump) {
  std::vector<CollectiveLine> found;
  std::istringstream lines(dump);
  for (std::string line; std::getline(lines, line);) {
    const size_t eq = line.find(" = "), open = line.find('('), close = line.find(')');
    if (eq == std::string::npos || open == std::string::npos || close == std::string::npos) continue;
    CollectiveLine c{line.substr(line.find('%'), eq - line.find('%')), line.substr(eq + 3, open - eq - 3), {}, 1};
    if (!is_collective(c.op)) continue;
    std::istringstream operands(line.substr(open + 1, close - open - 1));
    for (std::string operand; std::getline(operands, operand, ',');) c.operands.push_back(operand.substr(operand.find('%')));
    const std::string types = line.substr(line.rfind(" : ") + 3);
    c.outputs = static_cast<size_t>(std::count(types.begin(), types.end(), ',')) + 1;
    found.push_back(std::move(c));
  }
  return found;
}

TEST_P(AutogradCollectivesTest, BackwardCollectivesRunInReverseOnTheTokenChainAndSumEveryDevicesLoss) {
  const ReplicaGroups partition = groups();
  const int64_t g = group_size();
  auto outcomes = run_on_devices<std::vector<double>>(GetParam().world, [&](int d) {
    std::vector<double> values(static_cast<size_t>(2 * g));
    for (size_t i = 0; i < values.size(); ++i) values[i] = 0.25 * d - 0.5 * static_cast<double>(i);
    Tensor x = from_vector<double>(values, {2 * g});
    x.set_requires_grad(true);
    // Over a group, all_to_all only moves elements between its members:
    // the group's loss is 0.5 * g * (sum of the gathered squares), and each
    // member's share of it is the same.
    Tensor gathered = all_gather(x, 0, partition);
    Tensor exchanged = all_to_all(gathered, 0, 0, g, partition);
    Tensor loss = sum(all_reduce(ReduceType::kSum, exchanged * exchanged, 0.5, partition));
    loss.backward();

    const std::vector<CollectiveLine> chain = collectives_of(dump_pending_graph());
    const std::vector<std::string> expected_ops{"all_gather", "all_to_all", "all_reduce",
                                                "all_reduce", "all_to_all", "reduce_scatter"};
    EXPECT_EQ(chain.size(), expected_ops.size());
    for (size_t i = 0; i < std::min(chain.size(), expected_ops.size()); ++i) {
      EXPECT_EQ(chain[i].op, expected_ops[i]) << "collective #" << i;
      if (i == 0) continue;
      // The token a collective takes (its last operand) is its predecessor's new one (its last output).
      const CollectiveLine& before = chain[i - 1];
      EXPECT_EQ(chain[i].operands.back(), before.node + "." + std::to_string(before.outputs - 1))
          << chain[i].op << " #" << i << " does not follow " << before.op;
    }
    mark_step();
    return x.grad().to_vector<double>();
  });
  for (int d = 0; d < GetParam().world; ++d) {
    const std::vector<double>& got = outcomes[d].get();
    // Every member's loss is 0.5 * g * |X|^2 over the group's X: the sum
    // over the group's g members has gradient g * g * x.
    for (size_t i = 0; i < got.size(); ++i) {
      const double x = 0.25 * d - 0.5 * static_cast<double>(i);
      EXPECT_DOUBLE_EQ(got[i], static_cast<double>(g * g) * x) << "device " << d << " element " << i;
    }
  }
}

TEST_P(AutogradCollectivesTest, AnAllReduceOfMaxNamesItselfWhenDifferentiated) {
  const ReplicaGroups partition = groups();
  auto outcomes = run_on_devices<std::string>(GetParam().world, [&](int d) {
    Tensor x = full({3}, double(d), DType::kFloat64);
    x.set_requires_grad(true);
    Tensor loss = sum(all_reduce(ReduceType::kMax, x, 1.0, partition));
    try {
      loss.backward();
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  });
  for (int d = 0; d < GetParam().world; ++d) {
    EXPECT_NE(outcomes[d].get().find("all_reduce(max) has no gradient"), std::string::npos) << outcomes[d].get();
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, AutogradCollectivesTest,
                         ::testing::Values(Case{2, false}, Case{4, false}, Case{4, true}),
                         [](const auto& info) {
                           return "world" + std::to_string(info.param.world) + (info.param.groups ? "_groups" : "");
                         });

}  // namespace
}  // namespace ordo
