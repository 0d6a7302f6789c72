// Where a device's threads run. Workers are pinned round-robin to the CPUs
// the process may use, as MPI binds ranks to cores, so that the peers of a
// collective spin on different CPUs instead of taking turns on one. A thread
// that drives a device (spawn's) is placed next to that worker when the
// CPUs are shared anyway, and on a CPU of its own when there are enough.
#pragma once

namespace ordo::device {

// The CPU (an index into the CPUs this process was allowed at first use)
// of device `ordinal`'s worker, and of the thread that drives it.
int worker_cpu(int ordinal);
int driver_cpu(int ordinal, int num_devices);
// Pins the calling thread to that CPU; does nothing where the process has
// a single CPU or affinity cannot be read or set.
void pin_current_thread(int cpu);

}  // namespace ordo::device
