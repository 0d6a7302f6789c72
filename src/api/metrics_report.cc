// ordo/metrics.h: reading the registry of core/metrics.h by name, and
// torch_xla's report format.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <unistd.h>

#include "core/metrics.h"
#include "core/named_counters.h"
#include "ordo/metrics.h"
#include "ordo/runtime.h"
#include "runtime/runtime.h"

namespace ordo {
namespace {

template <typename Id, int kCount>
std::optional<Id> find(std::string_view name) {
  for (int i = 0; i < kCount; ++i) {
    if (metrics::name(static_cast<Id>(i)) == name) return static_cast<Id>(i);
  }
  return std::nullopt;
}

// A device argument: an index in this process, or -1 for every device.
int checked_device(int local_device) {
  if (local_device >= 0) runtime::get().checked_device(local_device);
  return local_device;
}

// torch_xla's time text: "01m02s003ms004.005us", the larger units only when not zero.
std::string time_text(double ns) {
  const double us_total = ns / 1e3;
  auto whole = static_cast<int64_t>(us_total / 1e3);  // whole milliseconds
  const double us = us_total - static_cast<double>(whole) * 1e3;
  const int64_t ms = whole % 1000;
  whole /= 1000;
  const int64_t s = whole % 60;
  whole /= 60;
  const int64_t m = whole % 60;
  const int64_t h = whole / 60;
  char text[96];
  if (h > 0) {
    std::snprintf(text, sizeof(text), "%lldh%02lldm%02llds%03lldms%07.3fus", static_cast<long long>(h),
                  static_cast<long long>(m), static_cast<long long>(s), static_cast<long long>(ms), us);
  } else if (m > 0) {
    std::snprintf(text, sizeof(text), "%02lldm%02llds%03lldms%07.3fus", static_cast<long long>(m),
                  static_cast<long long>(s), static_cast<long long>(ms), us);
  } else if (s > 0) {
    std::snprintf(text, sizeof(text), "%02llds%03lldms%07.3fus", static_cast<long long>(s),
                  static_cast<long long>(ms), us);
  } else {
    std::snprintf(text, sizeof(text), "%03lldms%07.3fus", static_cast<long long>(ms), us);
  }
  return text;
}

std::string bytes_text(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int unit = 0;
  while (std::fabs(bytes) >= 1024 && unit < 5) {
    bytes /= 1024;
    ++unit;
  }
  char text[48];
  std::snprintf(text, sizeof(text), "%.2f%s", bytes, kUnits[unit]);
  return text;
}

std::string value_text(metrics::Metric metric, double value) {
  return metrics::kind(metric) == metrics::MetricKind::kTime ? time_text(value) : bytes_text(value);
}

void append_metric(std::string& out, metrics::Metric metric, const metrics::MetricTotal& total) {
  out += "Metric: ";
  out += metrics::name(metric);
  out += "\n  TotalSamples: " + std::to_string(total.total_samples);
  out += "\n  Accumulator: " + value_text(metric, total.accumulator);
  std::vector<double> values;
  values.reserve(total.samples.size());
  for (const metrics::Sample& sample : total.samples) values.push_back(sample.value);
  std::sort(values.begin(), values.end());
  out += "\n  Percentiles: ";
  const int percents[] = {1, 5, 10, 20, 50, 80, 90, 95, 99};
  for (int p : percents) {
    const size_t at = std::min(values.size() - 1, values.size() * static_cast<size_t>(p) / 100);
    if (p != 1) out += "; ";
    out += std::to_string(p) + "%=" + value_text(metric, values[at]);
  }
  out += "\n";
}

void append_counter(std::string& out, std::string_view name, int64_t value) {
  out += "Counter: ";
  out += name;
  out += "\n  Value: " + std::to_string(value) + "\n";
}

}  // namespace

std::vector<std::string> counter_names() {
  std::vector<std::string> names;
  for (int i = 0; i < metrics::kCounterCount; ++i) {
    const auto counter = static_cast<metrics::Counter>(i);
    if (metrics::counter_total(counter).value != 0) names.emplace_back(metrics::name(counter));
  }
  for (auto& [name, value] : metrics::named_counters()) names.push_back(std::move(name));
  return names;
}

std::optional<int64_t> counter_value(std::string_view name, int device) {
  const std::optional<metrics::Counter> counter = find<metrics::Counter, metrics::kCounterCount>(name);
  if (counter) return metrics::counter_total(*counter, checked_device(device)).value;
  for (const auto& [named, value] : metrics::named_counters(checked_device(device))) {
    if (named == name) return value;
  }
  return std::nullopt;
}

std::vector<std::string> metric_names() {
  std::vector<std::string> names;
  for (int i = 0; i < metrics::kMetricCount; ++i) {
    const auto metric = static_cast<metrics::Metric>(i);
    if (metrics::metric_total(metric).total_samples != 0) names.emplace_back(metrics::name(metric));
  }
  return names;
}

std::optional<MetricData> metric_data(std::string_view name, int device) {
  const std::optional<metrics::Metric> metric = find<metrics::Metric, metrics::kMetricCount>(name);
  if (!metric) return std::nullopt;
  metrics::MetricTotal total = metrics::metric_total(*metric, checked_device(device));
  MetricData data{total.total_samples, total.accumulator, {}};
  data.samples.reserve(total.samples.size());
  for (const metrics::Sample& sample : total.samples) data.samples.emplace_back(sample.when_ns, sample.value);
  return data;
}

std::string metrics_report(int device) {
  checked_device(device);
  const runtime::Runtime& rt = runtime::get();
  std::string out;
  for (int i = 0; i < metrics::kMetricCount; ++i) {
    const auto metric = static_cast<metrics::Metric>(i);
    const metrics::MetricTotal total = metrics::metric_total(metric, device);
    if (total.total_samples != 0 && !total.samples.empty()) append_metric(out, metric, total);
  }
  for (int i = 0; i < metrics::kCounterCount; ++i) {
    const auto counter = static_cast<metrics::Counter>(i);
    const int64_t value = metrics::counter_total(counter, device).value;
    if (value != 0) append_counter(out, metrics::name(counter), value);
  }
  for (const auto& [name, value] : metrics::named_counters(device)) append_counter(out, name, value);
  // Who the peers waited for, device by device (global ordinals).
  for (const LocalDevice local : LocalDevices(device < 0 ? rt.num_devices() : 0)) {
    const int64_t value = metrics::counter_total(metrics::Counter::kCollectiveLastArrival, local.index()).value;
    if (value != 0) {
      append_counter(out, str_cat(metrics::name(metrics::Counter::kCollectiveLastArrival), ".device",
                                  rt.ordinal_of(local)),
                     value);
    }
  }
  if (const int64_t entries = compile_cache_stats().entries; entries != 0) {
    append_counter(out, "CompileCacheEntries", entries);
  }
  return out;
}

std::string metrics_report_of_every_process() {
  runtime::Runtime& rt = runtime::get();
  const comm::Topology& topology = rt.topology();
  // One participant per process: its first device, whichever thread calls.
  std::vector<GlobalOrdinal> participants;
  for (int process = 0; process < topology.process_count(); ++process) {
    participants.emplace_back(process * topology.local_devices());
  }
  const GlobalOrdinal first = rt.ordinal_of(LocalDevice(0));
  const GlobalOrdinal last = rt.ordinal_of(LocalDevice(rt.num_devices() - 1));
  const std::string mine = str_cat("Process ", topology.process(), " (devices ", first, "..", last, ", pid ",
                                   ::getpid(), "):\n",
                                   metrics_report());
  std::string out;
  for (const std::string& report : rt.communicator().exchange({first, "ordo metrics report", participants, mine})) {
    out += report;
  }
  return out;
}

void clear_counters() {
  metrics::clear_counters();
  metrics::clear_named_counters();
}
void clear_metrics() { metrics::clear_metrics(); }
void clear_all() {
  clear_counters();
  clear_metrics();
}

}  // namespace ordo
