#include "device/device.h"

#include <utility>

namespace ordo::device {

void Device::record_failure(const Failure& failure) {
  std::lock_guard<std::mutex> lock(error_mu_);
  if (!failed_graph_) failed_graph_ = failure;
}

std::optional<Failure> Device::take_failure() {
  std::lock_guard<std::mutex> lock(error_mu_);
  return std::exchange(failed_graph_, std::nullopt);
}

}  // namespace ordo::device
