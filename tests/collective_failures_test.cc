// What happens when devices disagree, wait too long, fail or are gone, and
// when a collective gets bad arguments: a clear error, never a hang.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "spmd.h"
#include "test_util.h"

namespace ordo {
namespace {

using testing::error_of;
using testing::run_on_devices;

class CollectiveFailuresTest : public testing::FourDeviceTest {
 protected:
  void TearDown() override {
    set_collective_timeouts({});
    testing::FourDeviceTest::TearDown();
  }
};

TEST_F(CollectiveFailuresTest, MismatchFailsEveryParticipantNamingDevicesAndOps) {
  set_collective_timeouts({5.0, 30.0});
  auto outcomes = run_on_devices<int>(4, [](int d) {
    const int64_t n = d == 2 ? 4 : 3;  // device 2 brings another shape
    all_reduce(ReduceType::kSum, ones({n})).to_vector<float>();
    return 0;
  });
  for (int d = 0; d < 4; ++d) {
    const std::string message = error_of<CollectiveMismatchError>(outcomes[d]);
    EXPECT_NE(message.find("collective mismatch"), std::string::npos) << d << ": " << message;
    EXPECT_NE(message.find("device 2 runs all_reduce(sum, scale 1) of float32[4]"), std::string::npos)
        << message;
    EXPECT_NE(message.find("of float32[3]"), std::string::npos) << message;
  }
}

TEST_F(CollectiveFailuresTest, DifferentOpsAtTheSameStepAreAMismatch) {
  set_collective_timeouts({5.0, 30.0});
  auto outcomes = run_on_devices<int>(4, [](int d) {
    Tensor x = ones({4});
    Tensor y = d == 0 ? all_gather(x) : all_reduce(ReduceType::kSum, x);
    y.to_vector<float>();
    return 0;
  });
  for (int d = 0; d < 4; ++d) {
    const std::string message = error_of<CollectiveMismatchError>(outcomes[d]);
    EXPECT_NE(message.find("all_gather(dim 0)"), std::string::npos) << message;
  }
}

TEST_F(CollectiveFailuresTest, WaitingTooLongWarnsThenTimesOut) {
  set_collective_timeouts({0.05, 0.3});
  ::testing::internal::CaptureStderr();
  auto outcomes = run_on_devices<int>(2, [](int d) {
    if (d == 0) all_reduce(ReduceType::kSum, ones({2}), 1.0, {{0, 1}, {2}, {3}}).to_vector<float>();
    return 0;  // device 1 never joins
  });
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  const std::string message = error_of<CollectiveTimeoutError>(outcomes[0]);
  EXPECT_NE(message.find("device 0 waited 0.3 s in all_reduce"), std::string::npos) << message;
  EXPECT_NE(message.find("missing devices: 1 (has not reached a collective yet)"), std::string::npos) << message;
  EXPECT_NE(warnings.find("device 0 has waited 0.05 s"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("missing devices: 1"), std::string::npos) << warnings;
}

TEST_F(CollectiveFailuresTest, APeerWhoseGraphFailsMakesTheOthersFailPromptly) {
  set_collective_timeouts({60.0, 120.0});  // "promptly": long before any timeout
  const auto start = std::chrono::steady_clock::now();
  auto outcomes = run_on_devices<int>(4, [](int d) {
    Tensor x = ones({3});
    if (d == 1) x = index_select(x, 0, from_vector<int64_t>({5}, {1}));  // fails at run time
    all_reduce(ReduceType::kSum, x).to_vector<float>();
    return 0;
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_NE(error_of<ExecutionError>(outcomes[1]).find("index_select"), std::string::npos);
  for (int d : {0, 2, 3}) {
    const std::string message = error_of<CollectiveError>(outcomes[d]);
    EXPECT_NE(message.find("device 1 will not join all_reduce"), std::string::npos) << message;
    EXPECT_NE(message.find("index 5 is out of range"), std::string::npos) << message;
  }
}

TEST_F(CollectiveFailuresTest, APeerThatIsGoneMakesTheOthersFailPromptly) {
  set_collective_timeouts({60.0, 120.0});
  auto outcomes = run_on_devices<int>(4, [](int d) {
    if (d == 3) throw std::runtime_error("user code failed");  // before any collective
    all_reduce(ReduceType::kSum, ones({2})).to_vector<float>();
    return 0;
  });
  for (int d = 0; d < 3; ++d) {
    const std::string message = error_of<CollectiveError>(outcomes[d]);
    EXPECT_NE(message.find("device 3 is gone (its thread raised: user code failed)"), std::string::npos)
        << message;
  }
  // Later collectives that need device 3 fail at once too.
  DeviceGuard on(0);
  EXPECT_THROW(all_reduce(ReduceType::kSum, ones({2})).to_vector<float>(), CollectiveError);
}

TEST_F(CollectiveFailuresTest, ShutdownDoesNotWaitForACollectiveItsPeersNeverQueued) {
  set_collective_timeouts({60.0, 120.0});
  {
    DeviceGuard on(1);
    Tensor lonely = all_reduce(ReduceType::kSum, ones({2}));
    mark_step();  // device 1's worker now waits for devices 0, 2 and 3
  }
  const auto start = std::chrono::steady_clock::now();
  shutdown();
  // Before, shutdown waited out the 120 s timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST_F(CollectiveFailuresTest, BadArgumentsAreTraceTimeErrorsThatLeaveTheTokenAlone) {
  Tensor x = ones({6});
  all_reduce(ReduceType::kSum, x);
  std::vector<Tensor> mixed{ones({2}, DType::kFloat32, 0), ones({2}, DType::kFloat32, 1)};
  const std::string before = dump_pending_graph();
  EXPECT_THROW(parse_reduce_type("avg"), InvalidArgument);
  EXPECT_EQ(parse_reduce_type("max"), ReduceType::kMax);
  EXPECT_THROW(all_reduce(ReduceType::kSum, x, 1.0, {{0, 1}, {1, 2, 3}}), InvalidArgument);
  EXPECT_THROW(all_reduce(ReduceType::kSum, x, 1.0, {{0, 1}}), InvalidArgument);
  EXPECT_THROW(all_reduce(ReduceType::kSum, x, 1.0, {{0, 1, 2, 5}}), InvalidArgument);
  EXPECT_THROW(all_reduce(ReduceType::kSum, x, 1.0, {{}, {0, 1, 2, 3}}), InvalidArgument);
  EXPECT_THROW(all_reduce(ReduceType::kAnd, x), DTypeError);
  EXPECT_THROW(all_reduce(ReduceType::kSum, ones({2}, DType::kBool)), DTypeError);
  EXPECT_THROW(all_reduce(ReduceType::kOr, ones({2}, DType::kInt32), 2.0), InvalidArgument);
  EXPECT_THROW(all_gather(x, 0, {{0}, {1, 2, 3}}), InvalidArgument);
  EXPECT_THROW(all_gather(full({}, 1.0, DType::kFloat32)), InvalidArgument);
  EXPECT_THROW(all_gather(x, 3), InvalidArgument);
  EXPECT_THROW(reduce_scatter(ReduceType::kSum, ones({3}), 1.0, 0, 4), InvalidArgument);
  EXPECT_THROW(reduce_scatter(ReduceType::kSum, x, 1.0, 0, 3), InvalidArgument);
  EXPECT_THROW(all_to_all(ones({8}), 0, 0, 2), InvalidArgument);
  EXPECT_THROW(all_to_all(x, 0, 0, 4), InvalidArgument);
  EXPECT_THROW(collective_permute(x, {{0, 4}}), InvalidArgument);
  EXPECT_THROW(collective_permute(x, {{0, 1}, {2, 1}}), InvalidArgument);
  EXPECT_THROW(all_reduce_inplace(ReduceType::kSum, mixed), InvalidArgument);
  std::vector<Tensor> none;
  EXPECT_THROW(all_reduce_inplace(ReduceType::kSum, none), InvalidArgument);
  std::vector<Tensor> one{x};
  EXPECT_THROW(collective_broadcast(one, 7), InvalidArgument);
  EXPECT_EQ(dump_pending_graph(), before);
}

TEST(CollectivesWorldOfOne, EveryCollectiveIsACopy) {
  shutdown();
  init(1);
  Tensor x = from_vector<float>({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(all_reduce(ReduceType::kSum, x, 2.0).to_vector<float>(), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(all_gather(x, 1).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(reduce_scatter(ReduceType::kMax, x, 1.0, 0, 1).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(all_to_all(x, 0, 1, 1).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(collective_permute(x, {{0, 0}}).to_vector<float>(), x.to_vector<float>());
  std::vector<Tensor> list{x};
  collective_broadcast(list, 0);
  EXPECT_EQ(list[0].to_vector<float>(), x.to_vector<float>());
  shutdown();
}

}  // namespace
}  // namespace ordo
