#include "lazy/tensor_impl.h"

#include "lazy/pending_list.h"

namespace ordo::lazy {

TensorImpl::~TensorImpl() {
  metrics::add(metrics::Counter::kDestroyTensor, device.index());
  if (PendingList* list = list_.load(std::memory_order_acquire)) list->remove(*this);
}

}  // namespace ordo::lazy
