// What a forked child gets: no runtime yet, and whole state to start one.
//
// A child has only the thread that called fork(); the parent's workers and
// spawn threads, and whatever locks they held, are not there. The parent's
// runtime could run nothing in the child, and shutting it down would join
// threads that do not exist (that hung ordo.shutdown() in every child of a
// busy parent). So the child starts with no runtime and leaves the
// parent's alone (nothing of it is joined or freed); its next use or
// init() starts a fresh one, of a new generation, so that the parent's
// tensors are refused there as after a shutdown. The state that outlives
// runtimes and that a child may use (the compile cache, the buffer pool,
// the pending lists, the collective timeouts) is locked around fork(), so
// that the child finds it whole, with its locks free. Data loaders fork
// beside a busy runtime, and most never use ordo: they must not hang on a
// lock either, when the parent's tensors they inherited die.
//
// Locking: fork_prepare takes the locks in this order (evicting a cached
// plan frees its buffers into the pool, so the cache comes first); none of
// them is held while another lock is taken, apart from that.
#include <pthread.h>

#include <mutex>

#include "comm/timeouts.h"
#include "device/buffer_pool.h"
#include "executor/compile_cache.h"
#include "lazy/pending_list.h"
#include "runtime/runtime.h"

namespace ordo::runtime {
namespace {

void fork_prepare() {
  executor::compile_cache().lock_for_fork();
  device::BufferPool::global().lock_for_fork();
  comm::lock_timeouts_for_fork();
  lazy::PendingList::lock_all_for_fork();
}

void unlock_after_fork(bool in_child) {
  lazy::PendingList::unlock_all_after_fork(in_child);
  comm::unlock_timeouts_after_fork();
  device::BufferPool::global().unlock_after_fork();
  executor::compile_cache().unlock_after_fork();
}

void fork_parent() { unlock_after_fork(/*in_child=*/false); }

void fork_child() {
  unlock_after_fork(/*in_child=*/true);
  forget_runtime_in_forked_child();
}

}  // namespace

void register_fork_handlers() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(&fork_prepare, &fork_parent, &fork_child); });
}

}  // namespace ordo::runtime
