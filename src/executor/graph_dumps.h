// Saving every compiled graph, for people who want to see what ran:
//
//   ORDO_SAVE_GRAPHS_FILE=/tmp/g ORDO_SAVE_GRAPHS_FMT=dot python train.py
//   # /tmp/g.0, /tmp/g.1, ...: one file per device (its global ordinal)
//
// Each uncached compile appends its graph (ir::dump's text, or a Graphviz
// digraph: ir/graph_dot.h) under a header line naming the device, the
// graph's hash and the device's MarkStep count. The compile cache is the
// process's: a graph that another device of the process compiled first is
// a hit here, and is saved at this device's first hit of it, so that each
// file has every graph its device ran. The variables are the runtime's
// configuration (core/config.h: read when it starts, a bad format fails
// the start); a hit reads only what the last compile found
// (graph_dumps_wanted). A file that cannot be written is a warning (once
// per file), never an error: the step runs all the same.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/config.h"
#include "core/device_numbers.h"
#include "ir/post_order.h"

namespace ordo::executor {

struct GraphDumpSettings {
  std::string path;  // each device appends to path + "." + its global ordinal
  GraphFileFormat format = GraphFileFormat::kText;
};

// From ORDO_SAVE_GRAPHS_FILE and ORDO_SAVE_GRAPHS_FMT (text or dot; text
// if unset), as configured; nullopt when no file is asked for.
std::optional<GraphDumpSettings> graph_dump_settings();
// What the last graph_dump_settings() found: whether graphs are saved.
bool graph_dumps_wanted() noexcept;

// "device 1, graph 9f3c..., step 12": step is the device's MarkStep count.
std::string compiled_graph_summary(const ir::PostOrder& graph, GlobalOrdinal ordinal, int64_t step);

// "## ordo graph: <summary>" (text; "//" for dot:
// DOT's comment) followed by the graph.
std::string graph_dump_entry(const ir::PostOrder& graph, GraphFileFormat format, GlobalOrdinal ordinal, int64_t step);

// Appends the entry of graph to its device's file (a compile).
void save_graph(const ir::PostOrder& graph, const GraphDumpSettings& settings, GlobalOrdinal ordinal, int64_t step);
// The same at a cache hit, if graphs are saved and this device has not
// saved this graph yet.
void save_graph_on_first_hit(const ir::PostOrder& graph, GlobalOrdinal ordinal, int64_t step);

}  // namespace ordo::executor
