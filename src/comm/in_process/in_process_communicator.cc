#include "comm/in_process/in_process_communicator.h"

namespace ordo::comm {

InProcessCommunicator::InProcessCommunicator(int world_size)
    : world_size_(world_size),
      groups_(world_size, status_),
      exchange_(world_size, status_) {}

void InProcessCommunicator::mark_device_failed(GlobalOrdinal device, const std::string& reason) {
  status_.mark_gone(device, Gone::kFailed, reason);
  groups_.wake();
  exchange_.wake();
}

void InProcessCommunicator::mark_device_absent(GlobalOrdinal device, const std::string& reason, uint64_t epoch) {
  status_.mark_absent(device, reason, epoch);
  groups_.wake();
  exchange_.wake();
}

uint64_t InProcessCommunicator::interrupt(GlobalOrdinal device, const std::string& reason) {
  const uint64_t id = status_.interrupt(device, reason);
  groups_.wake();
  exchange_.interrupt(device, reason);
  return id;
}

bool InProcessCommunicator::out_of_step() {
  return status_.any_gone() || status_.any_interrupted() || groups_.had_failures() || exchange_.unsettled();
}

std::optional<std::string> InProcessCommunicator::start_afresh(const std::function<void()>& prepare) {
  prepare();
  for (int ordinal = 0; ordinal < world_size_; ++ordinal) status_.forget(GlobalOrdinal(ordinal));
  groups_.start_afresh();
  exchange_.start_afresh();
  return std::nullopt;
}

}  // namespace ordo::comm
