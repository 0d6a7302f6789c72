// Where a device's threads run. Workers are pinned round-robin to the CPUs
// the process may use, as MPI binds ranks to cores, so that the peers of a
// collective spin on different CPUs instead of taking turns on one. A thread
// that drives a device (spawn's) is placed next to that worker when the
// CPUs are shared anyway, and on a CPU of its own when there are enough.
//
// The processes of one MPI job on a host share its CPUs: a device is placed
// by its position among the host's devices (its host ordinal), so that
// they do not pin to the same CPUs.
//
// ORDO_CPU_BIND=none turns all pinning off: for hosts shared with other
// jobs or with ordo processes of another job (each would pin device d to
// the same CPU), and for device threads that start thread pools of their
// own (a pinned thread's children inherit its CPU). Unset, a runtime pins
// unless its process drives several devices from threads that hand the
// GIL to each other in every op, as PyTorch's Python bindings do (ordo's
// own release it only to wait): a torch_xla data-parallel step on 4
// devices of 2 CPUs took 2.5-3.8 ms pinned and 1.6-2.7 ms not, on 2
// devices 1.2-1.5 and 0.9-1.3 ms; ordo's own API's step was the same
// either way (BENCHMARKS.md, #36).
#pragma once

#include <optional>
#include <vector>

namespace ordo::device {

// Whether a runtime pins threads: `setting` (ORDO_CPU_BIND: cores, none)
// when made; unset, yes unless drivers_hand_off_gil and local_devices > 1.
bool binds_cpus(std::optional<bool> setting, bool drivers_hand_off_gil, int local_devices);
// Says whether this process's driving threads hand the GIL to each other in
// every op (ordo._torch says so when it loads); a runtime that starts
// later reads it.
void set_drivers_hand_off_gil(bool hand_off);
// Fixes whether ordo pins threads, for the runtime that starts now with
// that many local devices (runtime.cc, before any worker starts).
void decide_cpu_binding(int local_devices);
// What the last decide_cpu_binding fixed; before any runtime, ORDO_CPU_BIND
// unset or "cores" (yes), "none" (no).
bool cpu_binding_enabled();
// The CPUs this process was allowed when placement was first asked for.
int usable_cpu_count();

// The CPU (an index into those CPUs, wrapping around) of a device's
// worker, and of the thread that drives it, by the device's host ordinal;
// num_devices is the host's devices.
int worker_cpu(int host_ordinal);
int driver_cpu(int host_ordinal, int num_devices, int cpus);

// Pins the calling thread to that CPU (to any of those CPUs); does nothing
// when binding is off, the process has a single CPU, or affinity cannot be
// read or set.
void pin_current_thread(int cpu);
void pin_current_thread(const std::vector<int>& cpus);
// The CPU (an index into this process's CPUs) the calling thread runs on
// now, or -1.
int current_cpu();
// Whether the calling thread can run only on the CPU that
// pin_current_thread(cpu) picks (pinned there alone, or the process has a
// single CPU): a worker pinned to `cpu` and this thread take turns on it.
bool takes_turns_with(int cpu);

}  // namespace ordo::device
