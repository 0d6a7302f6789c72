// What ordo did: counters and metrics, always on, kept per device, in
// torch_xla's names where the meaning is the same.
//
//   ordo::mark_step();
//   std::optional<int64_t> steps = ordo::counter_value("MarkStep");
//   std::optional<ordo::MetricData> compile = ordo::metric_data("CompileTime");  // ns
//   std::printf("%s", ordo::metrics_report().c_str());                           // torch_xla's format
//
// Counters: MarkStep, CachedCompile, UncachedCompile, CreateTensor,
// DestroyTensor, and per collective kind its count (AllReduce, AllGather,
// ...) and the bytes its outputs hold on the device (AllReduceBytes,
// AllGatherBytes, ...). Metrics: CompileTime, ExecuteTime, TransferToDeviceTime,
// TransferFromDeviceTime, CollectiveTime (ns), CollectiveWaitTime (ns from
// the device's arrival at a collective to its group's last arrival),
// CollectiveBytes (what each collective's outputs hold on the device);
// counter CollectiveLastArrival: the collectives whose peers waited for
// this device.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ordo {

struct MetricData {
  int64_t total_samples = 0;
  double accumulator = 0;                        // the sum of every sample ever recorded
  std::vector<std::pair<int64_t, double>> samples;  // (ns since the epoch, value): the newest 1024 per device
};

// device: a device of this process, or -1 for every one of them. An unknown
// name gives nullopt, as torch_xla's None; a device that does not exist an
// InvalidArgument.
std::vector<std::string> counter_names();  // the counters that are not zero
std::optional<int64_t> counter_value(std::string_view name, int device = -1);
std::vector<std::string> metric_names();  // the metrics that have samples
std::optional<MetricData> metric_data(std::string_view name, int device = -1);

// Every metric with samples and every non-zero counter, then the compile
// cache's entries, in torch_xla's text format:
//   Metric: CompileTime
//     TotalSamples: 2
//     Accumulator: 012ms431.432us
//     Percentiles: 1%=001ms002.000us; 5%=...; 99%=...
//   Counter: MarkStep
//     Value: 4
// With device -1 also who the peers waited for: CollectiveLastArrival.deviceN
// counts the collectives whose last arrival was device N (global ordinal).
std::string metrics_report(int device = -1);
// Every process's report, each under a line "Process 1 (devices 2..3, pid
// 4242):", in process order, on every process. Every process of the job
// calls it (a rendezvous of their first devices, from any one thread);
// in one process it is that process's report under its line.
std::string metrics_report_of_every_process();

void clear_counters();
void clear_metrics();
void clear_all();

}  // namespace ordo
