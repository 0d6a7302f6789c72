// ordo/collectives.h, failure handling: news of devices for the
// communicator. Each mark that must come after what a device queued (what
// it queued, it will join) travels through the device's worker.
#include "ordo/collectives.h"
#include "runtime/runtime.h"

namespace ordo {

using Kind = comm::DeviceEvent::Kind;

void mark_device_failed(int local_device, const std::string& reason) {
  runtime::Runtime& rt = runtime::get();
  rt.communicator().tell({Kind::kFailed, rt.ordinal_of(rt.checked_device(local_device)), reason});
}

void mark_device_absent(int local_device, const std::string& reason) {
  runtime::Runtime& rt = runtime::get();
  const LocalDevice device = rt.checked_device(local_device);
  // A clear_device_absent before the mark takes effect cancels it.
  const GlobalOrdinal ordinal = rt.ordinal_of(device);
  const uint64_t epoch = rt.communicator().absence_epoch(ordinal);
  rt.tell_after_queue(device, [ordinal, reason, epoch](comm::Communicator& communicator) {
    communicator.tell({Kind::kAbsent, ordinal, reason, epoch});
  });
}

void clear_device_absent(int local_device) {
  runtime::Runtime& rt = runtime::get();
  rt.communicator().tell({Kind::kPresent, rt.ordinal_of(rt.checked_device(local_device)), ""});
}

void interrupt_device(int local_device, const std::string& reason) {
  runtime::Runtime& rt = runtime::get();
  const LocalDevice device = rt.checked_device(local_device);
  // Ends after the device's queue as of now: later graphs wait as usual.
  const GlobalOrdinal ordinal = rt.ordinal_of(device);
  const uint64_t id = rt.communicator().tell({Kind::kInterrupted, ordinal, reason});
  rt.tell_after_queue(device, [ordinal, id](comm::Communicator& communicator) {
    communicator.tell({Kind::kResumed, ordinal, "", id});
  });
}

}  // namespace ordo
