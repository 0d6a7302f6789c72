#include "comm/in_process/in_process_communicator.h"

namespace ordo::comm {

bool InProcessCommunicator::out_of_step() {
  return local_.status().any_gone() || local_.status().any_interrupted() || local_.had_failures();
}

std::optional<std::string> InProcessCommunicator::start_afresh(const std::function<void()>& prepare) {
  prepare();
  local_.start_afresh(world_size_);
  return std::nullopt;
}

}  // namespace ordo::comm
