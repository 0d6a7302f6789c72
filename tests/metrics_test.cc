// Counters and metrics of a known program: exact counts, positive times,
// per device, torch_xla's report format.
#include <regex>
#include <thread>

#include "core/steady_clock.h"
#include "spmd.h"
#include "test_util.h"

namespace ordo {
namespace {

class MetricsTest : public testing::RuntimeTest<2> {
 protected:
  void SetUp() override {
    RuntimeTest::SetUp();
    clear_all();
  }
};

int64_t counter(std::string_view name, int device = -1) { return counter_value(name, device).value(); }

// How far the system clock may move against the steady one while a test
// runs (a slewing NTP: microseconds), with room for a loaded machine.
constexpr int64_t kClockSlackNs = 50'000'000;

TEST_F(MetricsTest, AStepTracedTwiceCompilesOnceAndRunsTwice) {
  for (int step = 0; step < 2; ++step) {
    Tensor x = from_vector<float>({1, 2, 3}, {3});
    Tensor y = exp(x) * 2.0;
    mark_step();
    EXPECT_EQ(y.to_vector<float>().size(), 3u);
  }
  EXPECT_EQ(counter("MarkStep"), 2);
  EXPECT_EQ(counter("UncachedCompile"), 1);
  EXPECT_EQ(counter("CachedCompile"), 1);
  const MetricData compile = metric_data("CompileTime").value();
  EXPECT_EQ(compile.total_samples, 1);
  EXPECT_GT(compile.accumulator, 0);
  const MetricData execute = metric_data("ExecuteTime").value();
  EXPECT_EQ(execute.total_samples, 2);
  ASSERT_EQ(execute.samples.size(), 2u);
  EXPECT_LE(execute.samples[0].first, execute.samples[1].first);
  EXPECT_EQ(metric_data("TransferToDeviceTime")->total_samples, 2);
  EXPECT_EQ(metric_data("TransferFromDeviceTime")->total_samples, 2);
  EXPECT_EQ(counter("MarkStep", 1), 0);  // everything ran on device 0
}

TEST_F(MetricsTest, TensorsAreCountedWhenMadeAndDropped) {
  {
    Tensor a = zeros({4});
    Tensor b = a + 1.0;  // the scalar is a tensor too
    EXPECT_EQ(counter("CreateTensor"), 3);
    EXPECT_EQ(counter("DestroyTensor"), 1);  // the scalar's handle
  }
  EXPECT_EQ(counter("DestroyTensor"), 3);
}

// Each thread counts in blocks of its own: threads that trace on one device
// at once lose no count, a thread's counts outlive it, and a clear takes
// away what the live threads and the exited ones counted alike.
TEST_F(MetricsTest, ThreadsTracingOnOneDeviceAtOnceLoseNoCount) {
  constexpr int kThreads = 4, kTensors = 2000;
  auto trace_tensors = [] {
    for (int i = 0; i < kTensors; ++i) Tensor t = zeros({1}, DType::kFloat32, 1);
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(trace_tensors);
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(counter("CreateTensor", 1), kThreads * kTensors);
  EXPECT_EQ(counter("DestroyTensor", 1), kThreads * kTensors);
  EXPECT_EQ(counter("CreateTensor", 0), 0);

  Tensor kept = zeros({1}, DType::kFloat32, 1);  // this thread's block, live
  clear_counters();
  EXPECT_EQ(counter_value("CreateTensor", 1), 0);
  std::thread after(trace_tensors);  // may reuse an exited thread's block
  after.join();
  trace_tensors();
  EXPECT_EQ(counter("CreateTensor", 1), 2 * kTensors);
  EXPECT_EQ(counter("DestroyTensor"), 2 * kTensors);
}

TEST_F(MetricsTest, CollectivesAreCountedPerDeviceWithTheirBytes) {
  const int64_t before_ns = wall_now_ns();
  testing::run_on_devices<int>(2, [](int) {
    Tensor x = ones({8});
    Tensor sum = all_reduce(ReduceType::kSum, x);
    Tensor gathered = all_gather(x);
    mark_step();
    sum.to_vector<float>();
    gathered.to_vector<float>();
    return 0;
  });
  for (int device = 0; device < 2; ++device) {
    EXPECT_EQ(counter("AllReduce", device), 1);
    EXPECT_EQ(counter("AllGather", device), 1);
    EXPECT_EQ(counter("AllReduceBytes", device), 8 * 4);
    EXPECT_EQ(counter("AllGatherBytes", device), 16 * 4);
    const MetricData bytes = metric_data("CollectiveBytes", device).value();
    EXPECT_EQ(bytes.total_samples, 2);
    EXPECT_EQ(bytes.accumulator, 8 * 4 + 16 * 4);
    const MetricData times = metric_data("CollectiveTime", device).value();
    const MetricData waits = metric_data("CollectiveWaitTime", device).value();
    ASSERT_EQ(times.total_samples, 2);
    ASSERT_EQ(waits.samples.size(), times.samples.size());
    // Stamped with the system clock (from the steady one: wall_ns_at), at
    // the collective's end; its wait for the peers is part of its time.
    const int64_t after_ns = wall_now_ns();
    for (size_t i = 0; i < times.samples.size(); ++i) {
      EXPECT_GE(times.samples[i].first, before_ns - kClockSlackNs);
      EXPECT_LE(times.samples[i].first, after_ns + kClockSlackNs);
      EXPECT_EQ(waits.samples[i].first, times.samples[i].first);
      EXPECT_GE(waits.samples[i].second, 0);
      EXPECT_LE(waits.samples[i].second, times.samples[i].second);
    }
  }
  EXPECT_EQ(counter("AllReduce"), 2);
}

TEST(WallClockAtTest, MapsASteadyReadingToTheSystemClock) {
  const int64_t wall_before = wall_now_ns();
  const int64_t steady = steady_now_ns();
  const int64_t wall_after = wall_now_ns();
  const int64_t mapped = wall_ns_at(steady);
  EXPECT_GE(mapped, wall_before - kClockSlackNs);
  EXPECT_LE(mapped, wall_after + kClockSlackNs);
  // Readings far from the offset's own (a refresh each way) keep their
  // distance on the system clock.
  const int64_t later = steady + 3'000'000'000;
  EXPECT_NEAR(static_cast<double>(wall_ns_at(later) - mapped), 3e9, static_cast<double>(kClockSlackNs));
  EXPECT_NEAR(static_cast<double>(wall_ns_at(steady) - mapped), 0.0, static_cast<double>(kClockSlackNs));
}

TEST_F(MetricsTest, TheReportHasTorchXlasFormatAndOnlyWhatIsNotZero) {
  Tensor y = ones({2}) * 3.0;
  mark_step();
  y.to_vector<float>();
  const std::string report = metrics_report();
  EXPECT_NE(report.find("Metric: CompileTime\n  TotalSamples: 1\n  Accumulator: "), std::string::npos) << report;
  const std::regex percentiles(
      R"(  Percentiles: 1%=(\d\d\ds)?\d\d\dms\d\d\d\.\d\d\dus(; \d+%=[0-9msu.]+){8}\n)");
  EXPECT_TRUE(std::regex_search(report, percentiles)) << report;
  EXPECT_NE(report.find("Counter: MarkStep\n  Value: 1\n"), std::string::npos) << report;
  EXPECT_NE(report.find("Counter: CompileCacheEntries\n  Value: 1\n"), std::string::npos) << report;
  EXPECT_EQ(report.find("CachedCompile\n"), std::string::npos) << report;  // zero: not shown
  EXPECT_EQ(report.find("AllReduce"), std::string::npos) << report;
}

TEST_F(MetricsTest, NamesListWhatHasValuesAndUnknownNamesAreNone) {
  EXPECT_EQ(counter_value("NoSuchCounter"), std::nullopt);
  EXPECT_EQ(metric_data("NoSuchMetric"), std::nullopt);
  EXPECT_THROW(counter_value("MarkStep", 7), InvalidArgument);
  mark_step();
  EXPECT_EQ(counter_names(), std::vector<std::string>{"MarkStep"});
  Tensor y = ones({2}) + 1.0;
  mark_step();
  wait_device_ops();  // the worker records ExecuteTime when the graph is done, maybe after a clear
  const std::vector<std::string> names = metric_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "CompileTime"), names.end());
  clear_counters();
  EXPECT_TRUE(counter_names().empty());
  EXPECT_FALSE(metric_names().empty());
  clear_metrics();
  EXPECT_TRUE(metric_names().empty());
}

}  // namespace
}  // namespace ordo
