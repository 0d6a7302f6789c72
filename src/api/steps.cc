// ordo/runtime.h, the steps of a device: cutting its graph (mark_step,
// drop_pending_graph), waiting for its queue, showing its graph, and the
// compile cache and schedule that cuts use.
#include <atomic>

#include "core/check.h"
#include "core/config.h"
#include "core/metrics.h"
#include "core/trace_events.h"
#include "api/spawned_devices.h"
#include "executor/compile_cache.h"
#include "executor/debug_analysis.h"
#include "executor/graph_executor.h"
#include "ir/collective_attrs.h"
#include "ir/post_order.h"
#include "lazy/graph_table.h"
#include "lazy/trace.h"
#include "ordo/runtime.h"

namespace ordo {

namespace {

void cut(LocalDevice device, device::Worker::RunBy run_by) {
  metrics::add(metrics::Counter::kMarkStep, device.index());
  if (executor::debug_enabled()) executor::note_mark_step(device);
  trace_events::ScopedCut traced(device.index(), trace_events::on() ? runtime::get().ordinal_of(device).value() : -1);
  executor::sync_device(device, true, run_by);
}

// The bound set in code, or -1: then ORDO_MAX_STEPS_AHEAD's (core/config.h).
std::atomic<int> g_steps_ahead_set{-1};

}  // namespace

void set_max_steps_ahead(int steps) {
  ORDO_ARG_CHECK(steps >= 0, "set_max_steps_ahead: the bound must be 0 or more, got ", steps);
  g_steps_ahead_set.store(steps, std::memory_order_relaxed);
}

int max_steps_ahead() {
  const int set = g_steps_ahead_set.load(std::memory_order_relaxed);
  return set >= 0 ? set : config().max_steps_ahead;
}

void mark_step(int local_device) {
  const LocalDevice device = runtime::resolve_device(local_device);
  device::Worker& worker = runtime::get().device(device).worker();
  const size_t most = static_cast<size_t>(max_steps_ahead());
  // A thread that takes turns with its worker on one CPU runs its steps
  // itself, all it kept whenever it is over the bound, as it would
  // otherwise wait for them: the worker thread could only run them by
  // taking the CPU from it, two thread switches a step (1 KiB steps on 2
  // devices of 2 CPUs: 1.65-1.89x the time with no bound; kept,
  // 0.97-1.06x). A caller that comes back late keeps nothing (device/worker.h).
  const bool takes_turns = worker.takes_turns_with_caller();
  using device::Worker;
  cut(device, takes_turns || most == 0 ? Worker::RunBy::kCaller : Worker::RunBy::kWorkerThread);
  worker.drain_to(most, "mark_step", takes_turns ? Worker::Leftover::kKeptByCaller : Worker::Leftover::kToWorkerThread);
}

void mark_step_and_wait(int local_device) {
  const LocalDevice device = runtime::resolve_device(local_device);
  cut(device, device::Worker::RunBy::kCaller);
  runtime::get().device(device).worker().drain();
}

void wait_device_ops(int local_device) {
  runtime::Runtime& rt = runtime::get();
  rt.device(rt.checked_device(local_device)).worker().drain();
}

void wait_device_ops() {
  runtime::Runtime& rt = runtime::get();
  for (const LocalDevice device : rt.local_devices()) rt.device(device).worker().drain();
}

namespace {

// A collective of a dropped graph, abandoned at the communicator.
struct Abandoned {
  ir::OpKind op;
  ir::CollectiveAttrs attrs;
};

// The collectives among roots' nodes, in post-order (a token chain's
// collectives in the chain's order).
std::vector<Abandoned> collectives_of(const std::vector<ir::Value>& roots) {
  std::vector<Abandoned> collectives;
  const ir::PostOrder walk = ir::post_order(roots);
  for (const ir::Node* node : walk.nodes) {
    if (ir::op_group(node->op()) == ir::OpGroup::kCollective) {
      collectives.push_back({node->op(), ir::decode_collective(*node)});
    }
  }
  return collectives;
}

// drop_pending_graph, saying `why` (the tensors' values) and `abandoned`
// (the collectives' peers); with only_with_collectives, a graph without a
// collective is kept.
void drop_graph(LocalDevice device, const std::string& why, const std::string& abandoned,
                bool only_with_collectives) {
  lazy::GraphTable& graphs = lazy::graphs();
  device::Device& dev = graphs.runtime().device(device);
  lazy::DeviceGraph& graph = graphs.graph(device);
  std::lock_guard<std::mutex> lock(graph.mu);
  const std::vector<std::shared_ptr<lazy::TensorImpl>> tensors = graph.pending_tensors();
  const std::vector<ir::Value> roots = graph.roots_of(tensors);
  if (roots.empty()) return;
  std::vector<Abandoned> collectives = collectives_of(roots);
  if (only_with_collectives && collectives.empty()) return;
  const device::Failure dropped{ErrorCode::kExecution,
                                str_cat("the value of this tensor was dropped ", why, " before it was computed")};
  // Everything that may throw comes first, so that a failure leaves the
  // graph as it was.
  std::vector<std::shared_ptr<device::DeviceData>> failed;
  failed.reserve(tensors.size());
  for (const auto& tensor : tensors) {
    failed.push_back(device::DeviceData::dropped(tensor->dtype, tensor->shape, dropped));
  }
  if (!collectives.empty()) {
    // On the worker, after the graphs submitted before (under the graph
    // mutex, like a cut): a device's collectives are numbered in the order
    // its worker reaches them.
    dev.worker().submit([collectives = std::move(collectives), abandoned, &dev] {
      for (const Abandoned& c : collectives) dev.communicator().abandon(c.op, c.attrs, dev.ordinal(), abandoned);
    });
  }
  graph.cut(tensors, failed);
}

}  // namespace

void drop_pending_graph(int local_device) {
  const LocalDevice device = runtime::resolve_device(local_device);
  drop_graph(device, str_cat("with drop_pending_graph(", device, ")"),
             "its pending graph was dropped (drop_pending_graph)", false);
}

namespace api {

bool has_collectives_pending(LocalDevice device) {
  lazy::DeviceGraph& graph = lazy::graphs().graph(device);
  std::lock_guard<std::mutex> lock(graph.mu);
  const std::vector<ir::Value> roots = graph.roots_of(graph.pending_tensors());
  return !roots.empty() && !collectives_of(roots).empty();
}

void drop_collectives_left_behind(LocalDevice device, const std::string& why) {
  drop_graph(device, why, "its pending graph was dropped " + why, true);
}

}  // namespace api

std::string dump_pending_graph(int local_device) {
  lazy::DeviceGraph& graph = lazy::graphs().graph(runtime::resolve_device(local_device));
  std::lock_guard<std::mutex> lock(graph.mu);
  return ir::dump(ir::post_order(graph.roots_of(graph.pending_tensors())));
}

std::string dump_graph(const std::vector<Tensor>& tensors) {
  std::vector<const Tensor*> inputs;
  for (const Tensor& t : tensors) inputs.push_back(&t);
  ORDO_ARG_CHECK(!inputs.empty(), "dump_graph: no tensors given");
  const LocalDevice device = lazy::common_device("dump_graph", inputs);
  lazy::DeviceGraph& graph = lazy::graphs().graph(device);
  std::lock_guard<std::mutex> lock(graph.mu);
  std::vector<ir::Value> roots;
  for (const Tensor* t : inputs) roots.push_back(lazy::value_of(*t->impl()));
  return ir::dump(ir::post_order(roots));
}

CompileCacheStats compile_cache_stats() { return executor::compile_cache().stats(); }

void reset_compile_cache(int64_t capacity) { executor::compile_cache().reset(capacity); }

void set_schedule(int local_device, ScheduleOptions options) {
  lazy::GraphTable& graphs = lazy::graphs();
  lazy::DeviceGraph& graph = graphs.graph(graphs.runtime().checked_device(local_device));
  std::lock_guard<std::mutex> lock(graph.mu);
  graph.schedule = options;
}

}  // namespace ordo
