// Cutting a device's graph: collect the live pending tensors → post-order →
// graph hash → cached plan or compile → submit to the device's worker. The
// tensors then hold the plan's future results.
#pragma once

#include <memory>

#include "device/device_data.h"
#include "lazy/tensor_impl.h"

namespace ordo::executor {

// mark_step's work. With raise_failure, first throws (and clears) the
// failure of an earlier graph of the device, changing nothing else.
void sync_device(int device, bool raise_failure);

// The tensor's value once computed: cuts its device's graph first if it is
// pending, and runs the device's queued graphs on this thread while its
// worker thread runs none (see worker.h). Rethrows the failure of the graph
// that computed it.
std::shared_ptr<const device::Buffer> wait_for_value(const lazy::TensorImpl& tensor);

}  // namespace ordo::executor
