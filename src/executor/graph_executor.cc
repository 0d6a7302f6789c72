#include "executor/graph_executor.h"

#include "core/interrupt.h"
#include "executor/compile_cache.h"
#include "executor/compiler.h"
#include "executor/run.h"
#include "ir/collective_attrs.h"
#include "ir/post_order.h"
#include "lazy/trace.h"
#include "ordo/runtime.h"
#include "runtime/runtime.h"

namespace ordo::executor {
namespace {

std::shared_ptr<const ExecutionPlan> find_or_compile(const ir::PostOrder& graph,
                                                     const ScheduleOptions& options) {
  CompileCache& cache = compile_cache();
  const uint64_t key = cache_key(graph.hash, options);
  std::shared_ptr<const ExecutionPlan> plan = cache.find(key);
  if (!plan) {
    plan = compile(graph, options);
    cache.insert(key, plan);
  }
  return plan;
}

}  // namespace

void sync_device(int ordinal, bool raise_failure) {
  runtime::Runtime& rt = runtime::get();
  rt.check_device(ordinal);
  device::Device& device = rt.device(ordinal);
  if (raise_failure) {
    if (std::optional<device::Failure> failure = device.take_failure()) failure->raise();
  }
  lazy::DeviceGraph& graph = rt.graph(ordinal);
  std::lock_guard<std::mutex> lock(graph.mu);
  std::vector<std::shared_ptr<lazy::TensorImpl>> tensors = graph.pending_tensors();
  const std::vector<ir::Value> roots = graph.roots_of(tensors);
  if (roots.empty()) return;
  // Reused by every cut of this thread; it only points into this graph, so
  // it is cleared before the nodes die below.
  thread_local ir::PostOrder walk;
  ir::post_order(roots, walk);
  std::shared_ptr<const ExecutionPlan> plan = find_or_compile(walk, graph.schedule);

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
  // Submitted under the graph mutex so that the worker runs graphs in the
  // order they were cut: a later graph may read this one's results. The
  // nodes stay with this thread, which frees them: memory freed on another
  // core than the one that allocated it crosses cores twice.
  device.worker().submit([plan = std::move(plan), parameters = std::move(parameters),
                          results = std::move(results), &device] {
    run_plan(*plan, parameters, results, device);
  });
}

namespace {

// The tensor's data, cutting its device's graph first if it is pending.
std::shared_ptr<device::DeviceData> materialize(const lazy::TensorImpl& tensor) {
  lazy::DeviceGraph& graph = runtime::get().graph(tensor.device);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(graph.mu);
      if (!tensor.is_pending()) return tensor.data;
    }
    sync_device(tensor.device, /*raise_failure=*/false);
  }
}

}  // namespace

std::shared_ptr<const device::Buffer> wait_for_value(const lazy::TensorImpl& tensor) {
  // Found before the cut: looked up after it, a runtime shut down meanwhile
  // by another thread would be started afresh here.
  device::Worker& worker = runtime::get().device(tensor.device).worker();
  const std::shared_ptr<device::DeviceData> data = materialize(tensor);
  if (!data->is_done()) worker.help_until([&data] { return data->is_done(); });
  // An interruptible waiter (core/interrupt.h) wakes now and then to look
  // at its check; the worker thread runs what it left.
  while (has_interrupt_check() && !data->is_done()) {
    if (poll_interrupt()) throw_interrupted(str_cat("reading a value of device ", tensor.device));
    data->wait_until(interrupt_poll_deadline(std::chrono::steady_clock::time_point::max()));
  }
  return data->wait();
}

}  // namespace ordo::executor

namespace ordo {

void mark_step(int device) { executor::sync_device(runtime::resolve_device(device), true); }

void wait_device_ops(int device) {
  runtime::Runtime& rt = runtime::get();
  rt.check_device(device);
  rt.device(device).worker().drain();
}

void wait_device_ops() {
  runtime::Runtime& rt = runtime::get();
  for (int d = 0; d < rt.num_devices(); ++d) rt.device(d).worker().drain();
}

void drop_pending_graph(int device) {
  runtime::Runtime& rt = runtime::get();
  const int ordinal = runtime::resolve_device(device);
  device::Device& dev = rt.device(ordinal);
  lazy::DeviceGraph& graph = rt.graph(ordinal);
  std::lock_guard<std::mutex> lock(graph.mu);
  const std::vector<std::shared_ptr<lazy::TensorImpl>> tensors = graph.pending_tensors();
  const std::vector<ir::Value> roots = graph.roots_of(tensors);
  if (roots.empty()) return;
  struct Abandoned {
    ir::OpKind op;
    ir::CollectiveAttrs attrs;
  };
  std::vector<Abandoned> collectives;
  {
    // In post-order, a token chain's collectives come in the chain's order.
    const ir::PostOrder walk = ir::post_order(roots);
    for (const ir::Node* node : walk.nodes) {
      if (ir::op_group(node->op()) == ir::OpGroup::kCollective) {
        collectives.push_back({node->op(), ir::decode_collective(node->attrs())});
      }
    }
  }
  const device::Failure dropped{
      ErrorCode::kExecution,
      str_cat("the value of this tensor was dropped with drop_pending_graph(", ordinal,
              ") before it was computed")};
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
    dev.worker().submit([collectives = std::move(collectives), &dev] {
      for (const Abandoned& c : collectives) {
        dev.communicator().abandon(c.op, c.attrs, dev.ordinal(),
                                   "its pending graph was dropped (drop_pending_graph)");
      }
    });
  }
  graph.cut(tensors, failed);
}

std::string dump_pending_graph(int device) {
  runtime::Runtime& rt = runtime::get();
  const int ordinal = runtime::resolve_device(device);
  lazy::DeviceGraph& graph = rt.graph(ordinal);
  std::lock_guard<std::mutex> lock(graph.mu);
  return ir::dump(ir::post_order(graph.roots_of(graph.pending_tensors())));
}

std::string dump_graph(const std::vector<Tensor>& tensors) {
  std::vector<const Tensor*> inputs;
  for (const Tensor& t : tensors) inputs.push_back(&t);
  ORDO_ARG_CHECK(!inputs.empty(), "dump_graph: no tensors given");
  const int device = lazy::common_device("dump_graph", inputs);
  lazy::DeviceGraph& graph = runtime::get().graph(device);
  std::lock_guard<std::mutex> lock(graph.mu);
  std::vector<ir::Value> roots;
  for (const Tensor* t : inputs) roots.push_back(lazy::value_of(*t->impl()));
  return ir::dump(ir::post_order(roots));
}

CompileCacheStats compile_cache_stats() { return executor::compile_cache().stats(); }

void reset_compile_cache(int64_t capacity) { executor::compile_cache().reset(capacity); }

void set_schedule(int device, ScheduleOptions options) {
  runtime::Runtime& rt = runtime::get();
  rt.check_device(device);
  lazy::DeviceGraph& graph = rt.graph(device);
  std::lock_guard<std::mutex> lock(graph.mu);
  graph.schedule = options;
}

}  // namespace ordo
