#include "lazy/pending_list.h"

#include <pthread.h>

#include <deque>

#include "lazy/tensor_impl.h"

namespace ordo::lazy {

namespace {

std::mutex g_lists_mu;
// Never destroyed (see Lifetime); a deque never moves its elements.
std::deque<PendingList>* const g_lists = new std::deque<PendingList>();  // guarded by g_lists_mu

}  // namespace

PendingList& PendingList::for_device(LocalDevice device) {
  static std::once_flag once;
  std::call_once(once, [] {
    pthread_atfork(&lock_all_for_fork, [] { unlock_all_after_fork(/*in_child=*/false); },
                   [] { unlock_all_after_fork(/*in_child=*/true); });
  });
  std::lock_guard<std::mutex> lock(g_lists_mu);
  while (g_lists->size() <= device.slot()) g_lists->emplace_back();
  return (*g_lists)[device.slot()];
}

void PendingList::lock_all_for_fork() {
  g_lists_mu.lock();
  for (PendingList& list : *g_lists) list.mu_.lock();
}

void PendingList::unlock_all_after_fork(bool in_child) {
  for (PendingList& list : *g_lists) {
    list.mu_.unlock();
    if (in_child) list.clear();
  }
  g_lists_mu.unlock();
}

void PendingList::add(TensorImpl& tensor) {
  std::lock_guard<SpinLock> lock(mu_);
  if (tensor.list_.load(std::memory_order_relaxed) == this) return;
  tensor.prev_ = tail_;
  tensor.next_ = nullptr;
  (tail_ ? tail_->next_ : head_) = &tensor;
  tail_ = &tensor;
  tensor.list_.store(this, std::memory_order_release);
}

std::vector<std::shared_ptr<TensorImpl>> PendingList::pending() {
  std::vector<std::shared_ptr<TensorImpl>> pending;
  // Alive but no longer pending: released after mu_, since releasing the
  // last reference to a tensor takes mu_.
  std::vector<std::shared_ptr<TensorImpl>> not_pending;
  std::lock_guard<SpinLock> lock(mu_);
  // Room for every tensor before the first reference is taken, so that
  // nothing can throw (and release a reference under mu_) after that.
  size_t listed = 0;
  for (const TensorImpl* tensor = head_; tensor != nullptr; tensor = tensor->next_) ++listed;
  pending.reserve(listed);
  not_pending.reserve(listed);
  for (TensorImpl* tensor = head_; tensor != nullptr;) {
    TensorImpl* next = tensor->next_;
    // A tensor whose last reference is gone waits in its destructor for mu_,
    // so its memory is still there; lock() sees that it is dying.
    std::shared_ptr<TensorImpl> alive = tensor->weak_from_this().lock();
    if (alive && alive->is_pending()) {
      pending.push_back(std::move(alive));
    } else {
      unlink_locked(*tensor);
      if (alive) not_pending.push_back(std::move(alive));
    }
    tensor = next;
  }
  return pending;
}

void PendingList::clear() {
  std::lock_guard<SpinLock> lock(mu_);
  while (head_ != nullptr) unlink_locked(*head_);
}

void PendingList::remove(TensorImpl& tensor) {
  std::lock_guard<SpinLock> lock(mu_);
  // pending() or clear() may have unlinked it since the caller looked.
  if (tensor.list_.load(std::memory_order_relaxed) == this) unlink_locked(tensor);
}

void PendingList::unlink_locked(TensorImpl& tensor) {
  (tensor.prev_ ? tensor.prev_->next_ : head_) = tensor.next_;
  (tensor.next_ ? tensor.next_->prev_ : tail_) = tensor.prev_;
  tensor.prev_ = tensor.next_ = nullptr;
  tensor.list_.store(nullptr, std::memory_order_release);
}

}  // namespace ordo::lazy
