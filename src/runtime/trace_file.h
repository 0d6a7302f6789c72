// The trace's file (ordo/trace.h): which path a trace writes, and writing
// it. Under several processes every process calls stop_trace (SPMD), and
// process 0 writes one file with every process's rows: the parts meet
// through the communicator's exchange, between the processes' first
// devices. ORDO_TRACE_FILE=path traces each runtime from its start to its
// stop (or to the process's exit) and writes path then.
#pragma once

#include <string>

namespace ordo::runtime {

class Runtime;

// Throws InvalidArgument for an empty path, a path whose folder does not
// exist, or while a trace is on; nothing changes then.
void start_trace(const std::string& path);
// Waits for the queued work of this process's devices, turns recording
// off and writes the file; returns its path. InvalidArgument when no
// trace is on.
std::string stop_trace();
bool tracing();

// The runtime's hooks: ORDO_TRACE_FILE starts a trace when a runtime starts,
// and writes it before rt stops (errors go to stderr: a stop does not throw).
void start_env_trace();
void finish_env_trace(Runtime& rt) noexcept;

}  // namespace ordo::runtime
