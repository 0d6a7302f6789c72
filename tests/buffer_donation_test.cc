// Buffer donation: a fused step writes an output over an input that dies
// with it, when nothing outside the run holds the input's bytes. These tests
// check when it happens, that it never changes a value someone can still
// read (a tensor, a view of it), and that results are bitwise those of a
// run that allocates every output.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "plans.h"
#include "spmd.h"
#include "test_util.h"

namespace ordo {
namespace {

// Counters add up over the process: each test counts from its start.
class BufferDonationTest : public testing::OneDeviceTest {
 protected:
  void SetUp() override {
    testing::OneDeviceTest::SetUp();
    before_ = counter_value("DonatedBuffer", 0).value();
  }
  // The outputs written in place so far, once the queued graphs ran.
  int64_t donated() const {
    wait_device_ops();
    return counter_value("DonatedBuffer", 0).value() - before_;
  }

 private:
  int64_t before_ = 0;
};
using testing::plan_of;

std::vector<float> iota_floats(size_t n, float scale) {
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = scale * static_cast<float>(i % 997) - 3.0f;
  return values;
}

TEST_F(BufferDonationTest, AnInputNobodyHoldsIsWrittenOverInPlace) {
  const std::vector<float> host = iota_floats(5000, 0.25f);
  Tensor x = from_vector(host, {5000});
  x = x * 2.0f + 1.0f;  // the old value is held by the graph alone
  mark_step();
  EXPECT_EQ(donated(), 1);
  const std::vector<float> got = x.to_vector<float>();
  for (size_t i = 0; i < host.size(); ++i) ASSERT_EQ(got[i], host[i] * 2.0f + 1.0f) << i;
}

TEST_F(BufferDonationTest, AnInputATensorStillHoldsKeepsItsValue) {
  const std::vector<float> host = iota_floats(5000, 0.25f);
  const Tensor x = from_vector(host, {5000});
  Tensor y = x * 2.0f + 1.0f;
  mark_step();
  EXPECT_EQ(donated(), 0);
  EXPECT_EQ(x.to_vector<float>(), host);
  EXPECT_EQ(y.to_vector<float>()[7], host[7] * 2.0f + 1.0f);
}

TEST_F(BufferDonationTest, AViewOfTheInputKeepsItsBytes) {
  const std::vector<float> host = iota_floats(4096, 0.5f);
  Tensor x = from_vector(host, {4096});
  const Tensor view = reshape(x, {64, 64});  // shares x's bytes once run
  mark_step();
  x = x * 3.0f - 1.0f;
  mark_step();
  EXPECT_EQ(donated(), 0);
  EXPECT_EQ(view.to_vector<float>(), host);
  EXPECT_EQ(x.to_vector<float>()[5], host[5] * 3.0f - 1.0f);
}

TEST_F(BufferDonationTest, AValueTheGraphStillReadsLaterIsNotWrittenOver) {
  const std::vector<float> host = iota_floats(5000, 0.25f);
  Tensor x = from_vector(host, {5000});
  Tensor y = exp(x) * 0.5f;  // x is read again below, after this group
  Tensor total = sum(x);
  x = Tensor();
  mark_step();
  EXPECT_EQ(donated(), 0);
  double expected = 0;
  for (float v : host) expected += v;
  EXPECT_NEAR(total.item<float>(), expected, 1e-3 * std::abs(expected));
  EXPECT_FLOAT_EQ(y.to_vector<float>()[11], std::exp(host[11]) * 0.5f);
}

// The momentum update of SGD: both the buffer and the parameter are written
// over, the parameter by an add that reads it (through a scratch register).
TEST_F(BufferDonationTest, AMomentumUpdateWritesBothStatesInPlaceBitwiseAsWithoutIt) {
  const size_t n = 3000;
  auto run = [&](bool keep_inputs) {
    Tensor p = from_vector(iota_floats(n, 0.01f), {3000});
    Tensor buf = from_vector(iota_floats(n, -0.02f), {3000});
    const Tensor grad = from_vector(iota_floats(n, 0.003f), {3000});
    std::vector<Tensor> kept;
    for (int step = 0; step < 3; ++step) {
      if (keep_inputs) kept.insert(kept.end(), {p, buf});
      buf = buf * 0.9f + grad;
      p = p + buf * -0.1f;
      mark_step();
    }
    return std::vector<std::vector<float>>{p.to_vector<float>(), buf.to_vector<float>()};
  };
  const auto allocated = run(true);
  EXPECT_EQ(donated(), 0);
  const auto in_place = run(false);
  EXPECT_EQ(donated(), 6);  // both states, every step
  EXPECT_EQ(in_place, allocated);

  Tensor p = from_vector(iota_floats(n, 0.01f), {3000});
  Tensor buf = from_vector(iota_floats(n, -0.02f), {3000});
  const Tensor grad = from_vector(iota_floats(n, 0.003f), {3000});
  buf = buf * 0.9f + grad;
  p = p + buf * -0.1f;
  const auto plan = plan_of({p, buf});
  for (const executor::PlanStep& step : plan->steps) {
    // buf's output may take the old buf or grad; p's any of the three.
    if (step.fused) {
      EXPECT_EQ(step.reuses.size(), 5u);
    }
  }
}

TEST_F(BufferDonationTest, EveryDtypeAndTileEdgeGivesTheAllocatedResults) {
  for (const int64_t n : {int64_t{1}, int64_t{1023}, int64_t{1025}, int64_t{70000}}) {
    SCOPED_TRACE(n);
    auto run = [&](bool keep) {
      Tensor a = rand_uniform({n}, 7, -3, 3, DType::kFloat64);
      Tensor i = cast(rand_uniform({n}, 8, -50, 50), DType::kInt32);
      mark_step();
      const Tensor held_a = keep ? a : Tensor(), held_i = keep ? i : Tensor();
      a = tanh(a) * a + 1.0;
      i = i * 3 - i;
      mark_step();
      return std::make_pair(a.to_vector<double>(), i.to_vector<int32_t>());
    };
    const auto before = donated();
    const auto allocated = run(true);
    EXPECT_EQ(donated(), before);
    const auto in_place = run(false);
    EXPECT_EQ(donated(), before + 2);
    EXPECT_EQ(0, std::memcmp(in_place.first.data(), allocated.first.data(), allocated.first.size() * sizeof(double)));
    EXPECT_EQ(in_place.second, allocated.second);
  }
}

// A reader on another thread holds the value, reads it and lets go while
// the graph that consumes it is queued: whether the graph then writes over
// it or not, the reader sees the old value and the graph computes the new
// one (the thread sanitizer checks the ordering in between).
TEST_F(BufferDonationTest, AReaderOnAnotherThreadThatLetsGoSeesTheOldValue) {
  const std::vector<float> host = iota_floats(70000, 0.125f);
  for (int round = 0; round < 20; ++round) {
    Tensor x = from_vector(host, {70000});
    std::vector<float> read;
    std::thread reader([held = x, &read]() mutable {
      read = held.to_vector<float>();
      held = Tensor();
    });
    x = x * 0.5f - 2.0f;
    mark_step();
    reader.join();
    ASSERT_EQ(read, host);
    const std::vector<float> got = x.to_vector<float>();
    for (size_t i = 0; i < host.size(); i += 997) ASSERT_EQ(got[i], host[i] * 0.5f - 2.0f) << i;
  }
}

using DataParallelDonationTest = testing::FourDeviceTest;

// Data parallel SGD with momentum on 4 devices: every parameter and buffer
// is written in place each step, and every device ends with bitwise the
// parameters of a run that allocates every output.
TEST_F(DataParallelDonationTest, ParametersAndMomentumAreWrittenInPlaceOnEveryDevice) {
  auto train = [](bool keep_inputs) {
    std::vector<std::vector<float>> weights;
    for (const auto& outcome : testing::run_on_devices<std::vector<float>>(4, [keep_inputs](int d) {
           Tensor w = rand_uniform({64, 48}, 1, -1, 1);
           Tensor buf = zeros({64, 48});
           const Tensor x = rand_uniform({16, 64}, 10 + static_cast<uint64_t>(d), -1, 1);
           std::vector<Tensor> kept;
           for (int step = 0; step < 5; ++step) {
             if (keep_inputs) kept.insert(kept.end(), {w, buf});
             const Tensor grad =
                 all_reduce(ReduceType::kSum, matmul(transpose(x, 0, 1), tanh(matmul(x, w))), 0.25);
             buf = buf * 0.9 + grad;
             w = w + buf * -0.05;
             mark_step();
           }
           return w.to_vector<float>();
         })) {
      weights.push_back(outcome.get());
    }
    wait_device_ops();
    return weights;
  };
  const int64_t before = counter_value("DonatedBuffer").value();
  const auto allocated = train(true);
  const int64_t while_held = counter_value("DonatedBuffer").value();
  const auto in_place = train(false);
  EXPECT_EQ(while_held - before, 0);
  EXPECT_EQ(counter_value("DonatedBuffer").value() - while_held, 4 * 5 * 2);  // w and buf, every device and step
  EXPECT_EQ(in_place, allocated);
  for (int d = 1; d < 4; ++d) EXPECT_EQ(in_place[d], in_place[0]);
}

}  // namespace
}  // namespace ordo
