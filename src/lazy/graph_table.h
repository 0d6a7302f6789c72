// The pending graphs of the running runtime: one DeviceGraph per device of
// this process, by the device's index in the process.
//
//   lazy::GraphTable& graphs = lazy::graphs();  // starts the runtime if needed
//   std::lock_guard<std::mutex> lock(graphs.graph(index).mu);
//
// Lifetime: a table belongs to one runtime (its generation). The first
// lazy use of a runtime makes its table; ordo::shutdown releases it before
// the runtime stops, and frees it after the runtime's workers are joined
// (api/runtime.cc). A forked child forgets its parent's table, as it
// forgets its runtime.
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
  uint64_t generation() const { return generation_; }
  DeviceGraph& graph(int index) { return *graphs_[index]; }

 private:
  runtime::Runtime& runtime_;
  const uint64_t generation_;
  std::vector<std::unique_ptr<DeviceGraph>> graphs_;
};

// The running runtime's table, made on first use (starting the runtime from
// ORDO_NUM_DEVICES if none runs).
GraphTable& graphs();
// Shutdown's first step: no table is current from now on. The caller frees
// the returned one (null if none was made) once the runtime has stopped.
std::unique_ptr<GraphTable> release_graphs();

}  // namespace ordo::lazy
