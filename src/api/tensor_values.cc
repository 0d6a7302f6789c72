// ordo/tensor.h, reading a tensor's value: cut its device's graph if it is
// pending, then wait for the worker (helping it).
#include <cstring>

#include "core/interrupt.h"
#include "executor/debug_analysis.h"
#include "executor/graph_executor.h"
#include "lazy/graph_table.h"
#include "core/metrics.h"
#include "lazy/trace.h"

namespace ordo {
namespace {

// The tensor's data, cutting its device's graph first if it is pending.
std::shared_ptr<device::DeviceData> materialize(const lazy::TensorImpl& tensor, lazy::DeviceGraph& graph) {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(graph.mu);
      if (!tensor.is_pending()) return tensor.data;
    }
    // The reader helps the worker at once (wait_for_value).
    executor::sync_device(tensor.device, /*raise_failure=*/false, device::Worker::RunBy::kCaller);
  }
}

// The tensor's value once computed: runs the device's queued graphs on this
// thread while its worker thread runs none (see worker.h). Rethrows the
// failure of the graph that computed it.
std::shared_ptr<const device::Buffer> wait_for_value(const lazy::TensorImpl& tensor) {
  // Found before the cut: looked up after it, a runtime shut down meanwhile
  // by another thread would be started afresh here.
  lazy::GraphTable& graphs = lazy::graphs();
  device::Worker& worker = graphs.runtime().device(tensor.device).worker();
  const std::shared_ptr<device::DeviceData> data = materialize(tensor, graphs.graph(tensor.device));
  if (!data->is_done()) worker.help_until([&data] { return data->is_done(); });
  // An interruptible waiter (core/interrupt.h) wakes now and then to look
  // at its check; the worker thread runs what it left.
  while (has_interrupt_check() && !data->is_done()) {
    if (poll_interrupt()) {
      throw_interrupted(str_cat("reading a value of device ", graphs.runtime().ordinal_of(tensor.device)));
    }
    data->wait_until(interrupt_poll_deadline(std::chrono::steady_clock::time_point::max()));
  }
  return data->wait();
}

}  // namespace

void Tensor::copy_to_host(void* dst, size_t nbytes) const {
  const Tensor* self = this;
  lazy::common_device("copy_to_host", {&self, 1});
  const size_t expected = static_cast<size_t>(numel()) * dtype_size(dtype());
  ORDO_ARG_CHECK(nbytes == expected, "copy_to_host: the tensor has ", expected, " bytes, the destination ",
                 nbytes);
  const std::shared_ptr<const device::Buffer> buffer = wait_for_value(*impl_);
  const LocalDevice local = impl_->device;
  if (executor::debug_enabled()) {
    executor::note_transfer_from_device(local, lazy::graphs().runtime().ordinal_of(local));
  }
  // Once the value is there: the wait for the graph is ExecuteTime's.
  metrics::ScopedTimer timer(metrics::Metric::kTransferFromDeviceTime, local.index());
  if (nbytes != 0) std::memcpy(dst, buffer->storage.get(), nbytes);
}

}  // namespace ordo
