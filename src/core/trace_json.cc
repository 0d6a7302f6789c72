#include "core/trace_json.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>

namespace ordo::trace_json {
namespace {

int64_t tid_of(const trace_events::Event& event) {
  return event.lane == trace_events::Lane::kHost ? kHostLaneTid + event.device : event.device;
}

// Microseconds with ns precision.
std::string microseconds(int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%" PRId64 ".%03d", ns / 1000, static_cast<int>(std::abs(ns % 1000)));
  if (ns < 0 && ns > -1000) return "-" + std::string(text);
  return text;
}

void append_args(std::string& out, const trace_events::Event& event) {
  std::string args;
  auto add = [&](const char* key, const std::string& value) {
    args += args.empty() ? "" : ",";
    args += "\"" + std::string(key) + "\":" + value;
  };
  if (event.wait_ns >= 0) add("wait_us", microseconds(event.wait_ns));
  if (event.last_device >= 0) add("last_device", std::to_string(event.last_device));
  if (event.bytes >= 0) add("bytes", std::to_string(event.bytes));
  if (event.graph_hash != 0) {
    char hash[24];
    std::snprintf(hash, sizeof hash, "\"%016" PRIx64 "\"", event.graph_hash);
    add("graph_hash", hash);
  }
  if (!args.empty()) out += ",\"args\":{" + args + "}";
}

void append_event(std::string& out, const trace_events::Event& event, int process, int64_t origin_ns) {
  out += "{\"name\":\"" + std::string(event.name) + "\",\"cat\":\"" + std::string(event.category) +
         "\",\"ph\":\"X\",\"ts\":" + microseconds(event.start_ns - origin_ns) +
         ",\"dur\":" + microseconds(event.duration_ns) + ",\"pid\":" + std::to_string(process) +
         ",\"tid\":" + std::to_string(tid_of(event));
  append_args(out, event);
  out += "},\n";
}

void append_metadata(std::string& out, const char* name, int process, int64_t tid, const std::string& args) {
  out += "{\"name\":\"" + std::string(name) + "\",\"ph\":\"M\",\"pid\":" + std::to_string(process);
  if (tid >= 0) out += ",\"tid\":" + std::to_string(tid);
  out += ",\"args\":{" + args + "}},\n";
}

// Each row named and placed: a device's host lane just above its worker's.
void append_rows(std::string& out, const ProcessRows& rows, int64_t dropped) {
  const int p = rows.process;
  append_metadata(out, "process_name", p, -1, "\"name\":\"process " + std::to_string(p) + "\"");
  append_metadata(out, "process_sort_index", p, -1, "\"sort_index\":" + std::to_string(p));
  if (dropped > 0) {
    append_metadata(out, "process_labels", p, -1,
                    "\"labels\":\"" + std::to_string(dropped) + " events dropped (a lane's limit)\"");
  }
  for (int index = 0; index < rows.devices; ++index) {
    const int ordinal = rows.first_ordinal + index;
    std::string name = "ordo:" + std::to_string(index);
    if (rows.process_count > 1) name += " (ordinal " + std::to_string(ordinal) + ")";
    append_metadata(out, "thread_name", p, ordinal, "\"name\":\"" + name + "\"");
    append_metadata(out, "thread_sort_index", p, ordinal, "\"sort_index\":" + std::to_string(2 * ordinal + 1));
    append_metadata(out, "thread_name", p, kHostLaneTid + ordinal, "\"name\":\"" + name + " host\"");
    append_metadata(out, "thread_sort_index", p, kHostLaneTid + ordinal,
                    "\"sort_index\":" + std::to_string(2 * ordinal));
  }
}

}  // namespace

std::string process_events(const trace_events::Recording& recording, const ProcessRows& rows, int64_t origin_ns) {
  std::vector<const trace_events::Event*> events;
  events.reserve(recording.events.size());
  for (const trace_events::Event& event : recording.events) events.push_back(&event);
  // A collective's wait as its own event inside it, made here rather than
  // while recording: one record per collective.
  std::vector<trace_events::Event> waits;
  for (const trace_events::Event* event : events) {
    if (event->wait_ns >= 0 && event->category == "collective") {
      waits.push_back({"wait", "wait", event->wait_from_ns, event->wait_ns, event->device, event->lane});
    }
  }
  for (const trace_events::Event& wait : waits) events.push_back(&wait);
  // A row in time order, an enclosing event before what it encloses.
  std::stable_sort(events.begin(), events.end(), [](const trace_events::Event* a, const trace_events::Event* b) {
    const int64_t ta = tid_of(*a), tb = tid_of(*b);
    if (ta != tb) return ta < tb;
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns;
    return a->duration_ns > b->duration_ns;
  });
  std::string out;
  out.reserve(events.size() * 160 + 1024);
  append_rows(out, rows, recording.dropped);
  for (const trace_events::Event* event : events) append_event(out, *event, rows.process, origin_ns);
  if (!out.empty()) out.resize(out.size() - 2);  // the last ",\n"
  return out;
}

std::string trace_file(const std::vector<std::string>& parts, int64_t origin_ns) {
  std::string out = "{\"traceEvents\":[\n";
  bool first = true;
  for (const std::string& part : parts) {
    if (part.empty()) continue;
    if (!first) out += ",\n";
    out += part;
    first = false;
  }
  out += "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"clock\":\"steady\",\"origin_ns\":" +
         std::to_string(origin_ns) + "}}\n";
  return out;
}

}  // namespace ordo::trace_json
