// Every collective, with and without replica groups, over world sizes 1..8
// and element counts including 0 and non-multiples of the world size,
// against a plain reference loop.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "spmd.h"

namespace ordo {
namespace {

using testing::run_on_devices;

struct Case {
  int world;
  int64_t count;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return "world" + std::to_string(info.param.world) + "_n" + std::to_string(info.param.count);
}

class CollectivesTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    shutdown();
    init(world());
  }
  void TearDown() override { shutdown(); }
  int world() const { return GetParam().world; }
  int64_t count() const { return GetParam().count; }

  // Device d's input: element i is d * 1000 + i (exact in float32).
  static std::vector<float> input_of(int d, int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[i] = float(d * 1000 + i);
    return v;
  }

  // Even and odd ordinals: two groups when the world has at least two
  // devices (and an even count, for ops that need equal group sizes).
  ReplicaGroups even_odd(bool equal_sizes = false) const {
    if (world() < 2 || (equal_sizes && world() % 2 != 0)) return {};
    ReplicaGroups groups(2);
    for (int d = 0; d < world(); ++d) groups[d % 2].push_back(d);
    return groups;
  }

  static const std::vector<int>& group_of(int d, const ReplicaGroups& groups, std::vector<int>& all,
                                          int world) {
    for (const auto& g : groups) {
      if (std::find(g.begin(), g.end(), d) != g.end()) return g;
    }
    all.resize(world);
    std::iota(all.begin(), all.end(), 0);
    return all;
  }

  template <typename T>
  std::vector<std::vector<T>> values(const std::vector<testing::DeviceOutcome<std::vector<T>>>& outcomes) {
    std::vector<std::vector<T>> out;
    for (const auto& o : outcomes) out.push_back(o.get());
    return out;
  }
};

TEST_P(CollectivesTest, AllReduceSumWithAndWithoutGroups) {
  for (const ReplicaGroups& groups : {ReplicaGroups{}, even_odd()}) {
    auto got = values(run_on_devices<std::vector<float>>(world(), [&](int d) {
      Tensor x = from_vector(input_of(d, count()), {count()});
      Tensor y = all_reduce(ReduceType::kSum, x, 0.5, groups);
      mark_step();
      return y.to_vector<float>();
    }));
    for (int d = 0; d < world(); ++d) {
      std::vector<int> all;
      const std::vector<int>& group = group_of(d, groups, all, world());
      std::vector<float> expected(static_cast<size_t>(count()));
      for (int64_t i = 0; i < count(); ++i) {
        float acc = input_of(group[0], count())[i];
        for (size_t r = 1; r < group.size(); ++r) acc += input_of(group[r], count())[i];
        expected[i] = static_cast<float>(acc * 0.5);
      }
      EXPECT_EQ(got[d], expected) << "device " << d << " groups " << groups.size();
    }
  }
}

TEST_P(CollectivesTest, AllReduceEveryReduceTypeOnIntegersAndBools) {
  for (ReduceType reduce : {ReduceType::kSum, ReduceType::kMul, ReduceType::kMin, ReduceType::kMax,
                            ReduceType::kAnd, ReduceType::kOr}) {
    auto got = values(run_on_devices<std::vector<int64_t>>(world(), [&](int d) {
      std::vector<int64_t> v(static_cast<size_t>(count()));
      for (int64_t i = 0; i < count(); ++i) v[i] = (d + 2) * (i % 5 + 1) - 3;
      Tensor y = all_reduce(reduce, from_vector(v, {count()}));
      return y.to_vector<int64_t>();
    }));
    for (int64_t i = 0; i < count(); ++i) {
      int64_t acc = 2 * (i % 5 + 1) - 3;
      for (int d = 1; d < world(); ++d) {
        const int64_t x = (d + 2) * (i % 5 + 1) - 3;
        switch (reduce) {
          case ReduceType::kSum: acc += x; break;
          case ReduceType::kMul: acc *= x; break;
          case ReduceType::kMin: acc = std::min(acc, x); break;
          case ReduceType::kMax: acc = std::max(acc, x); break;
          case ReduceType::kAnd: acc &= x; break;
          case ReduceType::kOr: acc |= x; break;
        }
      }
      for (int d = 0; d < world(); ++d) ASSERT_EQ(got[d][i], acc) << reduce_type_name(reduce) << " i " << i;
    }
  }
  auto flags = values(run_on_devices<std::vector<bool>>(world(), [&](int d) {
    std::vector<bool> v(static_cast<size_t>(count()));
    for (int64_t i = 0; i < count(); ++i) v[i] = (i + d) % 3 != 0;
    std::vector<Tensor> both{from_vector(v, {count()}), from_vector(v, {count()})};
    std::vector<Tensor> kept = both;  // handles share the tensors: in place shows through
    all_reduce_inplace(ReduceType::kAnd, both);
    EXPECT_FALSE(kept[0].is_pending() && !both[0].is_pending());
    return kept[1].to_vector<bool>();
  }));
  for (int64_t i = 0; i < count(); ++i) {
    bool all = true;
    for (int d = 0; d < world(); ++d) all = all && (i + d) % 3 != 0;
    for (int d = 0; d < world(); ++d) ASSERT_EQ(flags[d][i], all) << "i " << i;
  }
}

TEST_P(CollectivesTest, CoalescedListIsReducedInPlaceAsOneOp) {
  auto got = values(run_on_devices<std::vector<double>>(world(), [&](int d) {
    std::vector<Tensor> list{full({count()}, 1.0, DType::kFloat64), full({3, 2}, double(d), DType::kFloat64)};
    all_reduce_inplace(ReduceType::kSum, list, 2.0);
    const std::string graph = dump_pending_graph();
    EXPECT_NE(graph.find("(4 nodes"), std::string::npos) << graph;  // 2 full, token, all_reduce
    std::vector<double> out = list[0].to_vector<double>();
    for (double v : list[1].to_vector<double>()) out.push_back(v);
    return out;
  }));
  const double sum_of_ordinals = world() * (world() - 1) / 2.0;
  for (int d = 0; d < world(); ++d) {
    for (int64_t i = 0; i < count(); ++i) ASSERT_EQ(got[d][i], 2.0 * world());
    for (size_t i = count(); i < got[d].size(); ++i) ASSERT_EQ(got[d][i], 2.0 * sum_of_ordinals);
  }
}

TEST_P(CollectivesTest, AllGatherAlongEachDimWithAndWithoutGroups) {
  for (const ReplicaGroups& groups : {ReplicaGroups{}, even_odd(true)}) {
    for (int64_t dim : {0, 1}) {
      auto got = values(run_on_devices<std::vector<float>>(world(), [&](int d) {
        Tensor x = from_vector(input_of(d, 2 * count()), {2, count()});
        return all_gather(x, dim, groups).to_vector<float>();
      }));
      for (int d = 0; d < world(); ++d) {
        std::vector<int> all;
        const std::vector<int>& group = group_of(d, groups, all, world());
        std::vector<float> expected;
        for (int64_t row = 0; row < 2; ++row) {
          for (size_t r = 0; r < group.size(); ++r) {
            // dim 1: each row is the concatenation of every member's row.
            if (dim == 1) {
              auto in = input_of(group[r], 2 * count());
              expected.insert(expected.end(), in.begin() + row * count(), in.begin() + (row + 1) * count());
            }
          }
        }
        if (dim == 0) {
          for (size_t r = 0; r < group.size(); ++r) {
            auto in = input_of(group[r], 2 * count());
            expected.insert(expected.end(), in.begin(), in.end());
          }
        }
        EXPECT_EQ(got[d], expected) << "device " << d << " dim " << dim;
      }
    }
  }
}

TEST_P(CollectivesTest, ReduceScatterGivesEachRankItsShard) {
  const ReplicaGroups groups = even_odd(true);
  std::vector<int> all;
  const int group_size = static_cast<int>(group_of(0, groups, all, world()).size());
  const int64_t rows = group_size * 2;
  auto got = values(run_on_devices<std::vector<float>>(world(), [&](int d) {
    Tensor x = from_vector(input_of(d, rows * count()), {rows, count()});
    return reduce_scatter(ReduceType::kSum, x, 0.25, 0, group_size, groups).to_vector<float>();
  }));
  for (int d = 0; d < world(); ++d) {
    std::vector<int> members_all;
    const std::vector<int>& group = group_of(d, groups, members_all, world());
    const auto rank = std::find(group.begin(), group.end(), d) - group.begin();
    const int64_t shard = rows / group_size * count();
    std::vector<float> expected(static_cast<size_t>(shard));
    for (int64_t i = 0; i < shard; ++i) {
      float acc = input_of(group[0], rows * count())[rank * shard + i];
      for (size_t r = 1; r < group.size(); ++r) acc += input_of(group[r], rows * count())[rank * shard + i];
      expected[i] = static_cast<float>(acc * 0.25);
    }
    EXPECT_EQ(got[d], expected) << "device " << d;
  }
}

TEST_P(CollectivesTest, AllToAllExchangesChunks) {
  auto got = values(run_on_devices<std::vector<int32_t>>(world(), [&](int d) {
    // Row j goes to rank j; rows arrive concatenated along dim 1.
    std::vector<int32_t> v;
    for (int j = 0; j < world(); ++j) {
      for (int64_t i = 0; i < count(); ++i) v.push_back(d * 100 + j * 10 + int32_t(i));
    }
    Tensor x = from_vector(v, {world(), count()});
    return all_to_all(x, 0, 1, world()).to_vector<int32_t>();
  }));
  for (int d = 0; d < world(); ++d) {
    std::vector<int32_t> expected;
    for (int q = 0; q < world(); ++q) {
      for (int64_t i = 0; i < count(); ++i) expected.push_back(q * 100 + d * 10 + int32_t(i));
    }
    EXPECT_EQ(got[d], expected) << "device " << d;
  }
}

TEST_P(CollectivesTest, CollectivePermuteAlongARingLeavesNonTargetsZero) {
  std::vector<std::pair<int, int>> ring;
  for (int d = 0; d + 1 < world(); ++d) ring.emplace_back(d, d + 1);  // device 0 is no target
  auto got = values(run_on_devices<std::vector<float>>(world(), [&](int d) {
    return collective_permute(from_vector(input_of(d, count()), {count()}), ring).to_vector<float>();
  }));
  for (int d = 0; d < world(); ++d) {
    const std::vector<float> expected = d == 0 ? std::vector<float>(count(), 0.0f) : input_of(d - 1, count());
    EXPECT_EQ(got[d], expected) << "device " << d;
  }
}

TEST_P(CollectivesTest, CollectiveBroadcastCopiesTheRootInPlace) {
  const ReplicaGroups groups = even_odd();
  auto got = values(run_on_devices<std::vector<float>>(world(), [&](int d) {
    std::vector<Tensor> tensors{from_vector(input_of(d, count()), {count()})};
    collective_broadcast(tensors, 0, groups);
    return tensors[0].to_vector<float>();
  }));
  for (int d = 0; d < world(); ++d) {
    // As in torch_xla, a group without the root gets zeros.
    const bool has_root = groups.empty() || d % 2 == 0;
    const std::vector<float> expected = has_root ? input_of(0, count()) : std::vector<float>(count(), 0.0f);
    EXPECT_EQ(got[d], expected) << "device " << d;
  }
}

TEST_P(CollectivesTest, ReductionsAreBitwiseTheSameEverywhereAndEveryRun) {
  auto run = [&] {
    return values(run_on_devices<std::vector<float>>(world(), [&](int d) {
      Tensor x = rand_normal({count()}, 10 + d);
      return all_reduce(ReduceType::kSum, x * 1e3).to_vector<float>();
    }));
  };
  const auto first = run();
  for (int d = 1; d < world(); ++d) EXPECT_EQ(first[d], first[0]);
  EXPECT_EQ(run(), first);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int world = 1; world <= 8; ++world) {
    for (int64_t count : {0, 1, 7, 1000}) out.push_back({world, count});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, CollectivesTest, ::testing::ValuesIn(cases()), case_name);

}  // namespace
}  // namespace ordo

namespace ordo {
namespace {

// Outputs of 8 MiB and more take the streaming-store path (a line at a
// time, the share of the last rank ending inside a line), and small ones
// (<= 4 KiB) the one-meeting path: both against the reference loop, for
// each floating reduce type.
TEST(CollectivesLargeAndSmall, AllReduceIsExactOnEveryPath) {
  struct Reduction {
    ReduceType type;
    double scale;
    float (*op)(float, float);
  };
  const Reduction reductions[] = {
      {ReduceType::kSum, 0.5, [](float a, float b) { return a + b; }},
      {ReduceType::kMul, 1.0, [](float a, float b) { return a * b; }},
      {ReduceType::kMin, 1.0, [](float a, float b) { return std::min(a, b); }},
      {ReduceType::kMax, 2.0, [](float a, float b) { return std::max(a, b); }},
  };
  for (int world : {2, 3}) {
    for (int64_t count : {int64_t{1000}, (int64_t{3} << 20) + 5}) {
      shutdown();
      init(world);
      std::vector<std::vector<float>> inputs;
      for (int d = 0; d < world; ++d) {
        DeviceGuard on(0);
        inputs.push_back(rand_uniform({count}, 100 + d).to_vector<float>());
      }
      for (const Reduction& r : reductions) {
        auto outcomes = testing::run_on_devices<std::vector<float>>(world, [&](int d) {
          Tensor x = rand_uniform({count}, 100 + d);
          return all_reduce(r.type, x, r.scale).to_vector<float>();
        });
        for (int64_t i = 0; i < count; ++i) {
          float acc = inputs[0][i];
          for (int d = 1; d < world; ++d) acc = r.op(acc, inputs[d][i]);
          const float expected = static_cast<float>(acc * r.scale);
          for (int d = 0; d < world; ++d) {
            ASSERT_EQ(outcomes[d].get()[i], expected)
                << "world " << world << " count " << count << " reduce " << static_cast<int>(r.type) << " i " << i;
          }
        }
      }
    }
  }
  shutdown();
}

// A coalesced all_reduce streams when its participants write 8 MiB or more
// in all, even if every tensor is smaller: the tensors here are 4 MiB and
// a few elements (and one of 7), 8 MiB and more across two devices. Each
// comes out exact, whatever its size and dtype.
std::vector<double> as_doubles(const Tensor& x) {
  if (x.dtype() == DType::kFloat64) return x.to_vector<double>();
  const std::vector<float> values = x.to_vector<float>();
  return {values.begin(), values.end()};
}

TEST(CollectivesLargeAndSmall, ACoalescedAllReduceOfSmallerTensorsIsExactWhenItStreams) {
  for (int world : {2, 3}) {
    shutdown();
    init(world);
    const std::vector<int64_t> counts = {(int64_t{1} << 20) + 3, 7, (int64_t{1} << 20) + 17};
    auto inputs_of = [&](int d) {
      std::vector<Tensor> inputs;
      for (size_t t = 0; t < counts.size(); ++t) {
        inputs.push_back(rand_uniform({counts[t]}, 200 + 10 * d + static_cast<int>(t)));
      }
      inputs.push_back(cast(rand_uniform({4099}, 300 + d), DType::kFloat64));
      return inputs;
    };
    auto outcomes = testing::run_on_devices<std::vector<std::vector<double>>>(world, [&](int d) {
      std::vector<Tensor> tensors = inputs_of(d);
      all_reduce_inplace(ReduceType::kSum, tensors, 0.25);
      std::vector<std::vector<double>> values;
      for (const Tensor& t : tensors) values.push_back(as_doubles(t));
      return values;
    });
    std::vector<std::vector<std::vector<double>>> inputs(world);
    for (int d = 0; d < world; ++d) {
      DeviceGuard on(0);
      for (const Tensor& t : inputs_of(d)) inputs[d].push_back(as_doubles(t));
    }
    for (size_t t = 0; t < inputs[0].size(); ++t) {
      const bool is_float = t < counts.size();
      for (int d = 0; d < world; ++d) {
        const std::vector<double>& got = outcomes[d].get()[t];
        ASSERT_EQ(got.size(), inputs[0][t].size());
        for (size_t i = 0; i < got.size(); ++i) {
          double acc = inputs[0][t][i];
          for (int q = 1; q < world; ++q) {
            acc = is_float ? static_cast<float>(acc + inputs[q][t][i]) : acc + inputs[q][t][i];
          }
          const double expected = is_float ? static_cast<float>(acc * 0.25) : acc * 0.25;
          ASSERT_EQ(got[i], expected) << "world " << world << " tensor " << t << " device " << d << " i " << i;
        }
      }
    }
  }
  shutdown();
}

}  // namespace
}  // namespace ordo
