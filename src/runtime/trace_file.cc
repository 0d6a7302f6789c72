#include "runtime/trace_file.h"

#include <algorithm>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "core/config.h"
#include "core/trace_events.h"
#include "core/trace_json.h"
#include "ordo/error.h"
#include "runtime/runtime.h"

namespace ordo::runtime {
namespace {

std::mutex g_trace_mu;
std::string g_path;     // guarded by g_trace_mu; empty: no trace is on
bool g_from_env = false;  // guarded by g_trace_mu: the trace is ORDO_TRACE_FILE's

constexpr std::string_view kExchangeTag = "ordo.trace";

void check_writable_folder(const std::string& path) {
  ORDO_ARG_CHECK(!path.empty(), "start_trace: the path is empty");
  const std::filesystem::path folder = std::filesystem::absolute(path).parent_path();
  std::error_code error;
  ORDO_ARG_CHECK(std::filesystem::is_directory(folder, error), "start_trace: the folder ", folder.string(),
                 " of '", path, "' does not exist");
}

void start_locked(const std::string& path, bool from_env) {
  ORDO_ARG_CHECK(g_path.empty(), "start_trace: a trace is already on (writing to '", g_path,
                 "'); call stop_trace() first");
  check_writable_folder(path);
  trace_events::start();
  g_path = path;
  g_from_env = from_env;
}

// Every process's part, process 0's first: the first devices of the
// processes meet twice, for the earliest origin and then for the parts.
struct Gathered {
  std::vector<std::string> parts;
  int64_t origin_ns;
};

Gathered gather(const trace_events::Recording& recording, Runtime* rt) {
  trace_json::ProcessRows rows;
  if (rt == nullptr) {  // after shutdown: the rows the events name
    for (const trace_events::Event& event : recording.events) rows.devices = std::max(rows.devices, event.device + 1);
    return {{trace_json::process_events(recording, rows, recording.origin_ns)}, recording.origin_ns};
  }
  const comm::Topology& topology = rt->topology();
  rows = {topology.process(), topology.process_count(), rt->ordinal_of(LocalDevice(0)).value(), rt->num_devices()};
  if (topology.process_count() == 1) {
    return {{trace_json::process_events(recording, rows, recording.origin_ns)}, recording.origin_ns};
  }
  std::vector<GlobalOrdinal> leaders;  // each process's first device
  for (int p = 0; p < topology.process_count(); ++p) leaders.emplace_back(p * topology.local_devices());
  auto exchange = [&](const std::string& payload) {
    return rt->communicator().exchange({rt->ordinal_of(LocalDevice(0)), kExchangeTag, leaders, payload});
  };
  int64_t origin = recording.origin_ns;
  for (const std::string& other : exchange(std::to_string(recording.origin_ns))) {
    origin = std::min<int64_t>(origin, std::stoll(other));
  }
  return {exchange(trace_json::process_events(recording, rows, origin)), origin};
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out.good()) {
    throw_error<ExecutionError>("stop_trace: could not write the trace to '", path, "': ", std::strerror(errno));
  }
}

void drain_devices(Runtime& rt) {
  for (const LocalDevice device : rt.local_devices()) rt.device(device).worker().drain();
}

// Caller holds g_trace_mu and a trace is on.
std::string finish_locked(Runtime* rt) {
  const std::string path = std::move(g_path);
  g_path.clear();
  const trace_events::Recording recording = trace_events::stop();
  const Gathered gathered = gather(recording, rt);
  const bool writes = rt == nullptr || rt->topology().process() == 0;
  if (writes) write_file(path, trace_json::trace_file(gathered.parts, gathered.origin_ns));
  return path;
}

void write_env_trace_at_exit() {
  if (is_running()) finish_env_trace(get());
}

}  // namespace

void start_trace(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_trace_mu);
  start_locked(path, false);
}

std::string stop_trace() {
  Runtime* rt = is_running() ? &get() : nullptr;
  if (rt != nullptr) drain_devices(*rt);
  std::lock_guard<std::mutex> lock(g_trace_mu);
  ORDO_ARG_CHECK(!g_path.empty(), "stop_trace: no trace is on (start_trace(path) starts one)");
  return finish_locked(rt);
}

bool tracing() {
  std::lock_guard<std::mutex> lock(g_trace_mu);
  return !g_path.empty();
}

void start_env_trace() {
  const std::string& path = config().trace_file;
  if (path.empty()) return;
  std::lock_guard<std::mutex> lock(g_trace_mu);
  if (!g_path.empty()) return;  // start_trace's trace goes on
  try {
    start_locked(path, true);
  } catch (const Error& e) {  // the runtime starts all the same, untraced
    std::fprintf(stderr, "ordo: ORDO_TRACE_FILE: %s\n", e.what());
    return;
  }
  // After the communicator's own exit hooks (MPI's finalize), so that it
  // runs before them.
  static const bool registered = std::atexit(&write_env_trace_at_exit) == 0;
  (void)registered;
}

void finish_env_trace(Runtime& rt) noexcept {
  try {
    {
      // Without ORDO_TRACE_FILE's trace, a stop must not wait for the
      // queues (a collective whose peers never queued it would wait).
      std::lock_guard<std::mutex> lock(g_trace_mu);
      if (g_path.empty() || !g_from_env) return;
    }
    drain_devices(rt);
    std::lock_guard<std::mutex> lock(g_trace_mu);
    if (g_path.empty() || !g_from_env) return;
    finish_locked(&rt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ordo: ORDO_TRACE_FILE: %s\n", e.what());
  }
}

}  // namespace ordo::runtime
