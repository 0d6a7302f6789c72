#include "lazy/device_graph.h"

namespace ordo::lazy {

std::vector<ir::Value> DeviceGraph::roots_of(
    const std::vector<std::shared_ptr<TensorImpl>>& tensors) const {
  std::vector<ir::Value> roots;
  roots.reserve(tensors.size() + 1);
  for (const auto& tensor : tensors) roots.push_back(tensor->value);
  if (cc_token.node) roots.push_back(cc_token);
  return roots;
}

}  // namespace ordo::lazy
