#include "lazy/device_graph.h"

#include "core/check.h"

namespace ordo::lazy {

std::vector<ir::Value> DeviceGraph::roots_of(
    const std::vector<std::shared_ptr<TensorImpl>>& tensors) const {
  std::vector<ir::Value> roots;
  roots.reserve(tensors.size() + 1);
  for (const auto& tensor : tensors) roots.push_back(tensor->value);
  if (cc_token.node) roots.push_back(cc_token);
  return roots;
}

void DeviceGraph::cut(std::span<const std::shared_ptr<TensorImpl>> tensors,
                      std::span<const std::shared_ptr<device::DeviceData>> data) {
  ORDO_CHECK_LE(tensors.size(), data.size(), ": a cut gives each pending tensor its data");
  for (size_t i = 0; i < tensors.size(); ++i) {
    tensors[i]->data = data[i];
    tensors[i]->value = {};
  }
  pending_list.clear();
  cc_token = {};
  ++cuts;
}

}  // namespace ordo::lazy
