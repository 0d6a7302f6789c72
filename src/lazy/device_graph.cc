#include "lazy/device_graph.h"

#include <algorithm>

namespace ordo::lazy {

void DeviceGraph::register_pending(const std::shared_ptr<TensorImpl>& tensor) {
  if (tensor->registered) return;
  tensor->registered = true;
  live_tensors.push_back(tensor);
  if (live_tensors.size() < prune_at) return;
  std::erase_if(live_tensors, [](const std::weak_ptr<TensorImpl>& t) { return t.expired(); });
  prune_at = std::max<size_t>(1024, 2 * live_tensors.size());
}

std::vector<std::shared_ptr<TensorImpl>> DeviceGraph::pending_tensors() {
  std::vector<std::shared_ptr<TensorImpl>> pending;
  size_t kept = 0;
  for (auto& weak : live_tensors) {
    std::shared_ptr<TensorImpl> tensor = weak.lock();
    if (!tensor || !tensor->is_pending()) {
      if (tensor) tensor->registered = false;
      continue;
    }
    live_tensors[kept++] = weak;
    pending.push_back(std::move(tensor));
  }
  live_tensors.resize(kept);
  return pending;
}

std::vector<ir::Value> DeviceGraph::roots_of(
    const std::vector<std::shared_ptr<TensorImpl>>& tensors) const {
  std::vector<ir::Value> roots;
  roots.reserve(tensors.size() + 1);
  for (const auto& tensor : tensors) roots.push_back(tensor->value);
  if (cc_token.node) roots.push_back(cc_token);
  return roots;
}

}  // namespace ordo::lazy
