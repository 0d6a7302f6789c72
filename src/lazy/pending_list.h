// The tensors of one device that became pending since its last graph cut, as
// an intrusive list: a tensor links itself when it becomes pending and
// unlinks itself when it dies. A graph cut therefore visits only tensors that
// are alive, and the temporaries of a step (most of its tensors) are freed
// where they die, not in the next mark_step.
//
// Locking: mu_ guards the links of every tensor in the list. It is a leaf
// lock: nothing is freed while it is held, since freeing a TensorImpl takes
// it. Callers of add and pending also hold the device's graph mutex, which
// guards what "pending" means. Every traced op takes mu_ twice (its result
// links itself, the tensor it replaces unlinks itself) for a few
// instructions each time, so it is a SpinLock: with std::mutex tracing an
// op took 6% longer.
//
// Lifetime: tensors may die on any thread at any time, shutdown included,
// so a dying tensor must always find its list's lock alive. The lists are
// therefore never freed: for_device gives each device ordinal one list for
// the life of the process, and a runtime that shuts down only detaches its
// tensors from it.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "core/device_numbers.h"
#include "core/spin_lock.h"

namespace ordo::lazy {

class TensorImpl;

// Cache-line aligned: the lists of all devices sit side by side (see
// for_device) and are locked by different threads.
class alignas(64) PendingList {
 public:
  // The list of device, created on first use and never freed.
  static PendingList& for_device(LocalDevice device);

  PendingList() = default;
  PendingList(const PendingList&) = delete;
  PendingList& operator=(const PendingList&) = delete;

  // Links tensor if it is not listed yet.
  void add(TensorImpl& tensor);
  // The listed tensors that are alive and still pending, in the order they
  // were added; the others are unlinked.
  std::vector<std::shared_ptr<TensorImpl>> pending();
  // Unlinks every tensor (a graph cut made them all data, or their runtime
  // shuts down).
  void clear();
  // Called by a dying tensor that was listed here.
  void remove(TensorImpl& tensor);


 private:
  // Every list is held around fork() (registered by the first for_device;
  // see runtime/fork.cc), so that a child finds their links whole. The
  // child's lists start empty: the parent's pending tensors are detached,
  // and die there without touching a list.
  static void lock_all_for_fork();
  static void unlock_all_after_fork(bool in_child);
  void unlink_locked(TensorImpl& tensor);

  SpinLock mu_;
  TensorImpl* head_ = nullptr;
  TensorImpl* tail_ = nullptr;
};

}  // namespace ordo::lazy
