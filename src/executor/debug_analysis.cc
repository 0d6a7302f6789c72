#include "executor/debug_analysis.h"

#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>

#include "core/log.h"
#include "ir/graph_dot.h"
#include "ordo/error.h"

namespace ordo::executor {
namespace {

// The graphs kept to compare the newest with: a step may compile more than
// one graph (a value read mid-step cuts its own), so the newest is compared
// with the latest of these with as many nodes.
constexpr size_t kKeptGraphs = 4;

struct DeviceWatch {
  int64_t steps = 0;                          // mark_steps seen
  std::deque<int64_t> compile_steps;          // the step of each recent uncached compile
  std::deque<std::vector<std::string>> graphs;  // node lines of the last kKeptGraphs compiled, newest last
  bool warned_compiles = false;
  int64_t last_transfer_step = -1;
  int64_t transfer_run = 0;  // consecutive steps, up to the last, that read a value
  bool warned_transfers = false;
};

// Locking: a leaf; only under ORDO_DEBUG, and never held while logging.
std::mutex g_mu;
std::map<LocalDevice, DeviceWatch> g_watches;

std::string split_node(const std::string& line, std::string* rest) {
  const size_t equals = line.find(" = ");
  if (equals == std::string::npos) {
    *rest = line;
    return "";
  }
  *rest = line.substr(equals + 3);
  return line.substr(0, equals);
}

const std::vector<std::string>& closest_earlier(const DeviceWatch& watch) {
  const std::vector<std::string>& newest = watch.graphs.back();
  for (size_t i = watch.graphs.size() - 1; i-- > 0;) {
    if (watch.graphs[i].size() == newest.size()) return watch.graphs[i];
  }
  return watch.graphs[watch.graphs.size() - 2];
}

std::optional<std::string> recompile_warning(DeviceWatch& watch, GlobalOrdinal ordinal) {
  while (!watch.compile_steps.empty() && watch.compile_steps.front() <= watch.steps - kWindowSteps) {
    watch.compile_steps.pop_front();
  }
  const auto compiles = static_cast<int64_t>(watch.compile_steps.size());
  if (watch.warned_compiles || watch.steps < kSettleSteps || 2 * compiles <= kWindowSteps || watch.graphs.size() < 2) {
    return std::nullopt;
  }
  watch.warned_compiles = true;
  std::string difference = describe_difference(closest_earlier(watch), watch.graphs.back());
  if (difference.empty()) difference = "the same nodes (the compile cache is too small for the step's graphs?)";
  return str_cat("device ", ordinal, " compiled ", compiles, " graphs in the last ", kWindowSteps,
                 " steps (ORDO_DEBUG): graphs that change every step recompile every step. The last two differ at ",
                 difference, ". A Python number in an op is a constant of the graph: pass values that change "
                 "as tensors (ordo.tensor(lr)), and keep shapes fixed");
}

}  // namespace

std::string describe_difference(const std::vector<std::string>& older, const std::vector<std::string>& newer,
                                int max_differences) {
  std::string out;
  int found = 0;
  for (size_t i = 0; i < std::min(older.size(), newer.size()) && found < max_differences; ++i) {
    if (older[i] == newer[i]) continue;
    std::string old_rest, new_rest;
    const std::string old_name = split_node(older[i], &old_rest);
    const std::string new_name = split_node(newer[i], &new_rest);
    out += str_cat(found++ ? "; " : "", "node ", old_name == new_name ? old_name : old_name + "/" + new_name, ": ",
                   old_rest, " vs ", new_rest);
  }
  if (older.size() != newer.size()) {
    out += str_cat(out.empty() ? "" : " ", "(", older.size(), " nodes vs ", newer.size(), ")");
  }
  return out;
}

void note_mark_step(LocalDevice device) {
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_watches[device].steps;
}

void note_compile(const ir::PostOrder& graph, LocalDevice device, GlobalOrdinal ordinal) {
  std::vector<std::string> lines = ir::node_lines(graph);
  std::optional<std::string> warning;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    DeviceWatch& watch = g_watches[device];
    watch.compile_steps.push_back(watch.steps);
    watch.graphs.push_back(std::move(lines));
    if (watch.graphs.size() > kKeptGraphs) watch.graphs.pop_front();
    warning = recompile_warning(watch, ordinal);
  }
  if (warning) logging::log(LogLevel::kWarning, *warning);
}

void note_transfer_from_device(LocalDevice device, GlobalOrdinal ordinal) {
  bool warn = false;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    DeviceWatch& watch = g_watches[device];
    if (watch.last_transfer_step == watch.steps) return;
    watch.transfer_run = watch.last_transfer_step == watch.steps - 1 ? watch.transfer_run + 1 : 1;
    watch.last_transfer_step = watch.steps;
    warn = !watch.warned_transfers && watch.transfer_run >= kWindowSteps;
    watch.warned_transfers = watch.warned_transfers || warn;
  }
  if (!warn) return;
  logging::log(LogLevel::kWarning,
               str_cat("device ", ordinal, " read values back to the host in each of the last ",
                       kWindowSteps, " steps (ORDO_DEBUG): each read waits for the device to finish the step. "
                       "Read less often (every N steps), or keep the values on the device"));
}

}  // namespace ordo::executor
