// Cutting a device's graph: collect the live pending tensors → post-order →
// graph hash → cached plan or compile → submit to the device's worker. The
// tensors then hold the plan's future results.
//
// Locking: holds the device's graph mutex throughout; takes the compile
// cache's mutex (lookup, insert) and the worker's (submit) under it, one
// at a time (see docs/DESIGN.md, "Locking order across layers").
#pragma once

#include "core/device_numbers.h"
#include "device/worker.h"

namespace ordo::executor {

// mark_step's work. With raise_failure, first throws (and clears) the
// failure of an earlier graph of the device, changing nothing else. The
// graph goes to the device's worker to be run by run_by (worker.h).
void sync_device(LocalDevice device, bool raise_failure,
                 device::Worker::RunBy run_by = device::Worker::RunBy::kWorkerThread);

}  // namespace ordo::executor
