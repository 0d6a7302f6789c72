// The pending graphs of the running runtime: one DeviceGraph per device of
// this process, by the device's index in the process.
//
//   lazy::GraphTable& graphs = lazy::graphs();  // starts the runtime if needed
//   std::lock_guard<std::mutex> lock(graphs.graph(index).mu);
//
// Lifetime: a table belongs to one runtime (its generation). The first
// lazy use of a runtime makes its table; ordo::shutdown (api/lifecycle.cc)
// releases it, stops the runtime, then frees it. A forked child forgets
// its parent's table, as it forgets its runtime.
//
// Locking: a table mutex serializes making and releasing tables; making one
// may start the runtime, so it is taken before the runtime's lifecycle
// mutex, never after. Tracing finds the table lock-free (one acquire load),
// as it found the runtime before.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "lazy/device_graph.h"
#include "runtime/runtime.h"

namespace ordo::lazy {

class GraphTable {
 public:
  explicit GraphTable(runtime::Runtime& runtime);
  GraphTable(const GraphTable&) = delete;
  GraphTable& operator=(const GraphTable&) = delete;

  runtime::Runtime& runtime() const { return runtime_; }
  // The runtime's generation, which every tensor traced here carries.
  uint64_t generation() const { return runtime_.generation(); }
  DeviceGraph& graph(LocalDevice device) { return *graphs_[device.slot()]; }

 private:
  runtime::Runtime& runtime_;
  std::vector<std::unique_ptr<DeviceGraph>> graphs_;
};

// The running runtime's table, made on first use (starting the runtime from
// ORDO_NUM_DEVICES if none runs).
GraphTable& graphs();
// ordo::shutdown: no table is current from now on, the runtime stops
// (runtime::stop) before another table can be made, and the released
// table is freed after that: its graphs outlive the workers, as they did
// when the runtime held them.
void stop_graphs_and_runtime();

}  // namespace ordo::lazy
