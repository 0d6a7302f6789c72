#include "device/device.h"

#include <utility>

namespace ordo::device {

void Device::record_failure(const std::string& message) {
  std::lock_guard<std::mutex> lock(error_mu_);
  if (failed_graph_error_.empty()) failed_graph_error_ = message;
}

std::string Device::take_failure() {
  std::lock_guard<std::mutex> lock(error_mu_);
  return std::exchange(failed_graph_error_, {});
}

}  // namespace ordo::device
