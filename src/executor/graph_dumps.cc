#include "executor/graph_dumps.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <unordered_set>
#include <sstream>

#include "core/config.h"
#include "core/log.h"
#include "ir/graph_dot.h"
#include "ordo/error.h"

namespace ordo::executor {
namespace {

// Says a complaint once per process for each distinct text (a file that
// failed), not at every compile. Locking: its own leaf mutex.
void warn_once(const std::string& message) {
  static std::mutex mu;
  static std::set<std::string> said;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!said.insert(message).second) return;
  }
  logging::log(LogLevel::kWarning, message);
}

std::atomic<bool> g_wanted{false};

// The graphs each device has saved (by global ordinal): a hit saves one
// only once. Locking: its own leaf mutex.
std::mutex g_saved_mu;
std::map<GlobalOrdinal, std::unordered_set<uint64_t>> g_saved;

// Whether this is the first time the device saves graph_hash.
bool first_save(GlobalOrdinal ordinal, uint64_t graph_hash) {
  std::lock_guard<std::mutex> lock(g_saved_mu);
  return g_saved[ordinal].insert(graph_hash).second;
}

}  // namespace

std::optional<GraphDumpSettings> graph_dump_settings() {
  const Config& settings = config();
  const bool wanted = !settings.save_graphs_file.empty();
  g_wanted.store(wanted, std::memory_order_relaxed);
  if (!wanted) return std::nullopt;
  return GraphDumpSettings{settings.save_graphs_file, settings.save_graphs_format};
}

bool graph_dumps_wanted() noexcept { return g_wanted.load(std::memory_order_relaxed); }

void save_graph_on_first_hit(const ir::PostOrder& graph, GlobalOrdinal ordinal, int64_t step) {
  if (!first_save(ordinal, graph.hash)) return;
  if (std::optional<GraphDumpSettings> settings = graph_dump_settings()) save_graph(graph, *settings, ordinal, step);
}

std::string compiled_graph_summary(const ir::PostOrder& graph, GlobalOrdinal ordinal, int64_t step) {
  std::ostringstream out;
  out << "device " << ordinal << ", graph " << std::hex << graph.hash << std::dec << ", step " << step;
  return out.str();
}

std::string graph_dump_entry(const ir::PostOrder& graph, GraphFileFormat format, GlobalOrdinal ordinal, int64_t step) {
  return str_cat(format == GraphFileFormat::kDot ? "// " : "## ", "ordo graph: ",
                 compiled_graph_summary(graph, ordinal, step), "\n",
                 format == GraphFileFormat::kDot ? ir::dump_dot(graph) : ir::dump(graph));
}

void save_graph(const ir::PostOrder& graph, const GraphDumpSettings& settings, GlobalOrdinal ordinal, int64_t step) {
  first_save(ordinal, graph.hash);
  const std::string path = str_cat(settings.path, ".", ordinal);
  const std::string entry = graph_dump_entry(graph, settings.format, ordinal, step);
  // Opened per graph: compiles are rare, and no file stays open past a
  // runtime. A device's graphs come one at a time (its graph mutex).
  std::FILE* file = std::fopen(path.c_str(), "a");
  int error = file == nullptr ? errno : 0;
  if (file != nullptr) {
    if (std::fwrite(entry.data(), 1, entry.size(), file) != entry.size()) error = errno != 0 ? errno : EIO;
    if (std::fclose(file) != 0 && error == 0) error = errno;
  }
  if (error != 0) {
    warn_once(str_cat("cannot save compiled graphs to ", path, " (ORDO_SAVE_GRAPHS_FILE): ", std::strerror(error)));
  }
}

}  // namespace ordo::executor
