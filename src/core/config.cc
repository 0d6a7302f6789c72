#include "core/config.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <set>

#include "core/log.h"
#include "ordo/error.h"

extern char** environ;

namespace ordo {
namespace {

// Parses one variable's non-empty text into its field; throws InvalidArgument
// leaving the field as it was.
using Parse = void (*)(std::string_view name, std::string_view text, Config& config);

struct Variable {
  std::string_view name;
  Parse parse;
};

template <typename Number>
bool parse_number(std::string_view text, Number& value) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end;
}

int whole_number(std::string_view name, std::string_view text, int low, int high, std::string_view what) {
  int value = 0;
  ORDO_ARG_CHECK(parse_number(text, value) && value >= low && value <= high, name, ": '", text, "' is not ", what);
  return value;
}

// Finite: a deadline needs one, and set_collective_timeouts refuses inf too
// (1e9 s waits three decades).
double seconds(std::string_view name, std::string_view text) {
  double value = 0;
  ORDO_ARG_CHECK(parse_number(text, value) && std::isfinite(value) && value > 0, name, ": '", text,
                 "' is not a positive, finite number of seconds");
  return value;
}

bool on_off(std::string_view name, std::string_view text) {
  if (text == "1" || text == "on" || text == "true") return true;
  ORDO_ARG_CHECK(text == "0" || text == "off" || text == "false", name, ": '", text,
                 "' is not a switch (1, on, true; or 0, off, false)");
  return false;
}

// The index of text among choices.
template <size_t N>
size_t one_of(std::string_view name, std::string_view text, const std::array<std::string_view, N>& choices) {
  const auto it = std::find(choices.begin(), choices.end(), text);
  if (it == choices.end()) {
    std::string listed;
    for (std::string_view choice : choices) listed += str_cat(listed.empty() ? "" : ", ", choice);
    throw_error<InvalidArgument>(name, ": '", text, "' is not one of ", listed);
  }
  return static_cast<size_t>(it - choices.begin());
}

// In the README's table's order.
constexpr Variable kVariables[] = {
    {"ORDO_NUM_DEVICES",
     [](std::string_view name, std::string_view text, Config& c) {
       int n = 0;
       ORDO_ARG_CHECK(parse_number(text, n), name, ": '", text, "' is not a whole number");
       ORDO_ARG_CHECK(n >= 1 && n <= kMaxDevices, name, ": the number of devices must be in [1, ", kMaxDevices,
                      "], got ", n);
       c.num_devices = n;
     }},
    {"ORDO_BACKEND",
     [](std::string_view name, std::string_view text, Config& c) {
       one_of<2>(name, text, {"in_process", "mpi"});
       c.backend = std::string(text);
     }},
    {"ORDO_COLLECTIVE_WARN_SECONDS",
     [](std::string_view name, std::string_view text, Config& c) { c.collective_warn_seconds = seconds(name, text); }},
    {"ORDO_COLLECTIVE_TIMEOUT_SECONDS",
     [](std::string_view name, std::string_view text, Config& c) {
       c.collective_timeout_seconds = seconds(name, text);
     }},
    {"ORDO_MAX_STEPS_AHEAD",
     [](std::string_view name, std::string_view text, Config& c) {
       c.max_steps_ahead = whole_number(name, text, 0, kMaxStepsAhead, "a whole number of steps from 0 to 1048576");
     }},
    {"ORDO_CPU_BIND",
     [](std::string_view name, std::string_view text, Config& c) {
       c.cpu_bind = one_of<2>(name, text, {"cores", "none"}) == 0;
     }},
    {"ORDO_KERNEL_THREADS",
     [](std::string_view name, std::string_view text, Config& c) {
       c.kernel_threads = whole_number(name, text, 1, std::numeric_limits<int>::max(), "a whole number of threads >= 1");
     }},
    {"ORDO_MPI_SHM", [](std::string_view name, std::string_view text, Config& c) { c.mpi_shm = on_off(name, text); }},
    {"ORDO_MESH_ADDRESS",
     [](std::string_view name, std::string_view text, Config& c) {
       in_addr address{};
       const std::string ip(text);
       ORDO_ARG_CHECK(inet_pton(AF_INET, ip.c_str(), &address) == 1, name, ": '", text,
                      "' is not an IPv4 address such as 10.0.0.2");
       c.mesh_address = ip;
     }},
    {"ORDO_LOG_LEVEL",
     [](std::string_view name, std::string_view text, Config& c) {
       const std::optional<LogLevel> level = parse_log_level(text);
       ORDO_ARG_CHECK(level.has_value(), name, ": '", text, "' is not a log level (error, warning, info, debug or 0-3)");
       c.log_level = *level;
     }},
    {"ORDO_DEBUG", [](std::string_view name, std::string_view text, Config& c) { c.debug = on_off(name, text); }},
    {"ORDO_IR_DEBUG", [](std::string_view name, std::string_view text, Config& c) { c.ir_debug = on_off(name, text); }},
    {"ORDO_SAVE_GRAPHS_FILE",
     [](std::string_view, std::string_view text, Config& c) { c.save_graphs_file = std::string(text); }},
    {"ORDO_SAVE_GRAPHS_FMT",
     [](std::string_view name, std::string_view text, Config& c) {
       c.save_graphs_format = one_of<2>(name, text, {"text", "dot"}) == 0 ? GraphFileFormat::kText : GraphFileFormat::kDot;
     }},
    {"ORDO_TRACE_FILE", [](std::string_view, std::string_view text, Config& c) { c.trace_file = std::string(text); }},
};

// What the project's scripts and tests read (scripts/*.sh, tests/): they are
// set around ordo's processes, and are no typo.
constexpr std::string_view kToolPrefixes[] = {"ORDO_TEST_", "ORDO_FUZZ_", "ORDO_BENCH_", "ORDO_BUILD_DIR",
                                              "ORDO_SWEEP_"};

bool tools_variable(std::string_view name) {
  return std::any_of(std::begin(kToolPrefixes), std::end(kToolPrefixes),
                     [&](std::string_view prefix) { return name.starts_with(prefix); });
}

// Edits (insert, delete, replace, swap of neighbours) from a to b.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t replace = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, replace});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    before.swap(previous);
    previous.swap(current);
  }
  return previous[b.size()];
}

// A snapshot of the configuration: config_internal::g_current points at
// the newest. Older ones stay, linked from it (so that a leak checker finds
// them): a reader on another thread may hold one. A load makes a new one
// only when the environment changed.
struct Snapshot : Config {
  const Snapshot* older = nullptr;
};

// Makes config the current one, unless it is already, or unless any is
// (first_only: the lenient first read loses to a load).
const Config& publish(Config config, bool first_only) {
  auto* made = new Snapshot{std::move(config)};
  const Config* current = config_internal::g_current.load(std::memory_order_acquire);
  for (;;) {
    if (current != nullptr && (first_only || *current == static_cast<const Config&>(*made))) {
      delete made;
      return *current;
    }
    made->older = static_cast<const Snapshot*>(current);
    if (config_internal::g_current.compare_exchange_weak(current, made, std::memory_order_acq_rel,
                                                         std::memory_order_acquire)) {
      return *made;
    }
  }
}

void warn_once_about_unknown(const std::vector<std::string>& unknown) {
  static std::mutex mu;
  static std::set<std::string> warned;  // guarded by mu
  for (const std::string& name : unknown) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!warned.insert(name).second) continue;
    }
    const std::string_view near = closest_variable(name);
    logging::log(LogLevel::kWarning, str_cat(name, " is not a variable ordo reads",
                                             near.empty() ? "" : str_cat("; did you mean ", near, "?"),
                                             " (the README's table lists them)"));
  }
}

}  // namespace

ParsedConfig parse_config(const OrdoVariables& variables) {
  ParsedConfig parsed;
  for (const Variable& variable : kVariables) {
    const auto it = std::find_if(variables.begin(), variables.end(), [&](const auto& v) { return v.first == variable.name; });
    if (it == variables.end() || it->second.empty()) continue;
    try {
      variable.parse(variable.name, it->second, parsed.config);
    } catch (const InvalidArgument& error) {
      parsed.errors.push_back(error.what());
    }
  }
  for (const auto& [name, value] : variables) {
    const bool known = std::any_of(std::begin(kVariables), std::end(kVariables),
                                   [&](const Variable& variable) { return variable.name == name; });
    if (!known && !tools_variable(name)) parsed.unknown.push_back(name);
  }
  return parsed;
}

OrdoVariables ordo_variables_of_environment() {
  OrdoVariables variables;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text = *entry;
    const size_t equals = text.find('=');
    if (!text.starts_with("ORDO_") || equals == std::string_view::npos) continue;
    variables.emplace_back(text.substr(0, equals), text.substr(equals + 1));
  }
  return variables;
}

std::string_view closest_variable(std::string_view unknown_name) {
  constexpr size_t kTypoEdits = 3;
  // "ORDO_" and three letters before a prefix says anything.
  const bool long_enough = unknown_name.size() >= 8;
  std::string_view best;
  size_t best_edits = SIZE_MAX;
  for (const Variable& variable : kVariables) {
    const size_t edits = edit_distance(unknown_name, variable.name);
    const bool prefix = long_enough && (variable.name.starts_with(unknown_name) || unknown_name.starts_with(variable.name));
    if ((edits <= kTypoEdits || prefix) && edits < best_edits) {
      best = variable.name;
      best_edits = edits;
    }
  }
  return best;
}

const Config& load_config() {
  ParsedConfig parsed = parse_config(ordo_variables_of_environment());
  if (!parsed.errors.empty()) {
    std::string all;
    for (const std::string& error : parsed.errors) all += str_cat(all.empty() ? "" : "; ", error);
    throw InvalidArgument(all);
  }
  const Config& loaded = publish(std::move(parsed.config), false);
  warn_once_about_unknown(parsed.unknown);
  return loaded;
}

namespace config_internal {

std::atomic<const Config*> g_current{nullptr};

const Config& first_config() { return publish(parse_config(ordo_variables_of_environment()).config, true); }

}  // namespace config_internal

}  // namespace ordo
