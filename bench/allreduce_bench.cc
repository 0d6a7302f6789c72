// all_reduce (float32 sum, 2 in-process devices) through ordo — traced,
// cached and run as a graph — against Open MPI's MPI_Allreduce with 2
// processes (results read from the file given as argv[1], produced by
// bench/mpi_allreduce.c in the same run; see scripts/bench-allreduce.sh)
// and this machine's single-thread memcpy bandwidth and cross-core latency.
// `--steps-ahead` instead runs only the last section: what mark_step's
// bound on running ahead costs 1 KiB steps.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "cross_core_latency.h"
#include "ordo/ordo.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kDevices = 2;
constexpr int kReps = 7;
constexpr int64_t kMaxBytes = int64_t{64} << 20;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int64_t iterations_for(int64_t bytes) { return std::clamp<int64_t>((int64_t{32} << 20) / bytes, 3, 1000); }

// Runs body(device) on each device's thread (ordo::spawn's, bound to the
// device as MPI binds its ranks) and returns device 0's median seconds per
// call of body, over kReps repetitions of `calls` calls.
double time_on_devices(int64_t calls, const std::function<void(int)>& body) {
  std::vector<double> samples;
  ordo::spawn([&](int d) {
    body(d);  // warm: compile, fault in buffers
    for (int r = 0; r < kReps; ++r) {
      const auto start = Clock::now();
      for (int64_t i = 0; i < calls; ++i) body(d);
      if (d == 0) samples.push_back(std::chrono::duration<double>(Clock::now() - start).count() / calls);
    }
  });
  return median(samples);
}

// One all_reduce per step: trace, then mark_step_and_wait.
double ordo_allreduce_seconds(int64_t bytes) {
  std::vector<ordo::Tensor> inputs;
  for (int d = 0; d < kDevices; ++d) {
    ordo::DeviceGuard on(d);
    inputs.push_back(ordo::rand_uniform({bytes / 4}, d));
  }
  return time_on_devices(iterations_for(bytes), [&](int d) {
    ordo::Tensor y = ordo::all_reduce(ordo::ReduceType::kSum, inputs[d]);
    ordo::mark_step_and_wait();
  });
}

struct ChainTimes {
  double total;    // seconds per all_reduce: traced, cut, run, waited for
  double tracing;  // the part spent tracing it
};

// Seconds per 1 KiB all_reduce inside one graph of 100 chained ones.
ChainTimes ordo_latency_1k_seconds() {
  constexpr int kChain = 100;
  std::vector<ordo::Tensor> inputs;
  for (int d = 0; d < kDevices; ++d) {
    ordo::DeviceGuard on(d);
    inputs.push_back(ordo::rand_uniform({256}, d));
  }
  std::vector<double> tracing;  // device 0's
  const double total = time_on_devices(10, [&](int d) {
    const auto start = Clock::now();
    ordo::Tensor y = inputs[d];
    for (int i = 0; i < kChain; ++i) y = ordo::all_reduce(ordo::ReduceType::kSum, y, 0.5);
    if (d == 0) tracing.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    ordo::mark_step_and_wait();
  });
  return {total / kChain, median(tracing) / kChain};
}

// Seconds per step of a loop of 1 KiB all_reduces, one per step, each cut
// by mark_step (not waited for) with the run-ahead bound at `steps_ahead`;
// the loop's time includes waiting for its last step.
double per_step_1k_seconds(int steps_ahead) {
  constexpr int kSteps = 1000;
  ordo::set_max_steps_ahead(steps_ahead);
  std::vector<double> samples;  // device 0's
  ordo::spawn([&](int d) {
    ordo::Tensor y = ordo::rand_uniform({256}, d);
    for (int r = -1; r < kReps; ++r) {  // the first: compile, fault in buffers
      const auto start = Clock::now();
      for (int i = 0; i < kSteps; ++i) {
        y = ordo::all_reduce(ordo::ReduceType::kSum, y, 0.5);
        ordo::mark_step();
      }
      ordo::wait_device_ops(d);
      if (d == 0 && r >= 0) samples.push_back(std::chrono::duration<double>(Clock::now() - start).count() / kSteps);
    }
  });
  return median(samples);
}

// The bound's cost: each bound against no bound in effect (more steps
// ahead than the loop has), in alternated pairs so that a drift of the
// machine weighs on both alike.
void print_steps_ahead_costs() {
  constexpr int kPairs = 11;
  constexpr int kUnbounded = 1 << 20;
  const int configured = ordo::max_steps_ahead();
  std::printf("\n1 KiB all_reduce, one per step (mark_step, not waited for), by the run-ahead bound "
              "(medians of %d alternated pairs, and of their ratios; target: no cost at 2 or more)\n",
              kPairs);
  for (int bound : {0, 1, 2, 4}) {
    std::vector<double> bounded, unbounded, ratios;
    for (int pair = 0; pair < kPairs; ++pair) {
      bounded.push_back(per_step_1k_seconds(bound));
      unbounded.push_back(per_step_1k_seconds(kUnbounded));
      ratios.push_back(bounded.back() / unbounded.back());
    }
    const double ratio = median(ratios);  // of each pair's ratio: a drift between pairs cancels
    std::printf("  at most %d steps ahead: %.2f us per step against %.2f us unbounded: %.3fx%s\n", bound,
                median(bounded) * 1e6, median(unbounded) * 1e6, ratio,
                bound >= 2 ? (ratio <= 1.05 ? "  (target <= 1.05x: MET)" : "  (target <= 1.05x: MISSED)") : "");
  }
  ordo::set_max_steps_ahead(configured);
}

// A buffer of kMaxBytes, on huge pages if asked (as ordo's large buffers).
struct HostBuffer {
  explicit HostBuffer(bool huge_pages, char fill) {
    constexpr size_t kHugePage = size_t{2} << 20;
    bytes = static_cast<char*>(std::aligned_alloc(huge_pages ? kHugePage : 64, kMaxBytes));
    if (bytes == nullptr) throw std::bad_alloc();
    if (huge_pages) madvise(bytes, kMaxBytes, MADV_HUGEPAGE);
    std::memset(bytes, fill, kMaxBytes);
  }
  ~HostBuffer() { std::free(bytes); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  char* bytes;
};

double memcpy_bytes_per_second(bool huge_pages) {
  HostBuffer src(huge_pages, 1), dst(huge_pages, 0);
  std::vector<double> samples;
  for (int r = 0; r < kReps + 1; ++r) {
    const auto start = Clock::now();
    std::memcpy(dst.bytes, src.bytes, kMaxBytes);
    if (r > 0) samples.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    src.bytes[r] = dst.bytes[r + 1];  // keep the copies observable
  }
  return kMaxBytes / median(samples);
}

std::map<std::string, double> read_mpi_results(const char* path) {
  std::map<std::string, double> results;
  std::ifstream in(path);
  std::string key;
  double value = 0;
  while (in >> key >> value) results[key] = value;
  return results;
}

std::string size_name(int64_t bytes) {
  return bytes >= (1 << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes >> 10) + " KiB";
}

}  // namespace

int main(int argc, char** argv) {
  // --steps-ahead: only the run-ahead bound's section, for measuring it alone.
  const bool steps_ahead_only = argc > 1 && std::string(argv[1]) == "--steps-ahead";
  const std::map<std::string, double> mpi =
      argc > 1 && !steps_ahead_only ? read_mpi_results(argv[1]) : std::map<std::string, double>{};
  const std::optional<double> one_way_ns = ordo_bench::cross_core_one_way_ns();  // before the workers start
  ordo::init(kDevices);
  if (steps_ahead_only) {
    print_steps_ahead_costs();
    ordo::shutdown();
    return 0;
  }
  // The better of small and huge pages: ordo's large buffers are on huge
  // pages, so the reference may be too.
  const double memcpy_bw = std::max(memcpy_bytes_per_second(false), memcpy_bytes_per_second(true));
  std::printf("all_reduce float32 sum, %d devices; bus bandwidth = algbw x 2(n-1)/n; medians of %d runs\n",
              kDevices, kReps);
  std::printf("single-thread memcpy bandwidth: %.2f GB/s (the better of 4 KiB and 2 MiB pages)\n", memcpy_bw / 1e9);
  if (one_way_ns) {
    std::printf("cross-core latency: %.0f ns one way (two pinned threads; the 1 KiB figures follow it)\n",
                *one_way_ns);
  }
  std::printf("\n");
  std::printf("%8s  %12s  %12s  %9s  %11s  %s\n", "size", "ordo GB/s", "MPI GB/s", "vs MPI", "vs memcpy",
              "targets (>= 4 MiB: 1.5x MPI, 50% memcpy)");
  const double bus_factor = 2.0 * (kDevices - 1) / kDevices;
  bool all_met = true;
  for (int64_t bytes = 1024; bytes <= kMaxBytes; bytes *= 4) {
    const double ordo_bw = bytes / ordo_allreduce_seconds(bytes) * bus_factor;
    auto it = mpi.find(std::to_string(bytes));
    const double mpi_bw = it == mpi.end() ? 0 : bytes / it->second * bus_factor;
    std::printf("%8s  %12.2f  %12.2f  %8.2fx  %10.0f%%", size_name(bytes).c_str(), ordo_bw / 1e9, mpi_bw / 1e9,
                mpi_bw > 0 ? ordo_bw / mpi_bw : 0.0, 100 * ordo_bw / memcpy_bw);
    if (bytes >= (4 << 20)) {
      const bool met = mpi_bw > 0 && ordo_bw >= 1.5 * mpi_bw && ordo_bw >= 0.5 * memcpy_bw;
      all_met = all_met && met;
      std::printf("  %s", met ? "MET" : "MISSED");
    }
    std::printf("\n");
  }
  const ChainTimes chain = ordo_latency_1k_seconds();
  auto it = mpi.find("latency_1k");
  const double mpi_latency = it == mpi.end() ? 0 : it->second;
  const bool latency_met = mpi_latency > 0 && chain.total <= 2 * mpi_latency;
  std::printf("\n1 KiB all_reduce, 100 chained in one graph: %.2f us each; MPI_Allreduce 1 KiB: %.2f us"
              "  (target <= 2x MPI: %s)\n",
              chain.total * 1e6, mpi_latency * 1e6, latency_met ? "MET" : "MISSED");
  std::printf("  of which tracing: %.2f us; cutting, running and waiting: %.2f us\n", chain.tracing * 1e6,
              (chain.total - chain.tracing) * 1e6);
  // The same chain with the timeline recording (ordo/trace.h), in pairs
  // alternated with untraced runs so that a drift of the machine weighs on
  // both alike; the file is written after each traced run's timing.
  constexpr int kTracePairs = 15;
  const std::string trace_path = "/tmp/ordo_bench_allreduce_trace." + std::to_string(::getpid()) + ".json";
  std::vector<double> untraced_runs, traced_runs;
  for (int pair = 0; pair < kTracePairs; ++pair) {
    untraced_runs.push_back(ordo_latency_1k_seconds().total);
    ordo::start_trace(trace_path);
    traced_runs.push_back(ordo_latency_1k_seconds().total);
    ordo::stop_trace();
  }
  std::remove(trace_path.c_str());
  const double untraced = median(untraced_runs), traced = median(traced_runs);
  const double trace_ratio = traced / untraced;
  std::printf("  with start_trace on: %.2f us each against %.2f us off (medians of %d alternated pairs): "
              "%.3fx  (target <= 1.10x: %s)\n",
              traced * 1e6, untraced * 1e6, kTracePairs, trace_ratio, trace_ratio <= 1.10 ? "MET" : "MISSED");
  print_steps_ahead_costs();
  if (mpi.empty()) std::printf("(no MPI results given: run scripts/bench-allreduce.sh for the reference)\n");
  ordo::shutdown();
  return 0;
}
