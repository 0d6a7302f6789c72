// A timeline of what ran: Chrome trace event JSON that Perfetto
// (ui.perfetto.dev) and chrome://tracing open, or ordo.plot_timeline's PNG.
//
//   ordo::start_trace("/tmp/step.json");
//   ... trace, mark_step, collectives ...
//   ordo::stop_trace();  // waits for the queued work, writes /tmp/step.json
//
// Each device has two rows, "ordo:N host" (its thread's tracing between
// cuts, mark_step, compile) and "ordo:N" (its worker's execute and each
// collective, with args wait_us, last_device and bytes, and a nested
// "wait" event for the time it waited for the peers: the device named
// last_device came last). Under several processes every process calls
// both (SPMD): process 0 writes one file with every process's rows (pid:
// the process, tid: the device's global ordinal). Times are the steady
// clock's, comparable across the processes of one host.
// ORDO_TRACE_FILE=path traces from the runtime's start to its shutdown or
// the process's exit, and writes path then. Tracing off costs a relaxed
// atomic load at each of those places.
#pragma once

#include <string>

namespace ordo {

// Starts recording. InvalidArgument (and nothing starts) for an empty
// path, a folder that does not exist, or while a trace is on.
void start_trace(const std::string& path);
// Waits for this process's devices' queued work, stops recording and
// writes the file (process 0 under several processes); returns its path.
// InvalidArgument when no trace is on; ExecutionError when the file
// cannot be written. Not concurrently with shutdown().
std::string stop_trace();
bool is_tracing();

}  // namespace ordo
