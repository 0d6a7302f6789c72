// Chrome's trace event format (what Perfetto and chrome://tracing open) for
// a recording of core/trace_events.h:
//
//   std::string part = trace_json::process_events(recording, rows, origin_ns);
//   std::string file = trace_json::trace_file({part, other_process_part}, origin_ns);
//
// Every event is a complete event ("ph":"X", ts and dur in microseconds
// since origin_ns); pid is the process, tid the device's global ordinal
// for its worker's lane and kHostLaneTid + ordinal for its host lane, and
// metadata events ("M") name them ("process 0", "ordo:0", "ordo:0 host").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/trace_events.h"

namespace ordo::trace_json {

constexpr int64_t kHostLaneTid = 1000000;

// The rows of one process.
struct ProcessRows {
  int process = 0;
  int process_count = 1;
  int first_ordinal = 0;  // the global ordinal of the process's device 0
  int devices = 0;
};

// The process's events, comma separated (a part of a traceEvents array),
// each row's in time order.
std::string process_events(const trace_events::Recording& recording, const ProcessRows& rows, int64_t origin_ns);

// A whole file from every process's part.
std::string trace_file(const std::vector<std::string>& parts, int64_t origin_ns);

}  // namespace ordo::trace_json
