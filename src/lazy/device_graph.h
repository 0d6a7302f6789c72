// The pending graph of one device: the live tensors whose values are still IR.
//
// Locking: mu guards schedule, cc_token, cuts, the IR state of every
// TensorImpl of this device and the walk scratch of its nodes; it is held
// around every use of pending_list (which has its own leaf lock as well, for
// tensors that die).
// Tracing a collective reads cc_token, builds the node and stores its token
// output under one hold of mu, so two threads never fork the chain. Take at most
// one device's mu at a time; never wait for a worker while holding it.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "lazy/pending_list.h"
#include "lazy/tensor_impl.h"
#include "ordo/runtime.h"

namespace ordo::lazy {

// Cache-line aligned: each device is traced by its own thread, and two graphs
// sharing a line made every lock of one miss in the other's cache (tracing
// two devices at once took 0.53 instead of 0.33 us per collective).
struct alignas(64) DeviceGraph {
  explicit DeviceGraph(LocalDevice device) : pending_list(PendingList::for_device(device)) {}
  // Detaches the tensors still listed: they may outlive the runtime.
  ~DeviceGraph() { pending_list.clear(); }
  DeviceGraph(const DeviceGraph&) = delete;
  DeviceGraph& operator=(const DeviceGraph&) = delete;

  std::mutex mu;
  // The tensors that became pending since the last cut.
  PendingList& pending_list;
  ScheduleOptions schedule;
  // The token the next collective takes: the last collective's token output,
  // or empty for a fresh one. Reset when the graph is cut.
  ir::Value cc_token;
  uint64_t cuts = 0;  // graph cuts so far: a CcToken from an earlier cut is stale

  // Adds a tensor that just became pending (mu held).
  void register_pending(TensorImpl& tensor) { pending_list.add(tensor); }
  // The live pending tensors, in registration order (mu held).
  std::vector<std::shared_ptr<TensorImpl>> pending_tensors() { return pending_list.pending(); }
  // What a graph cut computes: the values of tensors, then the cc token if
  // it is pending, so that a collective whose results nobody kept still
  // runs (its peers wait for it) (mu held).
  std::vector<ir::Value> roots_of(const std::vector<std::shared_ptr<TensorImpl>>& tensors) const;
  // Ends the pending graph (mu held): tensors (as pending_tensors gave
  // them) hold data from now on, in order (data may go on with the token
  // root's); the list is empty, the token slot fresh, and the cut counted,
  // so that a CcToken read before is stale.
  void cut(std::span<const std::shared_ptr<TensorImpl>> tensors,
           std::span<const std::shared_ptr<device::DeviceData>> data);
};

}  // namespace ordo::lazy
