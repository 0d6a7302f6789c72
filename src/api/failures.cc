// ordo/collectives.h, failure handling: news of devices for the
// communicator. Each mark that must come after what a device queued (what
// it queued, it will join) travels through the device's worker.
#include "ordo/collectives.h"
#include "runtime/runtime.h"

namespace ordo {

void mark_device_failed(int device, const std::string& reason) {
  runtime::Runtime& rt = runtime::get();
  rt.check_device(device);
  rt.communicator().mark_device_failed(rt.global_ordinal(device), reason);
}

void mark_device_absent(int device, const std::string& reason) {
  runtime::Runtime& rt = runtime::get();
  rt.check_device(device);
  // A clear_device_absent before the mark takes effect cancels it.
  const int ordinal = rt.global_ordinal(device);
  const uint64_t epoch = rt.communicator().absence_epoch(ordinal);
  rt.tell_after_queue(device, [ordinal, reason, epoch](comm::Communicator& communicator) {
    communicator.mark_device_absent(ordinal, reason, epoch);
  });
}

void clear_device_absent(int device) {
  runtime::Runtime& rt = runtime::get();
  rt.check_device(device);
  rt.communicator().clear_device_absent(rt.global_ordinal(device));
}

void interrupt_device(int device, const std::string& reason) {
  runtime::Runtime& rt = runtime::get();
  rt.check_device(device);
  // Ends after the device's queue as of now: later graphs wait as usual.
  const int ordinal = rt.global_ordinal(device);
  const uint64_t id = rt.communicator().interrupt(ordinal, reason);
  rt.tell_after_queue(device, [ordinal, id](comm::Communicator& communicator) {
    communicator.end_interrupt(ordinal, id);
  });
}

}  // namespace ordo
