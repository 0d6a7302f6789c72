// The runtime: local devices, their workers, graph cuts and the compile cache.
//
//   ordo::init(4);                       // or ORDO_NUM_DEVICES=4, default 4
//   ordo::DeviceGuard on(2);             // this thread now traces on device 2
//   ordo::Tensor x = ordo::ones({8}) * 3.0;
//   ordo::mark_step();                   // submit device 2's graph, don't wait
//   ordo::wait_device_ops();             // wait for every device's queue
//   ordo::compile_cache_stats().hits;    // graphs reused instead of compiled
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ordo/tensor.h"

namespace ordo {

// Starts the runtime with num_devices local devices. Optional: the first use
// starts it with ORDO_NUM_DEVICES (default 4). Calling it again with another
// count needs shutdown() first. Every start reads the ORDO_* variables
// (README: the table) and throws InvalidArgument naming a bad one and its
// value, starting nothing.
void init(int num_devices);
// Waits for every device's queue, stops the workers and resets all state.
// Tensors of the old runtime can no longer be read or traced. A thread that
// spawn started may not call it (InvalidArgument): its peers would go on
// in a runtime with devices nobody drives.
void shutdown();
bool is_initialized();

// The devices of this process, named 0 .. num_devices()-1 wherever a
// device is asked for (DeviceGuard, mark_step, Python's ordo:N).
int num_devices();
// Every device of the job (of every process); collectives, replica groups
// and messages name devices by their global ordinal in it.
int world_size();
// The global ordinal of this process's device (-1: the calling thread's
// current device), as torch_xla's get_ordinal().
int get_ordinal(int device = -1);
// The device's position among the devices of its host, as torch_xla's
// get_local_ordinal(): with one process, its index.
int get_local_ordinal(int device = -1);
// Each thread has a current device (0 until set) used by ops that create
// tensors and by mark_step() without an argument.
int current_device();
void set_current_device(int device);
// Whether threads of a spawn (below) run in this process: the torch_xla
// front end's replicas are a spawn's, and its calls from threads that
// serve them (autograd's) must see the spawn's world too.
bool spawn_running();

class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_;
};

// Runs fn(ordinal) on a thread per device, for this process's devices
// 0..count-1 (count < 0: every device), where ordinal is the device's global
// ordinal (get_ordinal(device): the device itself with one process, as
// torch_xla's xmp.spawn gives it), each thread with its device current and
// bound to it (see bind_thread_to_device); returns when every call has
// returned and, when it spawned every device, the devices ran what the
// calls queued. Like
// torch_xla's xmp.spawn, with threads for processes. With fewer threads than
// devices, collectives over every device wait for the missing ones (and time
// out): use replica groups of the spawned devices.
//
// A call that returns leaves its device absent until spawn returns
// (mark_device_absent): a peer waiting for a collective the device never
// queued fails at once, naming it, instead of timing out.
//
// A call that throws marks its device failed, so that peers waiting for it
// in a collective fail at once instead of timing out; once every thread has
// finished, spawn rethrows the first exception thrown (a thread ended by
// pthread_exit or cancellation counts as ExecutionError). The device stays
// failed until shutdown() or, in one process, until the next spawn, which
// starts clean: it forgets what failures left (failed devices, groups and
// rendezvous out of step, a collective a failed call traced and never ran),
// unless a thread of an earlier spawn still runs or a device it leaves out
// has work queued or a collective traced (api/spawned_devices.h). Under
// MPI it cannot, and throws CollectiveError before it starts, saying what
// failed: shutdown() and init() in every process start again.
// If a thread cannot be started, the devices without one are marked failed
// and spawn rethrows that error (std::system_error) once the others finish.
void spawn(const std::function<void(int)>& fn, int count = -1);
// Pins the calling thread as the driver of `device` (-1: its current
// device), as MPI binds a rank to a core: on the CPU of the device's worker
// when the devices share the CPUs (then submitting a graph and waiting for it
// never wakes another CPU), on a CPU of its own when there are two per
// device. Binding lasts for the thread's life, and threads it starts inherit
// it. ORDO_CPU_BIND=none turns off this and the pinning of workers, as
// set_drivers_hand_off_gil does by default.
void bind_thread_to_device(int device);
// Says that the threads driving this process's devices hand Python's GIL to
// each other in every op, as PyTorch's bindings do (ordo._torch says so
// when it loads). With ORDO_CPU_BIND unset, a runtime started after this
// with several local devices pins no thread: pinned, a torch_xla step on
// 4 devices of 2 CPUs took 1.4 times as long (src/device/cpu_placement.h).
void set_drivers_hand_off_gil(bool hand_off);

// Every `int device = -1` argument: -1 is the calling thread's device, and
// any other that does not exist throws InvalidArgument.
//
// Cuts the device's graph: every live pending tensor of the device is
// materialized by one compiled graph, submitted to the device's worker.
// Returns once submitted and the device is at most max_steps_ahead() steps
// behind (it runs the oldest itself meanwhile, as wait_device_ops does), so
// that memory stays bounded whatever the program reads, and a failed step
// surfaces within that many steps. Throws the error of an earlier failed
// graph of this device first (once), leaving the pending graph untouched.
void mark_step(int device = -1);
// How many submitted steps a device may have queued or running when
// mark_step returns: ORDO_MAX_STEPS_AHEAD, default 2 (torch_xla keeps one
// execution in flight), until set here; 0 makes mark_step synchronous.
// Negative is an InvalidArgument.
void set_max_steps_ahead(int steps);
int max_steps_ahead();
// mark_step(device), then wait_device_ops(device) (torch_xla's
// mark_step(wait=True)): the graph runs on the calling thread while the
// worker thread runs nothing, without waking that thread first.
void mark_step_and_wait(int device = -1);
// Drops the device's pending graph instead of running it (torch_xla's
// _clear_pending_irs): every live pending tensor of the device loses its
// value (an in-place update not yet run included), so reading it raises
// ExecutionError saying it was dropped, and so does tracing an op on it;
// tensors that hold data keep it. The device's cc token slot is reset, and
// the graph's collectives are abandoned in their chain's order, after
// everything submitted so far: peers that run them fail at once, naming
// this device, instead of timing out, and later collectives stay aligned
// (with token edges on: without them, a collective nobody kept a result of
// is in no graph, dropped or cut).
void drop_pending_graph(int device = -1);
// Waits until the device's worker has run everything submitted so far.
// While its worker thread runs nothing, the waiting thread runs the queued
// graphs itself (reading a tensor does the same for the graphs before it):
// it would only sleep meanwhile, and handing a step over to another thread
// and back costs more than a small step.
void wait_device_ops(int device);
void wait_device_ops();  // every device

// The text of the graph that mark_step(device) would compile now.
std::string dump_pending_graph(int device = -1);
// The text of the graph that computes the given tensors.
std::string dump_graph(const std::vector<Tensor>& tensors);

struct CompileCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t entries = 0;
  int64_t capacity = 0;
};
CompileCacheStats compile_cache_stats();
// Drops every cached plan and resets the counters; capacity >= 1.
void reset_compile_cache(int64_t capacity = 1024);

enum class ScheduleMode { kDefault, kRandom };
struct ScheduleOptions {
  ScheduleMode mode = ScheduleMode::kDefault;
  uint64_t seed = 0;  // kRandom: the seed of every choice among ready nodes
  // Runs of elementwise ops of one shape, next to each other in the order,
  // run as one step, tile by tile. Results are bitwise the same either way.
  bool fuse_elementwise = true;
};
// How the device's future graphs are ordered and compiled. Plans are cached
// per (graph, options), so changing them compiles anew.
void set_schedule(int device, ScheduleOptions options);

}  // namespace ordo
