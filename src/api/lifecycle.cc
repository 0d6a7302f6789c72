// ordo/runtime.h: starting and stopping the layers, and the devices of
// this process. Graph cuts are in steps.cc, spawn in spawn.cc.
#include "lazy/graph_table.h"
#include "ordo/runtime.h"
#include "runtime/runtime.h"

namespace ordo {

void init(int num_devices) { runtime::start(num_devices); }

void shutdown() { lazy::stop_graphs_and_runtime(); }

bool is_initialized() { return runtime::is_running(); }

int num_devices() { return runtime::get().num_devices(); }

int world_size() { return runtime::get().topology().world_size(); }

int get_ordinal(int device) { return runtime::get().global_ordinal(runtime::resolve_device(device)); }

int get_local_ordinal(int device) {
  runtime::Runtime& rt = runtime::get();
  return rt.topology().host_ordinal(rt.global_ordinal(runtime::resolve_device(device)));
}

int current_device() { return runtime::thread_device(); }

void set_current_device(int device) {
  runtime::get().check_device(device);
  runtime::set_thread_device(device);
}

DeviceGuard::DeviceGuard(int device) : previous_(current_device()) { set_current_device(device); }

DeviceGuard::~DeviceGuard() { runtime::set_thread_device(previous_); }

}  // namespace ordo
