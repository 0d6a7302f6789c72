// ordo's configuration: every ORDO_* environment variable, parsed and
// checked in one place (the README's table lists them).
//
//   const Config& c = load_config();  // runtime start: InvalidArgument naming a bad variable and its value
//   config().max_steps_ahead;         // any layer, any time: 2 unless ORDO_MAX_STEPS_AHEAD says otherwise
//
// The runtime loads it at every start (ordo::init, or the first use), before
// anything starts: a bad value fails there, whatever layer reads it and
// however late. Between runtimes, config() is the last start's; before the
// first start (a line logged before any runtime), the environment's, with
// a bad value left at its default until the start reports it. A setting
// made in code (set_collective_timeouts, set_max_steps_ahead,
// set_log_level, set_ir_debug_enabled, init(n)) wins over its variable; the
// readers keep that precedence.
//
// An unknown ORDO_* name is warned about once per process at load_config,
// naming the closest variable when one is near (a typo); the names the
// project's own scripts and tests use (ORDO_TEST_*, ORDO_FUZZ_*, ...) pass.
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ordo/log.h"

namespace ordo {

inline constexpr int kMaxDevices = 1024;
inline constexpr int kMaxStepsAhead = 1 << 20;

enum class GraphFileFormat { kText, kDot };

// An empty variable counts as unset: its field keeps the default.
struct Config {
  int num_devices = 4;                      // ORDO_NUM_DEVICES: local devices of a runtime started without init(n)
  std::string backend;                      // ORDO_BACKEND: "in_process", "mpi", or "" (chosen by mpirun)
  double collective_warn_seconds = 30.0;    // ORDO_COLLECTIVE_WARN_SECONDS
  double collective_timeout_seconds = 300.0;  // ORDO_COLLECTIVE_TIMEOUT_SECONDS
  int max_steps_ahead = 2;                  // ORDO_MAX_STEPS_AHEAD: 0 makes mark_step synchronous
  std::optional<bool> cpu_bind;             // ORDO_CPU_BIND: cores (true), none (false); unset: device/cpu_placement.h
  int kernel_threads = 0;                   // ORDO_KERNEL_THREADS: 0 is no cap beyond the free cores
  bool mpi_shm = true;                      // ORDO_MPI_SHM: headers between a host's processes through shared memory
  std::string mesh_address;                 // ORDO_MESH_ADDRESS: the process mesh's IPv4 address ("": chosen)
  LogLevel log_level = LogLevel::kWarning;  // ORDO_LOG_LEVEL
  bool debug = false;                       // ORDO_DEBUG: the recompile and read-back warnings
  bool ir_debug = false;                    // ORDO_IR_DEBUG: ops record the user's source line
  std::string save_graphs_file;             // ORDO_SAVE_GRAPHS_FILE: "" saves none
  GraphFileFormat save_graphs_format = GraphFileFormat::kText;  // ORDO_SAVE_GRAPHS_FMT
  std::string trace_file;                   // ORDO_TRACE_FILE: "" traces nothing

  bool operator==(const Config&) const = default;
};

// The ORDO_* entries of an environment, (name, value).
using OrdoVariables = std::vector<std::pair<std::string, std::string>>;

struct ParsedConfig {
  Config config;                       // a bad value keeps its field's default
  std::vector<std::string> errors;     // "ORDO_X: 'value' is not ...", one per bad variable
  std::vector<std::string> unknown;    // ORDO_* names ordo does not read (nor the project's scripts)
};

// Parses variables (no environment is read: tests pass their own).
ParsedConfig parse_config(const OrdoVariables& variables);
// The ORDO_* entries of this process's environment.
OrdoVariables ordo_variables_of_environment();
// The variable nearest to an unknown name, or "" when none is near enough
// to be its typo.
std::string_view closest_variable(std::string_view unknown_name);

// Parses this process's environment and makes it the current configuration;
// throws InvalidArgument naming every bad variable and its value, leaving
// the current one as it was. Warns (the log, level warning) once per
// process about each unknown ORDO_* name.
const Config& load_config();
namespace config_internal {
// The current snapshot (config.cc), null until the first read.
extern std::atomic<const Config*> g_current;
const Config& first_config();
}  // namespace config_internal

// The current configuration (above): one load on the paths taken at every
// op or step. Thread-safe; the reference stays valid for the process's life.
inline const Config& config() {
  const Config* current = config_internal::g_current.load(std::memory_order_acquire);
  return current != nullptr ? *current : config_internal::first_config();
}

}  // namespace ordo
