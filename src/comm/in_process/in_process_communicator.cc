#include "comm/in_process/in_process_communicator.h"

namespace ordo::comm {

InProcessCommunicator::InProcessCommunicator(int world_size)
    : world_size_(world_size),
      groups_(world_size, status_),
      exchange_(world_size, status_) {}

void InProcessCommunicator::mark_device_failed(int device, const std::string& reason) {
  status_.mark_gone(device, Gone::kFailed, reason);
  groups_.wake();
  exchange_.wake();
}

void InProcessCommunicator::mark_device_absent(int device, const std::string& reason, uint64_t epoch) {
  status_.mark_absent(device, reason, epoch);
  groups_.wake();
  exchange_.wake();
}

uint64_t InProcessCommunicator::interrupt(int device, const std::string& reason) {
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
  for (int device = 0; device < world_size_; ++device) status_.forget(device);
  groups_.start_afresh();
  exchange_.start_afresh();
  return std::nullopt;
}

}  // namespace ordo::comm
