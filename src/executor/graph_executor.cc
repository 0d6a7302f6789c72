#include "executor/graph_executor.h"

#include "core/log.h"
#include "core/metrics.h"
#include "core/trace_events.h"
#include "executor/compile_cache.h"
#include "executor/compiler.h"
#include "executor/debug_analysis.h"
#include "executor/graph_dumps.h"
#include "executor/run.h"
#include "ir/post_order.h"
#include "lazy/graph_table.h"
#include "ordo/runtime.h"

namespace ordo::executor {
namespace {

// What people asked to see of a graph about to be compiled: a line at
// level info, its dump (ORDO_SAVE_GRAPHS_FILE) and ORDO_DEBUG's analysis.
// Before the compile, so that a graph that fails to compile is seen too,
// and outside CompileTime.
void show_compiled_graph(const ir::PostOrder& graph, LocalDevice device, GlobalOrdinal global_ordinal) {
  const int64_t step = metrics::counter_total(metrics::Counter::kMarkStep, device.index()).value;
  if (logging::enabled(LogLevel::kInfo)) {
    logging::log(LogLevel::kInfo, str_cat("compiling ", compiled_graph_summary(graph, global_ordinal, step), " (",
                                          graph.nodes.size(), " nodes)"));
  }
  if (std::optional<GraphDumpSettings> dumps = graph_dump_settings()) save_graph(graph, *dumps, global_ordinal, step);
  if (debug_enabled()) note_compile(graph, device, global_ordinal);
}

std::shared_ptr<const ExecutionPlan> find_or_compile(const ir::PostOrder& graph, const ScheduleOptions& options,
                                                     LocalDevice device, GlobalOrdinal global_ordinal) {
  CompileCache& cache = compile_cache();
  const uint64_t key = cache_key(graph.hash, options);
  std::shared_ptr<const ExecutionPlan> plan = cache.find(key);
  if (plan) {
    metrics::add(metrics::Counter::kCachedCompile, device.index());
    if (graph_dumps_wanted()) {
      save_graph_on_first_hit(graph, global_ordinal,
                              metrics::counter_total(metrics::Counter::kMarkStep, device.index()).value);
    }
    return plan;
  }
  metrics::add(metrics::Counter::kUncachedCompile, device.index());
  // Devices that reach this graph meanwhile wait for its plan; if the
  // compile throws, one of them compiles it instead.
  try {
    show_compiled_graph(graph, device, global_ordinal);
    metrics::ScopedTimer timer(metrics::Metric::kCompileTime, device.index());
    trace_events::ScopedEvent traced("compile", "compile", device.index(), global_ordinal.value(),
                                     trace_events::Lane::kHost, graph.hash);
    plan = compile(graph, options);
  } catch (...) {
    cache.abandon(key);
    throw;
  }
  cache.insert(key, plan);
  return plan;
}

}  // namespace

void sync_device(LocalDevice local, bool raise_failure, device::Worker::RunBy run_by) {
  lazy::GraphTable& graphs = lazy::graphs();
  device::Device& device = graphs.runtime().device(local);
  if (raise_failure) {
    if (std::optional<device::Failure> failure = device.take_failure()) failure->raise();
  }
  lazy::DeviceGraph& graph = graphs.graph(local);
  std::lock_guard<std::mutex> lock(graph.mu);
  std::vector<std::shared_ptr<lazy::TensorImpl>> tensors = graph.pending_tensors();
  std::vector<ir::Value> roots = graph.roots_of(tensors);
  if (roots.empty()) return;
  // Reused by every cut of this thread; it only points into this graph, so
  // it is cleared before the nodes die below.
  thread_local ir::PostOrder walk;
  ir::post_order(roots, walk);
  std::shared_ptr<const ExecutionPlan> plan = find_or_compile(walk, graph.schedule, local, device.ordinal());

  std::vector<std::shared_ptr<device::DeviceData>> parameters;
  parameters.reserve(walk.parameters.size());
  for (int32_t position : walk.parameters) parameters.push_back(walk.nodes[position]->data());
  std::vector<std::shared_ptr<device::DeviceData>> results;
  results.reserve(roots.size());
  for (const ir::Value& root : roots) {
    results.push_back(std::make_shared<device::DeviceData>(root.type().dtype, root.type().shape));
  }
  walk.nodes.clear();
  graph.cut(tensors, results);
  // The nodes stay with this thread, which frees them: memory freed on
  // another core than the one that allocated it crosses cores twice. They
  // go before the graph is submitted, since they hold its parameters, and
  // a parameter that nothing else holds can be written over by the graph
  // (run_plan).
  roots.clear();
  // Submitted under the graph mutex so that the worker runs graphs in the
  // order they were cut: a later graph may read this one's results.
  device.worker().submit([plan = std::move(plan), parameters = std::move(parameters),
                          results = std::move(results), &device]() mutable {
    run_plan(*plan, std::move(parameters), results, device);
  }, run_by);
}

}  // namespace ordo::executor
