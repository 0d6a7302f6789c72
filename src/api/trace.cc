// ordo/trace.h: the runtime's trace file (runtime/trace_file.h).
#include "ordo/trace.h"

#include "runtime/trace_file.h"

namespace ordo {

void start_trace(const std::string& path) { runtime::start_trace(path); }

std::string stop_trace() { return runtime::stop_trace(); }

bool is_tracing() { return runtime::tracing(); }

}  // namespace ordo
