// ordo/runtime.h: starting and stopping the layers, and the devices of
// this process. Graph cuts are in steps.cc, spawn in spawn.cc.
#include "api/spawned_devices.h"
#include "lazy/graph_table.h"
#include "ordo/error.h"
#include "ordo/runtime.h"
#include "runtime/runtime.h"

namespace ordo {

void init(int num_devices) { runtime::start(num_devices); }

namespace {

// A spawned thread that shut the runtime down would leave its peers to
// start another one whose devices nobody drives: they would wait for them
// until the timeout. Messages name the device by its global ordinal.
void refuse_in_a_spawned_thread(const char* call) {
  const int spawned = api::spawned_device_of_this_thread();
  if (spawned < 0) return;
  const bool known = runtime::is_running() && spawned < runtime::get().num_devices();
  ORDO_ARG_CHECK(false, call, ": called by the spawn function of ordinal ",
                 known ? runtime::get().ordinal_of(LocalDevice(spawned)).value() : spawned,
                 "; only the caller of spawn may do this, after spawn returned");
}

}  // namespace

void shutdown() {
  refuse_in_a_spawned_thread("shutdown");
  lazy::stop_graphs_and_runtime();
}

bool is_initialized() { return runtime::is_running(); }

int num_devices() { return runtime::get().num_devices(); }

int world_size() { return runtime::get().topology().world_size(); }

bool spawn_running() { return api::spawned_threads_running() > 0; }

int get_ordinal(int local_device) {
  return runtime::get().ordinal_of(runtime::resolve_device(local_device)).value();
}

int get_local_ordinal(int local_device) {
  runtime::Runtime& rt = runtime::get();
  return rt.topology().host_ordinal(rt.ordinal_of(runtime::resolve_device(local_device)));
}

int current_device() { return runtime::thread_device().index(); }

void set_current_device(int local_device) {
  runtime::set_thread_device(runtime::get().checked_device(local_device));
}

DeviceGuard::DeviceGuard(int device) : previous_(current_device()) { set_current_device(device); }

DeviceGuard::~DeviceGuard() { runtime::set_thread_device(LocalDevice(previous_)); }

}  // namespace ordo
