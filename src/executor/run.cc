#include "executor/run.h"

#include <algorithm>
#include <new>

#include "comm/communicator.h"
#include "core/check.h"
#include "core/metrics.h"
#include "core/steady_clock.h"
#include "core/trace_events.h"
#include "ordo/error.h"

namespace ordo::executor {
namespace {

using Slots = std::vector<std::shared_ptr<const device::Buffer>>;

device::Failure step_failure(const ExecutionPlan& plan, const PlanStep& step, GlobalOrdinal ordinal,
                             ErrorCode code, const char* what) {
  const std::string op = step.fused ? str_cat(step.fused->code.size(), " fused elementwise ops")
                                    : std::string(ir::op_name(step.op));
  const std::string nodes = step.fused ? str_cat("first ", ir::op_name(step.op), " node %", step.node,
                                                 ", last node %", step.last_node)
                                       : str_cat("node %", step.node);
  return {code, str_cat(op, " (", nodes, " of graph ", std::hex, plan.graph_hash, std::dec,
                        ") failed on device ", ordinal, ": ", what)};
}

// A collective kind's counters: its count and its bytes.
struct CollectiveCounters {
  metrics::Counter count;
  metrics::Counter bytes;
};

CollectiveCounters collective_counters(ir::OpKind op) {
  using metrics::Counter;
  switch (op) {
    case ir::OpKind::kAllReduce: return {Counter::kAllReduce, Counter::kAllReduceBytes};
    case ir::OpKind::kAllGather: return {Counter::kAllGather, Counter::kAllGatherBytes};
    case ir::OpKind::kReduceScatter: return {Counter::kReduceScatter, Counter::kReduceScatterBytes};
    case ir::OpKind::kAllToAll: return {Counter::kAllToAll, Counter::kAllToAllBytes};
    case ir::OpKind::kCollectivePermute: return {Counter::kCollectivePermute, Counter::kCollectivePermuteBytes};
    default: return {Counter::kCollectiveBroadcast, Counter::kCollectiveBroadcastBytes};
  }
}

// The collective's event on the device's row, from the device's arrival to
// `end_ns`, with the part of it it waited for its peers (written as an
// event inside it).
void trace_collective(ir::OpKind op, const comm::CollectiveTiming& timing, int64_t end_ns, int64_t bytes,
                      const device::Device& device) {
  trace_events::Event event{ir::op_name(op), "collective", timing.arrived_ns, end_ns - timing.arrived_ns,
                            device.ordinal().value()};
  event.bytes = bytes;
  event.wait_from_ns = timing.arrived_ns;
  event.wait_ns = timing.all_arrived_ns - timing.arrived_ns;
  event.last_device = timing.last_device.value();
  trace_events::record(device.local().index(), event);
}

// A collective step, counted and timed: from the device's arrival (the
// backend's clock reading, so that a collective reads the clock twice: its
// arrival and its end) to its end, with its wait for the peers and who
// came last.
void run_collective_step(const PlanStep& step, std::span<const device::Buffer* const> inputs,
                         std::span<std::shared_ptr<const device::Buffer>> outputs, device::Device& device) {
  const int index = device.local().index();  // metrics are by local device
  comm::CollectiveTiming timing;
  step.kernel({step.attrs, step.output_types, inputs, outputs, device.ordinal(), device.communicator(),
               &*step.collective, &timing});
  const int64_t end_ns = steady_now_ns();
  // A backend stamps every collective that succeeds; the last arrival may
  // lie outside [arrival, end] by as much as two hosts' clocks disagree.
  ORDO_CHECK(timing.arrived_ns != 0, ": the communicator did not stamp the collective's arrival");
  timing.arrived_ns = std::min(timing.arrived_ns, end_ns);
  timing.all_arrived_ns = std::clamp(timing.all_arrived_ns, timing.arrived_ns, end_ns);
  if (timing.last_device == device.ordinal()) metrics::add(metrics::Counter::kCollectiveLastArrival, index);
  int64_t bytes = 0;
  for (const ir::ValueType& type : step.output_types) {
    if (!type.is_token) bytes += shape_numel(type.shape) * static_cast<int64_t>(dtype_size(type.dtype));
  }
  const CollectiveCounters counters = collective_counters(step.op);
  metrics::add(counters.count, index);
  metrics::add(counters.bytes, index, bytes);
  metrics::record_all({{metrics::Metric::kCollectiveTime, static_cast<double>(end_ns - timing.arrived_ns)},
                       {metrics::Metric::kCollectiveWaitTime,
                        static_cast<double>(timing.all_arrived_ns - timing.arrived_ns)},
                       {metrics::Metric::kCollectiveBytes, static_cast<double>(bytes)}},
                      index, end_ns);
  if (trace_events::on()) trace_collective(step.op, timing, end_ns, bytes, device);
}

// Whether p holds the only reference to its object, which this thread may
// then overwrite. A thread that read the object and then dropped its
// reference must have finished reading first: the count's load is relaxed,
// but the copy's increment is an acquire-release change of it (libstdc++),
// which orders this thread after that drop.
template <typename T>
bool sole_owner(const std::shared_ptr<T>& p) {
  if (p.use_count() != 1) return false;
  const std::shared_ptr<T> ordered = p;
  return true;
}

// Hands each output of a fused step the first input it may be written over
// (PlanStep::reuses) that nothing outside this run holds, not even through
// a view, and that no other output took.
void donate_dying_inputs(const PlanStep& step, Slots& slots,
                         std::span<std::shared_ptr<const device::Buffer>> outputs, LocalDevice device) {
  for (const kernels::FusedReuse& reuse : step.reuses) {
    std::shared_ptr<const device::Buffer>& input = slots[step.input_slots[reuse.input]];
    if (outputs[reuse.output] || !input || !sole_owner(input) || !sole_owner(input->storage)) continue;
    outputs[reuse.output] = std::move(input);
    metrics::add(metrics::Counter::kDonatedBuffer, device.index());
  }
}

// Runs the steps; returns the index of the step that failed (setting
// failure), or the number of steps.
size_t run_steps(const ExecutionPlan& plan, Slots& slots, device::Device& device,
                 std::optional<device::Failure>& failure) {
  const GlobalOrdinal ordinal = device.ordinal();
  std::vector<const device::Buffer*> inputs;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep& step = plan.steps[s];
    inputs.clear();
    for (int32_t slot : step.input_slots) inputs.push_back(slots[slot].get());
    std::span<std::shared_ptr<const device::Buffer>> outputs(&slots[step.first_output_slot],
                                                              step.output_types.size());
    try {
      if (step.fused) {
        donate_dying_inputs(step, slots, outputs, device.local());
        kernels::run_fused(*step.fused, inputs, step.output_types, outputs);
      } else if (step.collective) {
        run_collective_step(step, inputs, outputs, device);
      } else {
        step.kernel({step.attrs, step.output_types, inputs, outputs, ordinal, device.communicator(), nullptr});
      }
    } catch (const Error& e) {
      failure = step_failure(plan, step, ordinal, e.code(), e.what());
      return s;
    } catch (const std::bad_alloc&) {
      // A failed output buffer says how large it was (OutOfMemoryError above).
      failure = step_failure(plan, step, ordinal, ErrorCode::kOutOfMemory,
                             "out of memory: the kernel could not allocate its working space");
      return s;
    } catch (const std::exception& e) {
      failure = step_failure(plan, step, ordinal, ErrorCode::kExecution, e.what());
      return s;
    }
    for (int32_t slot : step.release_slots) slots[slot].reset();
  }
  return plan.steps.size();
}

// The collectives this device will not reach still have peers waiting for
// them: tell the communicator, so that they fail now instead of timing out.
void abandon_collectives(const ExecutionPlan& plan, size_t first, device::Device& device,
                         const device::Failure& failure) {
  for (size_t s = first; s < plan.steps.size(); ++s) {
    const PlanStep& step = plan.steps[s];
    if (step.collective) {
      device.communicator().abandon(step.op, *step.collective, device.ordinal(),
                                    failure.message);
    }
  }
}

}  // namespace

void run_plan(const ExecutionPlan& plan, std::vector<std::shared_ptr<device::DeviceData>> parameters,
              const std::vector<std::shared_ptr<device::DeviceData>>& results,
              device::Device& device) {
  metrics::ScopedTimer timer(metrics::Metric::kExecuteTime, device.local().index());
  trace_events::ScopedEvent traced("execute", "execute", device.local().index(), device.ordinal().value(),
                                   trace_events::Lane::kDevice, plan.graph_hash);
  Slots slots(plan.num_slots);
  std::optional<device::Failure> failure;
  // Parameters come from host data or from earlier graphs of this worker, so
  // they are done by now; a failed one fails this graph too.
  for (size_t i = 0; i < parameters.size() && !failure; ++i) {
    try {
      slots[plan.parameter_slots[i]] = parameters[i]->wait();
      // A value no tensor holds any more lives on in its slot alone, which
      // lets a step write over it once it is dead.
      if (parameters[i].use_count() == 1) parameters[i].reset();
    } catch (const Error& e) {
      failure = device::Failure{
          e.code(), str_cat("an input of this graph came from a graph that failed: ", e.what())};
    }
  }
  size_t first_unreached = 0;
  if (!failure) {
    // A collective step that failed has already failed its rendezvous.
    first_unreached = run_steps(plan, slots, device, failure) + 1;
  }
  if (failure) {
    abandon_collectives(plan, first_unreached, device, *failure);
    // Recorded before any result fails: a reader woken by a failed result
    // may call mark_step at once, which must report the failure.
    device.record_failure(*failure);
    for (const auto& result : results) result->fail(*failure);
    return;
  }
  for (size_t i = 0; i < results.size(); ++i) results[i]->fulfil(slots[plan.result_slots[i]]);
}

}  // namespace ordo::executor
