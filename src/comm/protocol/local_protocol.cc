#include "comm/protocol/local_protocol.h"

namespace ordo::comm {

uint64_t LocalProtocol::tell(const DeviceEvent& event) {
  switch (event.kind) {
    case DeviceEvent::Kind::kFailed:
    case DeviceEvent::Kind::kShutDown:
      status_.mark_gone(event.device, Gone::kFailed, event.reason);
      break;
    case DeviceEvent::Kind::kAbsent:
      status_.mark_absent(event.device, event.reason, event.number);
      break;
    case DeviceEvent::Kind::kPresent:
      status_.clear_absent(event.device);
      return 0;  // nobody waits for a device to come back
    case DeviceEvent::Kind::kInterrupted: {
      const uint64_t id = status_.interrupt(event.device, event.reason);
      groups_.wake();
      exchange_.interrupt(event.device, event.reason);
      return id;
    }
    case DeviceEvent::Kind::kResumed:
      status_.end_interrupt(event.device, event.number);
      return 0;
  }
  groups_.wake();
  exchange_.wake();
  return 0;
}

void LocalProtocol::start_afresh(int world_size) {
  for (int ordinal = 0; ordinal < world_size; ++ordinal) status_.forget(GlobalOrdinal(ordinal));
  groups_.start_afresh();
  exchange_.start_afresh();
}

}  // namespace ordo::comm
