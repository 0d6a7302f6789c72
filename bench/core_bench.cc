// Core benchmark: tracing cost per elementwise op, and a cache-hit mark_step
// against a cache-miss one for the same 100-node graph, in the same run.
// Medians over many repetitions (the machine is shared and noisy).
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "core/metrics.h"
#include "ordo/ordo.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Pins the calling thread to the last CPU it may use, away from device 0's
// worker (pinned to the first), so that the wall time of mark_step is its
// own work and never the worker's, which the kernel would otherwise often
// run on the caller's core at once (wake-affine scheduling). Wall time then
// needs no thread CPU clock, a system call that costs ~1.4 us in this VM,
// as much as a fifth of what it would measure.
void pin_away_from_worker() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || CPU_COUNT(&allowed) < 2) return;
  for (int id = CPU_SETSIZE - 1; id >= 0; --id) {
    if (!CPU_ISSET(id, &allowed)) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(id, &one);
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    return;
  }
}

// Median nanoseconds per op over batches of traced elementwise ops.
double trace_ns_per_op() {
  constexpr int kBatches = 200, kOpsPerBatch = 1000;
  ordo::Tensor x = ordo::from_vector<float>({1, 2, 3, 4}, {4});
  std::vector<double> samples;
  for (int b = 0; b < kBatches; ++b) {
    const auto start = Clock::now();
    for (int i = 0; i < kOpsPerBatch; ++i) {
      ordo::Tensor y = ordo::add(x, x);
    }
    samples.push_back(seconds_since(start) * 1e9 / kOpsPerBatch);
  }
  return median(samples);
}

// The metrics on a path, measured alone beside the path itself, batch by
// batch in turn (an A/B of two builds cannot resolve a few percent on a
// shared machine: BENCHMARKS.md): medians of ns per run of `path` and of
// `count` (the counter adds the path makes, on device 0's slot; through a
// std::function call as the path is, which only overstates them).
struct PathCost {
  double path_ns;
  double metrics_ns;
};

PathCost metrics_cost(int batches, int ops_per_batch, const std::function<void()>& path,
                      const std::function<void()>& count) {
  std::vector<double> path_samples, metrics_samples;
  for (int b = 0; b < batches; ++b) {
    auto start = Clock::now();
    for (int i = 0; i < ops_per_batch; ++i) path();
    path_samples.push_back(seconds_since(start) * 1e9 / ops_per_batch);
    start = Clock::now();
    for (int i = 0; i < ops_per_batch; ++i) count();
    metrics_samples.push_back(seconds_since(start) * 1e9 / ops_per_batch);
  }
  return {median(path_samples), median(metrics_samples)};
}

void print_metrics_cost(const char* what, const PathCost& cost) {
  const double share = cost.metrics_ns / cost.path_ns;
  std::printf("  metrics on %-28s %8.2f ns of %8.1f ns = %.2f%%   target <= 3%%  %s\n", what, cost.metrics_ns,
              cost.path_ns, share * 100, share <= 0.03 ? "MET" : "MISSED");
}

// A data leaf and nodes - 1 unary ops, with one live result.
ordo::Tensor trace_chain(const ordo::Tensor& x, int nodes = 100) {
  ordo::Tensor y = x;
  for (int i = 0; i < nodes - 1; ++i) y = (i % 2 == 0) ? ordo::tanh(y) : ordo::neg(y);
  return y;
}

struct StepTimes {
  double trace_us;      // tracing the graph (median)
  double mark_step_us;  // mark_step alone (median)
};

// Times tracing the chain and mark_step, separately; before_each runs
// untimed. With busy_device, a long graph is submitted first, so that
// mark_step meets the device still running the previous step, as in a
// training loop.
StepTimes step_times(int repetitions, bool busy_device, const std::function<void()>& before_each,
                     int nodes = 100) {
  ordo::Tensor x = ordo::rand_uniform({16}, 1);
  ordo::Tensor m = ordo::rand_uniform({192, 192}, 2);
  std::vector<double> trace_samples, mark_step_samples;
  for (int r = 0; r < repetitions; ++r) {
    before_each();
    if (busy_device) {
      ordo::Tensor busy = ordo::matmul(ordo::matmul(m, m), m);
      ordo::mark_step();
    }
    const auto traced = Clock::now();
    ordo::Tensor y = trace_chain(x, nodes);
    const auto start = Clock::now();
    ordo::mark_step();
    mark_step_samples.push_back(seconds_since(start) * 1e6);
    trace_samples.push_back(std::chrono::duration<double>(start - traced).count() * 1e6);
    ordo::wait_device_ops(0);
  }
  return {median(trace_samples), median(mark_step_samples)};
}

// Median milliseconds to run one traced step (trace, mark_step, wait), with
// or without elementwise fusion. trace_step returns the step's result,
// which must live through mark_step to be computed.
double step_ms(bool fuse, const std::function<ordo::Tensor()>& trace_step) {
  ordo::set_schedule(0, {ordo::ScheduleMode::kDefault, 0, fuse});
  std::vector<double> samples;
  for (int r = 0; r < 21; ++r) {
    const auto start = Clock::now();
    const ordo::Tensor result = trace_step();
    ordo::mark_step();
    ordo::wait_device_ops(0);
    if (r > 0) samples.push_back(seconds_since(start) * 1e3);
  }
  ordo::set_schedule(0, {});
  return median(samples);
}

void print_fusion_speedup(const char* what, const std::function<ordo::Tensor()>& trace_step) {
  const double unfused_ms = step_ms(false, trace_step);
  const double fused_ms = step_ms(true, trace_step);
  std::printf("\n%s (median, traced and run):\n", what);
  std::printf("  one kernel per op:                      %8.2f ms\n", unfused_ms);
  std::printf("  fused (tiles of 1024 elements):        %8.2f ms   %.1fx faster\n", fused_ms,
              unfused_ms / fused_ms);
}

}  // namespace

int main() {
  pin_away_from_worker();
  ordo::init(1);
  const double trace_ns = trace_ns_per_op();
  ordo::reset_compile_cache();
  std::printf("tracing one elementwise op (median):     %8.1f ns   target <= 1000 ns  %s\n",
              trace_ns, trace_ns <= 1000 ? "MET" : "MISSED");
  for (bool busy : {true, false}) {
    step_times(1, busy, [] {});  // warm: the plan is cached from here on
    const StepTimes hit = step_times(500, busy, [] {});
    const StepTimes miss = step_times(500, busy, [] { ordo::reset_compile_cache(); });
    const double ratio = miss.mark_step_us / hit.mark_step_us;
    std::printf("\nmark_step of a 100-node graph, device %s:\n",
                busy ? "still running the previous step (steady state)" : "idle (its worker must be woken)");
    std::printf("  cache hit:                              %8.2f us\n", hit.mark_step_us);
    std::printf("  cache miss:                             %8.2f us\n", miss.mark_step_us);
    std::printf("  cache miss / cache hit:                 %8.1f x    target >= 20 x     %s\n", ratio,
                ratio >= 20 ? "MET" : "MISSED");
    std::printf("  (tracing the graph before it:           %8.2f us)\n", hit.trace_us);
  }
  // Without fusion every node is a step of the plan: how compiling scales.
  ordo::set_schedule(0, {ordo::ScheduleMode::kDefault, 0, false});
  step_times(1, true, [] {}, 1000);
  const StepTimes big_hit = step_times(50, true, [] {}, 1000);
  const StepTimes big_miss = step_times(50, true, [] { ordo::reset_compile_cache(); }, 1000);
  ordo::set_schedule(0, {});
  std::printf("\nmark_step of a 1000-node graph, fusion off (a plan of 999 steps), steady state:\n");
  std::printf("  cache hit:                              %8.2f us\n", big_hit.mark_step_us);
  std::printf("  cache miss:                             %8.2f us\n", big_miss.mark_step_us);
  std::printf("  cache miss / cache hit:                 %8.1f x\n", big_miss.mark_step_us / big_hit.mark_step_us);
  const ordo::Tensor x = ordo::rand_uniform({1 << 22}, 3);
  print_fusion_speedup("a step of 24 elementwise ops over 4M floats", [&] {
    ordo::Tensor y = x;
    for (int i = 0; i < 8; ++i) y = ordo::relu(y * 0.5 - x) + 0.25;
    return y;
  });
  const ordo::Tensor activations = ordo::rand_normal({4096, 1024}, 4);
  const ordo::Tensor bias = ordo::rand_normal({1024}, 5);
  const ordo::Tensor row_scale = ordo::rand_uniform({4096, 1}, 6);
  print_fusion_speedup("bias, relu and per-row scale over [4096, 1024] floats", [&] {
    return ordo::relu(activations + bias) * row_scale - 0.5;
  });
  // Last: the figures before it run alike in a build without metrics (the A/B).
  if constexpr (ORDO_METRICS) {
    using ordo::metrics::Counter;
    using ordo::metrics::add;
    const ordo::Tensor small = ordo::from_vector<float>({1, 2, 3, 4}, {4});
    auto count_op = [] {
      add(Counter::kCreateTensor, 0);
      add(Counter::kDestroyTensor, 0);
    };
    std::printf("\nwhat the always-on metrics cost, counted alone beside the path (medians):\n");
    print_metrics_cost("a traced op:",
                       metrics_cost(200, 1000, [&] { ordo::Tensor y = ordo::add(small, small); }, count_op));
    ordo::Tensor y = trace_chain(small);
    ordo::mark_step();
    ordo::wait_device_ops(0);
    // The 100-node step traced and cut: 99 ops, then MarkStep and CachedCompile.
    print_metrics_cost("a traced cache-hit step:", metrics_cost(200, 20, [&] {
      ordo::Tensor z = trace_chain(small);
      ordo::mark_step();
    }, [&] {
      for (int i = 0; i < 99; ++i) count_op();
      add(Counter::kMarkStep, 0);
      add(Counter::kCachedCompile, 0);
    }));
  }
  ordo::shutdown();
  return 0;
}
